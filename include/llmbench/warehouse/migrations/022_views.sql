-- repeatable: re-applied whenever this file changes (llmbench.warehouse.migrate)
-- The cheapest tokens per model under the SLO, from the latest results of each configuration, on
-- each row's price basis (usd_per_m_headline: per output or per total token; rows published before
-- price_basis existed rank by usd_per_m_output_tokens), among configurations that passed the
-- quality gate or had no quality stage (fast but wrong must not win). Defined here, not in
-- 010_views.sql, because it reads columns 014_quality.sql and 016_price_basis.sql add.
CREATE OR REPLACE VIEW llmbench.v_best_under_slo AS
SELECT model, instance_type, serving_config, concurrency, arrival_rate_rps, load_mode, usd_per_m_output_tokens,
       output_tokens_per_s,
       ttft_ms_p90, tpot_ms_p90, usd_per_hour, logical_date, run_key,
       headline_basis, usd_per_m_headline, usd_per_m_total_tokens
FROM (
    SELECT pp.*,
           row_number() OVER (PARTITION BY pp.model
                              ORDER BY coalesce(pp.usd_per_m_headline, pp.usd_per_m_output_tokens)) AS rank_in_model
    FROM llmbench.price_performance pp
    JOIN (
        SELECT model, instance_type, serving_config, max(logical_date) AS logical_date
        FROM llmbench.price_performance
        GROUP BY model, instance_type, serving_config
    ) latest USING (model, instance_type, serving_config, logical_date)
    WHERE pp.meets_slo AND pp.validation_passed
      AND coalesce(pp.usd_per_m_headline, pp.usd_per_m_output_tokens) IS NOT NULL
      AND (pp.quality_passed IS NULL OR pp.quality_passed)
) ranked
WHERE rank_in_model = 1;

-- Each figure a seed article states or implies (llmbench.reference) beside what the run measured
-- or computed for the same target, column and concurrency (closed-loop levels), with the
-- difference: a mismatch (seed 000's G6e at an implied $9.31/h against the catalog's $13.12) is
-- visible, never hidden. measured is NULL where the run has no such figure (an unpriced target, a
-- column not in price_performance); a reference without a concurrency is held against the
-- target's levels' mean (usd_per_hour is the same on every level).
CREATE OR REPLACE VIEW llmbench.v_reference AS
SELECT r.run_key, r.reference_index, r.seed, r.target_id, r.metric, r.concurrency, r.unit, r.says, r.implied,
       r.value AS reference_value, m.measured,
       m.measured - r.value AS difference,
       CASE WHEN r.value <> 0 THEN m.measured / r.value - 1 END AS relative_difference
FROM llmbench.reference r
LEFT JOIN (
    -- one pass over price_performance: the column a reference names, picked per row
    SELECT rr.run_key, rr.reference_index,
           avg(CASE rr.metric
                   WHEN 'usd_per_hour' THEN pp.usd_per_hour
                   WHEN 'output_tokens_per_s' THEN pp.output_tokens_per_s
                   WHEN 'requests_per_s' THEN pp.requests_per_s
                   WHEN 'usd_per_m_output_tokens' THEN pp.usd_per_m_output_tokens
                   WHEN 'usd_per_m_total_tokens' THEN pp.usd_per_m_total_tokens
                   WHEN 'usd_per_m_headline' THEN pp.usd_per_m_headline
                   WHEN 'e2e_ms_p50' THEN pp.e2e_ms_p50
                   WHEN 'ttft_ms_p50' THEN pp.ttft_ms_p50
                   WHEN 'tpot_ms_p50' THEN pp.tpot_ms_p50
               END) AS measured
    FROM llmbench.reference rr
    JOIN llmbench.price_performance pp
      ON pp.run_key = rr.run_key AND pp.target_id = rr.target_id AND pp.arrival_rate_rps = 0
     AND (rr.concurrency IS NULL OR pp.concurrency = rr.concurrency)
    GROUP BY rr.run_key, rr.reference_index
) m ON m.run_key = r.run_key AND m.reference_index = r.reference_index;

-- v_speculative_speedup is defined in 026_views.sql (it reads 017's acceptance rate).
