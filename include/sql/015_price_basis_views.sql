-- repeatable: re-applied whenever this file changes (llmbench.warehouse.migrate)
-- The cheapest tokens per model under the SLO, from the latest results of each configuration, on
-- each row's price basis (usd_per_m_headline: per output or per total token; rows published before
-- price_basis existed rank by usd_per_m_output_tokens). Defined here, not in 010_views.sql, because
-- it reads columns 015_price_basis.sql adds.
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
) ranked
WHERE rank_in_model = 1;
