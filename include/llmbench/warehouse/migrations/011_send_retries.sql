-- A send on a kept-alive connection the server had closed, before any response byte, is sent
-- again once on a fresh connection (llmbench.httpstream); nothing was measured of the first try.
ALTER TABLE llmbench.requests ADD COLUMN IF NOT EXISTS send_retried BOOLEAN;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS sends_retried INTEGER;
COMMENT ON COLUMN llmbench.levels.sends_retried IS 'requests sent again on a fresh connection because the server had closed the reused one before answering';
