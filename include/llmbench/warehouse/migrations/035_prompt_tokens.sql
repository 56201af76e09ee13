-- Issue 28 item 6: prompts sized with the served model's own tokenizer; each request keeps the
-- client's count beside the server's, each level their mean difference.
ALTER TABLE llmbench.requests ADD COLUMN IF NOT EXISTS input_tokens_client INTEGER;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS input_tokens_client_minus_server_mean DOUBLE;
COMMENT ON COLUMN llmbench.requests.input_tokens_client IS 'the whole prompt''s tokens (chat template included) as the client counted them with the served model''s tokenizer before sending; input_tokens is the server''s reported count; NULL: not counted (a path without a tokenize endpoint, a dataset''s or code-edit prompt: sized as words ~ tokens)';
COMMENT ON COLUMN llmbench.levels.input_tokens_client_minus_server_mean IS 'mean over successful requests of input_tokens_client - input_tokens (client''s count minus the server''s usage count), in tokens: how far prompt sizing missed; NULL when no prompt was counted';
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS prompt_sizing VARCHAR;
COMMENT ON COLUMN llmbench.levels.prompt_sizing IS 'what sized the level''s prompts: tokenizer (the served model''s own, through its server''s tokenize endpoint), words (words ~ tokens, where the server cannot tokenize, or code-edit prompts) or dataset (a dataset''s own text); NULL: a level measured before it was recorded';
