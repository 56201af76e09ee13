-- Speculative decoding, measured (seed 002's EAGLE3 table): on the levels of a target with a
-- speculative config, against the target of the same run that differs only in having none.
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS speculative_baseline_target_id VARCHAR;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS speculative_speedup DOUBLE;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS speculative_ttft_change DOUBLE;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS speculative_tpot_change DOUBLE;
COMMENT ON COLUMN llmbench.price_performance.speculative_speedup IS 'output tok/s of this speculative target / that of speculative_baseline_target_id at the same level';
COMMENT ON COLUMN llmbench.price_performance.speculative_ttft_change IS 'TTFT p50 / the baseline''s at the same level - 1';
COMMENT ON COLUMN llmbench.price_performance.speculative_tpot_change IS 'TPOT p50 / the baseline''s at the same level - 1';
