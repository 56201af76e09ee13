-- The roofline as seed 001 computes it: the GB of weights read per generated token it divides the
-- bandwidth by, and why a level beat it (efficiency above 1: speculative decoding, weights the
-- catalog counts that a token does not read, prefix caching).
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS weight_gb_per_token DOUBLE;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS roofline_note VARCHAR;
COMMENT ON COLUMN llmbench.price_performance.weight_gb_per_token IS 'GB of weights one decode step reads per token: the catalog''s stated size (GiB x 1.0737) or active params x bytes per param';
COMMENT ON COLUMN llmbench.price_performance.roofline_tokens_per_s IS 'single-stream decode ceiling: memory bandwidth x tensor-parallel degree / weight_gb_per_token';
COMMENT ON COLUMN llmbench.price_performance.roofline_note IS 'where roofline_efficiency > 1: its likely cause (speculative decoding, weights not read per token, prefix caching)';
