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
ALTER TABLE llmbench.requests ADD COLUMN IF NOT EXISTS session INTEGER DEFAULT -1;
ALTER TABLE llmbench.requests ADD COLUMN IF NOT EXISTS turn_index INTEGER DEFAULT 0;
ALTER TABLE llmbench.requests ADD COLUMN IF NOT EXISTS history_chars INTEGER DEFAULT 0;
ALTER TABLE llmbench.requests ADD COLUMN IF NOT EXISTS prefix_id INTEGER DEFAULT 0;
ALTER TABLE llmbench.requests ADD COLUMN IF NOT EXISTS scheduled_ms DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS offered_as_scheduled BOOLEAN;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS shared_prefix_fraction DOUBLE;
COMMENT ON COLUMN llmbench.requests.session IS 'multi-turn: the session (a dataset row sent turn by turn on one stream) this request is a turn of; -1: not a session';
COMMENT ON COLUMN llmbench.requests.turn_index IS 'multi-turn: which turn of its session, 0 the first; 0 for a single-turn request';
COMMENT ON COLUMN llmbench.requests.history_chars IS 'multi-turn: characters of the earlier turns sent with this one (the history; input_tokens is the server''s count of the whole prompt)';
COMMENT ON COLUMN llmbench.requests.prefix_id IS 'which of the workload''s prefix_count shared prefixes the request carried (uniform or Zipf draw); 0 with one or none';
COMMENT ON COLUMN llmbench.requests.scheduled_ms IS 'open loop: when the request was due, ms after the level began (its arrival, or its trace timestamp x time_scale); actual send = scheduled + send_lag_ms + connecting; NULL: closed loop';
COMMENT ON COLUMN llmbench.levels.offered_as_scheduled IS 'trace replay: whether the level''s send lateness p99 (send_lag_ms_p99) stayed within workload.trace.max_lateness_ms_p99; false: not offered as scheduled; NULL: not a trace level';
COMMENT ON COLUMN llmbench.levels.shared_prefix_fraction IS 'fraction of input tokens that are a shared prefix: shared_prefix_tokens over the planned prompt, or for a trace the tokens of prefix blocks an earlier request already sent; NULL: a dataset''s own prompts';
