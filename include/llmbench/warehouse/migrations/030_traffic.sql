-- Issue 28, the user's own traffic: what a target's prompts came from (workload.dataset, scanned
-- and hashed at plan time), and the open-loop arrivals beyond Poisson (levels.load_mode gamma or
-- constant).
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS dataset_sha256 VARCHAR;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS dataset_format VARCHAR;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS dataset_path VARCHAR;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS dataset_rows_total INTEGER;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS dataset_rows_used INTEGER;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS dataset_filter VARCHAR;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS dataset_sample VARCHAR;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS dataset_output VARCHAR;
COMMENT ON COLUMN llmbench.targets.dataset_sha256 IS 'sha256 of the workload''s dataset file as the plan read it; NULL: generated prompts (no dataset)';
COMMENT ON COLUMN llmbench.targets.dataset_format IS 'the dataset''s format: openai (JSONL messages), sharegpt (JSONL conversations) or text (a prompt a line)';
COMMENT ON COLUMN llmbench.targets.dataset_path IS 'the dataset file, absolute, where the plan read it';
COMMENT ON COLUMN llmbench.targets.dataset_rows_total IS 'conversations (non-blank lines) in the dataset file';
COMMENT ON COLUMN llmbench.targets.dataset_rows_used IS 'of them, the rows the length filter kept: what requests were drawn from';
COMMENT ON COLUMN llmbench.targets.dataset_filter IS 'the length filter on a row''s first prompt, in characters; NULL: none';
COMMENT ON COLUMN llmbench.targets.dataset_sample IS 'with_replacement or without_replacement (no row twice within a level), seeded by workload.seed';
COMMENT ON COLUMN llmbench.targets.dataset_output IS 'output length: workload (its output_tokens, ignore_eos), data (the row''s own) or model (its natural stop, no ignore_eos)';
COMMENT ON COLUMN llmbench.levels.load_mode IS 'closed (concurrency = streams), or the open loop''s arrivals: poisson, gamma (workload.burstiness its shape) or constant (concurrency = the in-flight cap)';
