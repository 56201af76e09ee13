-- Settings the views read, owned by whoever runs the dashboards:
--   UPDATE llmbench.settings SET value = 0.05 WHERE name = 'regression_threshold';
CREATE TABLE IF NOT EXISTS llmbench.settings (
    name VARCHAR PRIMARY KEY,
    value DOUBLE NOT NULL,
    description VARCHAR
);
INSERT INTO llmbench.settings
SELECT 'regression_threshold', 0.10,
       'v_week_over_week: a fall in output tok/s or a rise in $/M output tokens beyond this fraction is a regression'
WHERE NOT EXISTS (SELECT 1 FROM llmbench.settings WHERE name = 'regression_threshold');
