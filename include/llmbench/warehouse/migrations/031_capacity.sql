-- Issue 29: SLOs the user defines and goodput on every level and price row, the capacity search's
-- result per target (capacity) and what a traffic profile costs on each path (traffic_cost).
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS goodput_output_tokens_per_s DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS slo_latency_met BOOLEAN;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS capacity_probe INTEGER;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS slo VARCHAR;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS goodput_rps DOUBLE;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS goodput_output_tokens_per_s DOUBLE;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS usd_per_m_goodput_output_tokens DOUBLE;
COMMENT ON COLUMN llmbench.levels.goodput_rps IS 'requests per second that met every objective of the SLO (DistServe / vLLM goodput); NULL without an SLO (a rebuilt level)';
COMMENT ON COLUMN llmbench.levels.goodput_output_tokens_per_s IS 'output tokens per second of the requests that met every objective of the SLO';
COMMENT ON COLUMN llmbench.levels.slo_latency_met IS 'the level''s own percentiles meet every objective of the SLO (the error bound is applied in price_performance.meets_slo); NULL: no request succeeded or no SLO';
COMMENT ON COLUMN llmbench.levels.capacity_probe IS 'the probe number (1, 2, ...) when the capacity search measured this level; NULL for a level of the sweep';
COMMENT ON COLUMN llmbench.price_performance.slo IS 'the SLO the level was judged by, e.g. ttft p99 <= 500 ms; tpot p90 <= 50 ms';
COMMENT ON COLUMN llmbench.price_performance.goodput_rps IS 'requests per second that met every objective of the SLO';
COMMENT ON COLUMN llmbench.price_performance.goodput_output_tokens_per_s IS 'output tokens per second of the requests that met every objective of the SLO';
COMMENT ON COLUMN llmbench.price_performance.usd_per_m_goodput_output_tokens IS '$ per million output tokens at the SLO: per hour, usd_per_hour over goodput tokens; per token, the price with input x all output / goodput tokens';

CREATE TABLE IF NOT EXISTS llmbench.capacity (
    run_key VARCHAR NOT NULL,
    target_id VARCHAR NOT NULL,
    status VARCHAR NOT NULL,
    capacity_rps DOUBLE,
    capacity_output_tokens_per_s DOUBLE,
    capacity_output_tokens_per_s_ci95_low DOUBLE,
    capacity_output_tokens_per_s_ci95_high DOUBLE,
    bracket_pass_rps DOUBLE,
    bracket_fail_rps DOUBLE,
    rel_tolerance DOUBLE NOT NULL,
    probes INTEGER NOT NULL,
    search_s DOUBLE NOT NULL,
    slo VARCHAR NOT NULL,
    note VARCHAR,
    PRIMARY KEY (run_key, target_id)
);
COMMENT ON TABLE llmbench.capacity IS 'per target, the highest arrival rate at which the SLO holds, found by the capacity search (grow, then bisect)';
COMMENT ON COLUMN llmbench.capacity.run_key IS 'the run';
COMMENT ON COLUMN llmbench.capacity.target_id IS 'the target searched';
COMMENT ON COLUMN llmbench.capacity.status IS 'found | bracket_wider_than_tolerance | above_highest_probe | below_lowest_probe | client_saturated';
COMMENT ON COLUMN llmbench.capacity.capacity_rps IS 'capacity at the SLO in requests/s: the highest passing probe, when a failing one lies within rel_tolerance above it (or the budget ended with both); NULL when not found';
COMMENT ON COLUMN llmbench.capacity.capacity_output_tokens_per_s IS 'output tok/s measured at the capacity probe';
COMMENT ON COLUMN llmbench.capacity.capacity_output_tokens_per_s_ci95_low IS '95 % confidence interval of that figure over the probe''s repeats (NULL with one repeat)';
COMMENT ON COLUMN llmbench.capacity.capacity_output_tokens_per_s_ci95_high IS 'upper end of that interval';
COMMENT ON COLUMN llmbench.capacity.bracket_pass_rps IS 'the highest arrival rate whose probe met the SLO (NULL: none did)';
COMMENT ON COLUMN llmbench.capacity.bracket_fail_rps IS 'the lowest arrival rate whose probe missed it (NULL: none did)';
COMMENT ON COLUMN llmbench.capacity.rel_tolerance IS 'the search stops when (fail - pass) / pass is at most this';
COMMENT ON COLUMN llmbench.capacity.probes IS 'levels the search measured';
COMMENT ON COLUMN llmbench.capacity.search_s IS 'seconds the search spent measuring';
COMMENT ON COLUMN llmbench.capacity.slo IS 'the SLO searched for';
COMMENT ON COLUMN llmbench.capacity.note IS 'why the search stopped where it did';

