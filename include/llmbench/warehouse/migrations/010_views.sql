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

-- v_best_under_slo: in 022_views.sql (it ranks on the run's price basis and reads the quality gate of 014_quality.sql).

-- v_week_over_week: in 024_views.sql (it judges only pairs of runs computed by the same code).

-- What each benchmark run cost (endpoint-seconds x $/hour, summed over its targets).
CREATE OR REPLACE VIEW llmbench.v_benchmark_cost AS
SELECT r.run_key, r.config_name, r.logical_date, r.status, r.targets_planned, r.targets_failed,
       sum(t.endpoint_seconds) / 3600 AS endpoint_hours,
       sum(t.benchmark_cost_usd) AS benchmark_cost_usd
FROM llmbench.runs r
LEFT JOIN llmbench.targets t USING (run_key)
GROUP BY r.run_key, r.config_name, r.logical_date, r.status, r.targets_planned, r.targets_failed;
