-- Tokens per chunk (issue 27 item 4): with speculative decoding, or an engine that batches its
-- output, one streamed chunk carries k tokens, so the gap between chunks is not the inter-token
-- latency. Each request keeps the tokens of every chunk (from the engine's per-chunk usage, else
-- one per content chunk); a level reports the inter-chunk gap (chunk_gap_ms_*) and the per-token
-- ITL (itl_ms_*: each gap / k, once per token) separately (analysis.metrics.per_token_itl_ms).
ALTER TABLE llmbench.requests ADD COLUMN IF NOT EXISTS chunk_tokens INTEGER[];
ALTER TABLE llmbench.requests ADD COLUMN IF NOT EXISTS chunk_tokens_source VARCHAR;
COMMENT ON COLUMN llmbench.requests.chunk_tokens IS 'tokens each chunk behind itl_ms carried, the first chunk included (len(itl_ms) + 1); empty or NULL: one each (a record from before)';
COMMENT ON COLUMN llmbench.requests.chunk_tokens_source IS 'how chunk_tokens was counted: usage (increase of the cumulative usage.completion_tokens each chunk carried, stream_options.continuous_usage_stats) or content (no per-chunk usage: one token per non-empty content chunk)';
COMMENT ON COLUMN llmbench.requests.itl_ms IS 'every gap between consecutive chunks that carried tokens (the inter-chunk gap; per-token ITL divides each by the tokens of the chunk that ended it, chunk_tokens), ms';
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS chunk_gap_ms_p50 DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS chunk_gap_ms_p90 DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS chunk_gap_ms_p95 DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS chunk_gap_ms_p99 DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS chunk_gap_ms_mean DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS chunk_gap_ms_min DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS chunk_gap_ms_max DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS tokens_per_chunk_mean DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS tokens_per_chunk_max INTEGER;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS multi_token_chunk_frac DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS chunk_tokens_source VARCHAR;
COMMENT ON COLUMN llmbench.levels.chunk_gap_ms_p50 IS 'inter-chunk gap, ms, p50: gaps between consecutive token-carrying chunks of successful requests (a chunk may carry several tokens)';
COMMENT ON COLUMN llmbench.levels.chunk_gap_ms_p90 IS 'inter-chunk gap, ms, p90';
COMMENT ON COLUMN llmbench.levels.chunk_gap_ms_p95 IS 'inter-chunk gap, ms, p95';
COMMENT ON COLUMN llmbench.levels.chunk_gap_ms_p99 IS 'inter-chunk gap, ms, p99';
COMMENT ON COLUMN llmbench.levels.chunk_gap_ms_mean IS 'inter-chunk gap, ms, mean';
COMMENT ON COLUMN llmbench.levels.chunk_gap_ms_min IS 'inter-chunk gap, ms, min';
COMMENT ON COLUMN llmbench.levels.chunk_gap_ms_max IS 'inter-chunk gap, ms, max';
COMMENT ON COLUMN llmbench.levels.itl_ms_mean IS 'per-token inter-token latency, ms, mean: each inter-chunk gap divided by the tokens of the chunk that ended it, one sample per token (equal to the chunk gap when every chunk carries one token)';
COMMENT ON COLUMN llmbench.levels.tokens_per_chunk_mean IS 'mean tokens per token-carrying chunk over the level''s successful requests (1: one token a chunk; more: speculation or batched output)';
COMMENT ON COLUMN llmbench.levels.tokens_per_chunk_max IS 'most tokens one chunk carried in the level';
COMMENT ON COLUMN llmbench.levels.multi_token_chunk_frac IS 'fraction of the level''s token-carrying chunks that carried more than one token';
COMMENT ON COLUMN llmbench.levels.chunk_tokens_source IS 'how tokens per chunk were counted in the level: usage (per-chunk usage), content (one per content chunk: the server gave no per-chunk usage), mixed';
