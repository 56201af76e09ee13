-- Seed 003's knee beside the throughput knee: the level past which latency grows faster than throughput.
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS latency_knee_concurrency INTEGER;
COMMENT ON COLUMN llmbench.targets.latency_knee_concurrency IS 'the concurrency past which e2e p90 latency grows faster than output tok/s (seed 003''s knee)';
