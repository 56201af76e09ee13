-- Client health per level (issue: a load generator that is provably not the bottleneck).
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS client_saturated BOOLEAN;
COMMENT ON COLUMN llmbench.levels.client_saturated IS 'the load generator could not keep up (client CPU >= 70 % of the cores it may use, or send lag p99 > 10 ms): the level measured the client; validation fails it';
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS client_processes INTEGER;
COMMENT ON COLUMN llmbench.levels.client_processes IS 'load-generator processes that drove the level (each its own event loop and core)';
