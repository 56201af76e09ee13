-- Provenance per target: what a row measured, as planned (the engine version and model revision
-- the server reports are not read yet).
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS container_image VARCHAR;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS engine VARCHAR;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS model_id VARCHAR;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS llmbench_version VARCHAR;
COMMENT ON COLUMN llmbench.targets.container_image IS 'the serving container image URI in the target''s region (by tag: no digest known)';
COMMENT ON COLUMN llmbench.targets.model_id IS 'the Hugging Face model id (a per-token API: its model id)';
