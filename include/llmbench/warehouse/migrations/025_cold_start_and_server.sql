-- Seed 003's methodology and what the server says, finishing issue 15: the per-level warm-up
-- (workload.warmup_each_level), cold start per target, speculative decoding's acceptance rate per
-- level (vLLM's Prometheus counters, read before and after each level), and the engine version
-- and model revision beside the provenance of 015_provenance.sql.
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS level_warmup_requests INTEGER;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS spec_decode_draft_tokens DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS spec_decode_accepted_tokens DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS spec_decode_acceptance_rate DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS spec_decode_note VARCHAR;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS spec_decode_acceptance_rate DOUBLE;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS time_to_ready_s DOUBLE;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS first_request_ttft_ms DOUBLE;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS engine_version VARCHAR;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS engine_version_source VARCHAR;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS model_revision VARCHAR;
COMMENT ON COLUMN llmbench.levels.level_warmup_requests IS 'warm-up requests sent at this level''s concurrency just before it (workload.warmup_each_level x concurrency; kept in warmup.jsonl, in none of the level''s metrics); NULL: not known (a rebuilt level)';
COMMENT ON COLUMN llmbench.levels.spec_decode_draft_tokens IS 'increase of vLLM''s vllm:spec_decode_num_draft_tokens_total over the level';
COMMENT ON COLUMN llmbench.levels.spec_decode_accepted_tokens IS 'increase of vLLM''s vllm:spec_decode_num_accepted_tokens_total over the level';
COMMENT ON COLUMN llmbench.levels.spec_decode_acceptance_rate IS 'accepted / draft tokens over the level (speculative decoding); NULL with the reason in spec_decode_note';
COMMENT ON COLUMN llmbench.levels.spec_decode_note IS 'why spec_decode_acceptance_rate is NULL (no /metrics on the path, no such counters, no draft tokens)';
COMMENT ON COLUMN llmbench.price_performance.spec_decode_acceptance_rate IS 'the level''s speculative-decoding acceptance rate (levels.spec_decode_acceptance_rate)';
COMMENT ON COLUMN llmbench.targets.time_to_ready_s IS 'cold start: seconds from the deploy''s create call to the first readiness look that found it ready; NULL where deploy creates nothing (openai, bedrock)';
COMMENT ON COLUMN llmbench.targets.first_request_ttft_ms IS 'TTFT of the first request the target served (its first warm-up request), cold; NULL if it failed';
COMMENT ON COLUMN llmbench.targets.engine_version IS 'the engine version the ready server reported (vLLM GET /version, llama-server /props build_info); NULL if it did not say';
COMMENT ON COLUMN llmbench.targets.engine_version_source IS 'what was asked for engine_version, or why nothing could be';
COMMENT ON COLUMN llmbench.targets.model_revision IS 'the model revision the server was told to load (catalog hf_revision, vLLM on ec2/sagemaker); NULL: unknown';
