-- What the server says about each level (issue 27): vLLM's /metrics, read just before and after the
-- level and about twice a second while it runs (backends.servermetrics.LevelSampler,
-- analysis.metrics.server_metrics_level). NULL, with the reason in server_metrics_note, on a path
-- without vLLM's metrics page (llama-server, SageMaker, Bedrock).
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS server_requests_running_mean DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS server_requests_running_max DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS server_requests_waiting_mean DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS server_requests_waiting_max DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS server_kv_cache_usage_frac_mean DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS server_kv_cache_usage_frac_max DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS prefix_cache_hit_rate DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS prefix_cache_hits_tokens DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS prompt_tokens_cached DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS server_queue_time_ms_mean DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS server_metrics_samples INTEGER;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS server_metrics_note VARCHAR;
COMMENT ON COLUMN llmbench.levels.server_requests_running_mean IS 'mean of vLLM''s vllm:num_requests_running over the readings taken during the level (about two a second, plus one just before and after)';
COMMENT ON COLUMN llmbench.levels.server_requests_running_max IS 'max of vllm:num_requests_running over the level''s readings';
COMMENT ON COLUMN llmbench.levels.server_requests_waiting_mean IS 'mean of vllm:num_requests_waiting (queued in the server) over the level''s readings';
COMMENT ON COLUMN llmbench.levels.server_requests_waiting_max IS 'max of vllm:num_requests_waiting over the level''s readings';
COMMENT ON COLUMN llmbench.levels.server_kv_cache_usage_frac_mean IS 'mean of vllm:kv_cache_usage_perc (a fraction of the KV cache in use, 0 to 1) over the level''s readings';
COMMENT ON COLUMN llmbench.levels.server_kv_cache_usage_frac_max IS 'max of vllm:kv_cache_usage_perc over the level''s readings';
COMMENT ON COLUMN llmbench.levels.prefix_cache_hit_rate IS 'increase of vllm:prefix_cache_hits_total / increase of vllm:prefix_cache_queries_total over the level (tokens found in the prefix cache / tokens looked up); NULL without lookups';
COMMENT ON COLUMN llmbench.levels.prefix_cache_hits_tokens IS 'increase of vllm:prefix_cache_hits_total over the level: prompt tokens the prefix cache had (whole blocks only)';
COMMENT ON COLUMN llmbench.levels.prompt_tokens_cached IS 'increase of vllm:prompt_tokens_cached_total over the level: prompt tokens served from cache, not computed; NULL on a vLLM without that counter';
COMMENT ON COLUMN llmbench.levels.server_queue_time_ms_mean IS 'mean time in vLLM''s waiting queue of the requests that left it during the level (vllm:request_queue_time_seconds sum / count increases), ms';
COMMENT ON COLUMN llmbench.levels.server_metrics_samples IS 'readings of the server''s /metrics behind the server_* columns (0: none)';
COMMENT ON COLUMN llmbench.levels.server_metrics_note IS 'why the server_* and prefix_cache_* columns are NULL (no vLLM /metrics on the path, no answer, counters that went backwards)';
