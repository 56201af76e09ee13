-- The comparison a user comes for, per model and workload (issue 14): what each price row was
-- measured with, and on each break_even row what the per-token path costs at that row's ratio.
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS workload_label VARCHAR;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS workload_input_tokens DOUBLE;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS workload_output_tokens DOUBLE;
ALTER TABLE llmbench.break_even ADD COLUMN IF NOT EXISTS per_token_usd_per_m_output_tokens_with_input DOUBLE;
COMMENT ON COLUMN llmbench.price_performance.workload_label IS 'the workload: planned mean input (shared prefix included) and output tokens per request, and its preset if one';
COMMENT ON COLUMN llmbench.price_performance.workload_input_tokens IS 'planned mean input tokens per request, the shared prefix included (the measured ratio: input_tokens_per_output_token)';
COMMENT ON COLUMN llmbench.price_performance.workload_output_tokens IS 'planned mean output tokens per request';
COMMENT ON COLUMN llmbench.break_even.per_token_usd_per_m_output_tokens_with_input IS 'what per_token_target_id costs per million output tokens with their input at input_tokens_per_output_token';
