-- Issue 28 item 2: a multi-turn session's history is the dataset's assistant turns or the model's
-- own answers to the session's earlier turns (workload.multi_turn.history). Which one a target ran
-- is on its row, so v_turns' TTFT by turn can be read against the history that was really carried
-- (requests.history_chars counts its characters either way).
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS multi_turn_history VARCHAR;
COMMENT ON COLUMN llmbench.targets.multi_turn_history IS 'multi-turn sessions: the assistant turns each next turn carried, data (the dataset row''s own) or model (the model''s streamed answers to the session''s earlier turns; a failed or empty answer is an empty assistant turn); NULL: no multi-turn sessions, or a target published before it was recorded';
