-- repeatable: re-applied whenever this file changes (llmbench.warehouse.migrate)
-- The traffic profile's answer for BI (issue 29): the figures are computed in Python
-- (llmbench.analysis.costmodel); these views choose.

-- The cheapest path meeting the SLO per run, profile and month, with the runner-up and the margin.
CREATE OR REPLACE VIEW llmbench.v_cheapest_path_per_profile AS
SELECT c.run_key, c.profile, c.month, c.path, c.backend, c.price_basis, c.monthly_usd, c.usd_per_m_output_paid,
       c.mean_utilisation, r.path AS runner_up_path, r.monthly_usd AS runner_up_monthly_usd, c.margin_usd
FROM llmbench.traffic_cost c
LEFT JOIN llmbench.traffic_cost r
  ON r.run_key = c.run_key AND r.profile = c.profile AND r.month = c.month AND r.runner_up
WHERE c.cheapest;

-- Each hourly path's break-even daily volume against the cheapest per-token path, beside its cost.
CREATE OR REPLACE VIEW llmbench.v_traffic_break_even AS
SELECT run_key, profile, month, path, backend, capacity_rps, monthly_usd, break_even_daily_output_tokens
FROM llmbench.traffic_cost
WHERE price_basis = 'per_hour';
