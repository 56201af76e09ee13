-- repeatable: re-applied whenever this file changes (llmbench.warehouse.migrate)
-- The comparison a user comes for: every serving path of a run side by side. The figures are
-- computed once, in Python (llmbench.tables.compare_paths, llmbench.pricing); these views only
-- choose columns.

-- One row per path (target) and level of each run: what a million output tokens cost with their
-- input (comparable across hourly and per-token paths), the 24x7 month, the SLO, and the output
-- tok/s the path must sustain around the clock to cost no more than the run's cheapest per-token path.
CREATE OR REPLACE VIEW llmbench.v_path_comparison AS
SELECT run_key, logical_date, model, backend, instance_type, serving_config, target_id,
       concurrency, arrival_rate_rps, load_mode, price_basis, usd_per_hour,
       output_tokens_per_s, ttft_ms_p50, ttft_ms_p90, tpot_ms_p50, e2e_ms_p50, error_rate,
       meets_slo, validation_passed,
       usd_per_m_output_tokens, usd_per_m_output_tokens_with_input, usd_per_m_total_tokens,
       monthly_usd, price_note, per_token_target_id, break_even_output_tokens_per_s_vs_per_token, beats_per_token
FROM llmbench.price_performance;

-- What the managed path adds: a SageMaker endpoint against the same instance type on EC2.
CREATE OR REPLACE VIEW llmbench.v_managed_overhead AS
SELECT run_key, model, instance_type, concurrency, arrival_rate_rps, target_id,
       managed_overhead_ttft_ms_p50, managed_overhead_e2e_ms_p50, usd_per_m_output_tokens
FROM llmbench.price_performance
WHERE managed_overhead_ttft_ms_p50 IS NOT NULL OR managed_overhead_e2e_ms_p50 IS NOT NULL;
