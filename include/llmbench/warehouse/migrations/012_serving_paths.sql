-- Every serving path in one run: a target is priced per hour (an instance or endpoint), per token
-- (a per-token API such as Bedrock) or not at all (an endpoint you run, given no price). Price
-- figures of the latter two are NULL where they have no meaning, so usd_per_hour may be NULL now.
-- (Redshift cannot drop NOT NULL in place; llmbench's Redshift dialect is tested on PostgreSQL.)
ALTER TABLE llmbench.targets ALTER COLUMN usd_per_hour DROP NOT NULL;
ALTER TABLE llmbench.price_performance ALTER COLUMN usd_per_hour DROP NOT NULL;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS price_basis VARCHAR;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS usd_per_m_input_tokens_list DOUBLE;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS usd_per_m_output_tokens_list DOUBLE;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS price_note VARCHAR;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS plan_warnings VARCHAR;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS backend VARCHAR;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS price_basis VARCHAR;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS price_note VARCHAR;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS input_tokens_per_output_token DOUBLE;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS usd_per_m_output_tokens_with_input DOUBLE;
COMMENT ON COLUMN llmbench.targets.price_basis IS 'per_hour (instance or endpoint), per_token (a per-token API) or none (no price given: price figures NULL)';
COMMENT ON COLUMN llmbench.targets.usd_per_m_input_tokens_list IS 'per-token API: list price per million input tokens, frozen at plan time';
COMMENT ON COLUMN llmbench.targets.usd_per_m_output_tokens_list IS 'per-token API: list price per million output tokens, frozen at plan time';
COMMENT ON COLUMN llmbench.targets.price_note IS 'why a target has no price (price_basis none)';
COMMENT ON COLUMN llmbench.targets.plan_warnings IS 'plan-time warnings about this target, e.g. a precision widened rather than native';
COMMENT ON COLUMN llmbench.price_performance.input_tokens_per_output_token IS 'the level''s measured mean input tokens / mean output tokens';
COMMENT ON COLUMN llmbench.price_performance.usd_per_m_output_tokens_with_input IS 'a million output tokens with the input tokens that came with them: per hour = usd_per_m_output_tokens; per token = out + k x in';
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS per_token_target_id VARCHAR;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS break_even_output_tokens_per_s_vs_per_token DOUBLE;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS beats_per_token BOOLEAN;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS managed_overhead_ttft_ms_p50 DOUBLE;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS managed_overhead_e2e_ms_p50 DOUBLE;
COMMENT ON COLUMN llmbench.price_performance.per_token_target_id IS 'the per-token target of the run that is cheapest at this level''s input:output ratio';
COMMENT ON COLUMN llmbench.price_performance.break_even_output_tokens_per_s_vs_per_token IS 'output tok/s this hourly path must sustain 24x7 to cost no more than per_token_target_id, at this level''s input:output ratio';
COMMENT ON COLUMN llmbench.price_performance.managed_overhead_ttft_ms_p50 IS 'SageMaker rows: TTFT p50 minus that of the same instance type on EC2 (same model, level, run)';
COMMENT ON COLUMN llmbench.price_performance.managed_overhead_e2e_ms_p50 IS 'SageMaker rows: e2e p50 minus that of the same instance type on EC2 (same model, level, run)';

-- Every hourly level of a run against every per-token target of the same run.
CREATE TABLE IF NOT EXISTS llmbench.break_even (
    run_key VARCHAR NOT NULL,
    target_id VARCHAR NOT NULL,
    concurrency INTEGER NOT NULL,
    arrival_rate_rps DOUBLE NOT NULL,
    per_token_target_id VARCHAR NOT NULL,
    input_tokens_per_output_token DOUBLE,
    break_even_output_tokens_per_s DOUBLE,
    beats_per_token BOOLEAN,
    PRIMARY KEY (run_key, target_id, concurrency, arrival_rate_rps, per_token_target_id)
);
COMMENT ON COLUMN llmbench.break_even.break_even_output_tokens_per_s IS 'output tok/s the hourly target must sustain 24x7 to cost no more than per_token_target_id at input_tokens_per_output_token';
