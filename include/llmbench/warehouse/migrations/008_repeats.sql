-- Repeated runs of a level and their 95 % confidence intervals (metrics.confidence_interval).
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS repeats INTEGER;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS output_tokens_per_s_ci95_low DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS output_tokens_per_s_ci95_high DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS ttft_ms_p50_ci95_low DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS ttft_ms_p50_ci95_high DOUBLE;
ALTER TABLE llmbench.requests ADD COLUMN IF NOT EXISTS "repeat" INTEGER;
COMMENT ON COLUMN llmbench.levels.output_tokens_per_s_ci95_low IS '95 % confidence interval (Student''s t) of output tok/s over the level''s repeats';
