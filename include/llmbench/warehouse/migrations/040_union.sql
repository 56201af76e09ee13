-- Issue 43: a run replaces only the targets it ran; the run key's rows are the union of this
-- attempt's targets and every other target's last published attempt (llmbench.results.union).
ALTER TABLE llmbench.runs ADD COLUMN IF NOT EXISTS targets_replaced VARCHAR;
ALTER TABLE llmbench.runs ADD COLUMN IF NOT EXISTS target_attempts VARCHAR;
COMMENT ON COLUMN llmbench.runs.targets_replaced IS 'JSON list: the target ids this attempt ran, whose rows it replaced (a partial run: the DAG Param or CLI --targets); the other targets were inherited from their last published attempt';
COMMENT ON COLUMN llmbench.runs.target_attempts IS 'JSON object: target id -> the attempt folder its published rows were computed from (run_dir for the targets this attempt ran)';
COMMENT ON COLUMN llmbench.runs.run_key IS '<config name>-<logical date>: one row per date and config; a run replaces the rows of the targets it ran (targets_replaced) and keeps the others (target_attempts)';