CREATE TABLE IF NOT EXISTS llmbench.traffic_cost (
    run_key VARCHAR NOT NULL,
    profile VARCHAR NOT NULL,
    month INTEGER NOT NULL,
    path VARCHAR NOT NULL,
    backend VARCHAR NOT NULL,
    price_basis VARCHAR NOT NULL,
    capacity_rps DOUBLE,
    monthly_usd DOUBLE,
    usd_per_m_output_paid DOUBLE,
    mean_utilisation DOUBLE,
    instance_hours DOUBLE,
    peak_instances INTEGER,
    capacity_miss_hours DOUBLE NOT NULL,
    scale_up_miss_hours DOUBLE NOT NULL,
    meets_slo BOOLEAN NOT NULL,
    cheapest BOOLEAN NOT NULL,
    runner_up BOOLEAN NOT NULL,
    margin_usd DOUBLE,
    break_even_daily_output_tokens DOUBLE,
    note VARCHAR,
    PRIMARY KEY (run_key, profile, month, path)
);
COMMENT ON TABLE llmbench.traffic_cost IS 'what the config''s traffic profile costs on each path at the SLO, per month (llmbench.analysis.costmodel)';
COMMENT ON COLUMN llmbench.traffic_cost.run_key IS 'the run whose capacities and prices were used';
COMMENT ON COLUMN llmbench.traffic_cost.profile IS 'the traffic profile''s name';
COMMENT ON COLUMN llmbench.traffic_cost.month IS '1: as profiled; later months carry monthly_growth';
COMMENT ON COLUMN llmbench.traffic_cost.path IS 'the target id of the path';
COMMENT ON COLUMN llmbench.traffic_cost.backend IS 'the path''s backend';
COMMENT ON COLUMN llmbench.traffic_cost.price_basis IS 'per_hour | per_token';
COMMENT ON COLUMN llmbench.traffic_cost.capacity_rps IS 'requests/s one instance serves at the SLO (capacity search, else the fastest level meeting the SLO); NULL per token';
COMMENT ON COLUMN llmbench.traffic_cost.monthly_usd IS 'the month''s cost of serving the profile (730 hours); NULL: the path has no capacity at the SLO';
COMMENT ON COLUMN llmbench.traffic_cost.usd_per_m_output_paid IS 'monthly_usd per million output tokens served';
COMMENT ON COLUMN llmbench.traffic_cost.mean_utilisation IS 'served load / (instance-hours x capacity); NULL per token';
COMMENT ON COLUMN llmbench.traffic_cost.instance_hours IS 'instance-hours in the month';
COMMENT ON COLUMN llmbench.traffic_cost.peak_instances IS 'most instances running in any hour';
COMMENT ON COLUMN llmbench.traffic_cost.capacity_miss_hours IS 'hours in the month whose load needs more instances than the policy may run';
COMMENT ON COLUMN llmbench.traffic_cost.scale_up_miss_hours IS 'hours in the month spent waiting for added instances (scale-up delay + measured cold start)';
COMMENT ON COLUMN llmbench.traffic_cost.meets_slo IS 'no capacity miss (and scale-up misses within the profile''s max_scale_up_miss_hours, if set)';
COMMENT ON COLUMN llmbench.traffic_cost.cheapest IS 'the cheapest path meeting the SLO for this profile and month';
COMMENT ON COLUMN llmbench.traffic_cost.runner_up IS 'the second cheapest path meeting the SLO';
COMMENT ON COLUMN llmbench.traffic_cost.margin_usd IS 'on the cheapest row: the runner-up''s monthly_usd minus its own';
COMMENT ON COLUMN llmbench.traffic_cost.break_even_daily_output_tokens IS 'on an hourly row: the lowest daily output-token volume (the profile''s shape scaled) at which it costs the same as the cheapest per-token path; NULL: none in range';
COMMENT ON COLUMN llmbench.traffic_cost.note IS 'why a path misses the SLO or has no cost';
