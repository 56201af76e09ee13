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

-- v_best_under_slo, which also excludes targets that failed the quality gate: 015_views.sql (it
-- reads 015_price_basis.sql's columns too, and sorts after both).

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

