-- repeatable: re-applied whenever this file changes (llmbench.warehouse.migrate)
-- The comparison a user comes for: every serving path of a run side by side. The figures are
-- computed once, in Python (llmbench.results.tables.compare_paths, llmbench.analysis.pricing); these views only
-- choose columns.

-- v_path_comparison, v_path_at_slo, v_break_even: in 028_views.sql (they read the workload columns 027_comparison.sql adds).

-- What the managed path adds: a SageMaker endpoint against the same instance type on EC2.
CREATE OR REPLACE VIEW llmbench.v_managed_overhead AS
SELECT run_key, model, instance_type, concurrency, arrival_rate_rps, target_id,
       managed_overhead_ttft_ms_p50, managed_overhead_e2e_ms_p50, usd_per_m_output_tokens
FROM llmbench.price_performance
WHERE managed_overhead_ttft_ms_p50 IS NOT NULL OR managed_overhead_e2e_ms_p50 IS NOT NULL;
