-- Issue 28 item 6, its gaps closed: vLLM's POST /tokenize counts prompts as llama-server's does, and
-- a dataset's prompts (a row's first prompt, or a session's turn with its history) are counted with
-- the served model's tokenizer before the level, so their records carry the client's count too; so
-- are a count-bounded code-edit level's prompts. No
-- new column: what NULL means in input_tokens_client changed, and its comment says so.
COMMENT ON COLUMN llmbench.requests.input_tokens_client IS 'the whole prompt''s tokens (chat template included) as the client counted them with the served model''s tokenizer (llama-server''s /apply-template and /tokenize, or vLLM''s /tokenize) before the level; input_tokens is the server''s reported count; NULL: not counted (a path without a tokenize endpoint, a dataset''s or code-edit prompt of a timed level or past what the count''s budget reached, a session turn carrying the model''s own answers)';
