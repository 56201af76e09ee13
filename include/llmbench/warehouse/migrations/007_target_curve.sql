-- Per target, over its levels (metrics.knee_concurrency, metrics.latency_degradation).
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS knee_concurrency INTEGER;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS e2e_ms_p50_degradation DOUBLE;
COMMENT ON COLUMN llmbench.targets.knee_concurrency IS 'the lowest concurrency reaching 90 % of the target''s best output tok/s: beyond it, concurrency buys mostly latency';
COMMENT ON COLUMN llmbench.targets.e2e_ms_p50_degradation IS 'e2e p50 at the highest concurrency / at the lowest - 1 (0.5 = 50 % slower; seed 002''s table)';
