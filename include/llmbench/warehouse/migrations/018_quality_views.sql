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

-- v_best_under_slo, which also excludes targets that failed the quality gate: 022_views.sql (it
-- reads 016_price_basis.sql's columns too, and sorts after both).

-- v_path_comparison: in 028_views.sql (it carries the workload columns 027_comparison.sql adds).
