-- repeatable: re-applied whenever this file changes (llmbench.warehouse.migrate)
-- BI views. Every view reads only published rows; "latest" means the latest logical date.

-- Latest price-performance per model x instance type x serving configuration, every level.
CREATE OR REPLACE VIEW llmbench.v_latest_price_performance AS
SELECT pp.*
FROM llmbench.price_performance pp
JOIN (
    SELECT model, instance_type, serving_config, max(logical_date) AS logical_date
    FROM llmbench.price_performance
    GROUP BY model, instance_type, serving_config
) latest USING (model, instance_type, serving_config, logical_date);

-- v_best_under_slo: in 015_views.sql (it ranks on the run's price basis and reads the quality gate of 014_quality.sql).

-- Week-over-week change per target and level (concurrency, arrival rate): each run against the previous run of the
-- same target (same config name). A regression is throughput down, or $/M up, by more than the
-- setting regression_threshold (llmbench.settings, default 10 %).
CREATE OR REPLACE VIEW llmbench.v_week_over_week AS
SELECT run_key, target_id, concurrency, arrival_rate_rps, logical_date, previous_logical_date,
       output_tokens_per_s, previous_output_tokens_per_s,
       output_tokens_per_s / previous_output_tokens_per_s - 1 AS output_tokens_per_s_change,
       usd_per_m_output_tokens, previous_usd_per_m_output_tokens,
       usd_per_m_output_tokens / previous_usd_per_m_output_tokens - 1 AS usd_per_m_output_tokens_change,
       (output_tokens_per_s / previous_output_tokens_per_s - 1 < -s.value
        OR usd_per_m_output_tokens / previous_usd_per_m_output_tokens - 1 > s.value) AS regression,
       s.value AS regression_threshold
FROM (
    SELECT pp.*,
           -- the same window three times: Redshift has no WINDOW clause
           lag(logical_date) OVER (PARTITION BY target_id, instance_type, serving_config, concurrency, arrival_rate_rps
                                   ORDER BY logical_date) AS previous_logical_date,
           lag(output_tokens_per_s) OVER (PARTITION BY target_id, instance_type, serving_config, concurrency, arrival_rate_rps
                                          ORDER BY logical_date) AS previous_output_tokens_per_s,
           lag(usd_per_m_output_tokens) OVER (PARTITION BY target_id, instance_type, serving_config, concurrency, arrival_rate_rps
                                              ORDER BY logical_date) AS previous_usd_per_m_output_tokens
    FROM llmbench.price_performance pp
) t
CROSS JOIN (SELECT value FROM llmbench.settings WHERE name = 'regression_threshold') s
WHERE previous_logical_date IS NOT NULL;

-- What each benchmark run cost (endpoint-seconds x $/hour, summed over its targets).
CREATE OR REPLACE VIEW llmbench.v_benchmark_cost AS
SELECT r.run_key, r.config_name, r.logical_date, r.status, r.targets_planned, r.targets_failed,
       sum(t.endpoint_seconds) / 3600 AS endpoint_hours,
       sum(t.benchmark_cost_usd) AS benchmark_cost_usd
FROM llmbench.runs r
LEFT JOIN llmbench.targets t USING (run_key)
GROUP BY r.run_key, r.config_name, r.logical_date, r.status, r.targets_planned, r.targets_failed;
