-- repeatable: re-applied whenever this file changes (llmbench.warehouse.migrate)
-- The views that read the quality columns (014_quality.sql), so they sort after it.

-- Re-created so that PostgreSQL's SELECT * takes in the columns added since 010_views.sql.
CREATE OR REPLACE VIEW llmbench.v_latest_price_performance AS
SELECT pp.*
FROM llmbench.price_performance pp
JOIN (
    SELECT model, instance_type, serving_config, max(logical_date) AS logical_date
    FROM llmbench.price_performance
    GROUP BY model, instance_type, serving_config
) latest USING (model, instance_type, serving_config, logical_date);

-- The cheapest tokens per model under the SLO, from the latest results of each configuration, among
-- configurations that passed the quality gate or had no quality stage.
CREATE OR REPLACE VIEW llmbench.v_best_under_slo AS
SELECT model, instance_type, serving_config, concurrency, arrival_rate_rps, load_mode, usd_per_m_output_tokens,
       output_tokens_per_s,
       ttft_ms_p90, tpot_ms_p90, usd_per_hour, logical_date, run_key
FROM (
    SELECT v.*, row_number() OVER (PARTITION BY model ORDER BY usd_per_m_output_tokens) AS rank_in_model
    FROM llmbench.v_latest_price_performance v
    WHERE meets_slo AND validation_passed AND usd_per_m_output_tokens IS NOT NULL
      AND (quality_passed IS NULL OR quality_passed)  -- fast but wrong must not win
) ranked
WHERE rank_in_model = 1;

-- One row per path (target) and level of each run: what a million output tokens cost with their
-- input (comparable across hourly and per-token paths), the 24x7 month, the SLO, and the output
-- tok/s the path must sustain around the clock to cost no more than the run's cheapest per-token path.
CREATE OR REPLACE VIEW llmbench.v_path_comparison AS
SELECT run_key, logical_date, model, backend, instance_type, serving_config, target_id,
       concurrency, arrival_rate_rps, load_mode, price_basis, usd_per_hour,
       output_tokens_per_s, ttft_ms_p50, ttft_ms_p90, tpot_ms_p50, e2e_ms_p50, error_rate,
       meets_slo, validation_passed,
       usd_per_m_output_tokens, usd_per_m_output_tokens_with_input, usd_per_m_total_tokens,
       monthly_usd, price_note, per_token_target_id, break_even_output_tokens_per_s_vs_per_token, beats_per_token,
       quality_score, quality_passed
FROM llmbench.price_performance;

