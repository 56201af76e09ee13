-- The level without its ramp-up and tail (metrics.steady_state), and timed levels.
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS steady_window_s DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS steady_requests INTEGER;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS steady_output_tokens_per_s DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS steady_ttft_ms_p50 DOUBLE;
COMMENT ON COLUMN llmbench.levels.steady_window_s IS 'first completion to last send: the level without ramp-up (every stream in its first request) and tail (streams draining)';
COMMENT ON COLUMN llmbench.levels.steady_output_tokens_per_s IS 'output tokens whose chunk arrived inside the steady window, per second of it';
COMMENT ON COLUMN llmbench.levels.steady_ttft_ms_p50 IS 'TTFT p50 of the requests sent inside the steady window';
