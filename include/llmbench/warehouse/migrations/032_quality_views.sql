-- repeatable: re-applied whenever this file changes (llmbench.warehouse.migrate)
-- Re-created after 032_quality_scores.sql so that PostgreSQL's SELECT * (frozen when a view is
-- created) takes in price_performance's quality interval, beside $/M.
CREATE OR REPLACE VIEW llmbench.v_latest_price_performance AS
SELECT pp.*
FROM llmbench.price_performance pp
JOIN (
    SELECT model, instance_type, serving_config, max(logical_date) AS logical_date
    FROM llmbench.price_performance
    GROUP BY model, instance_type, serving_config
) latest USING (model, instance_type, serving_config, logical_date);
