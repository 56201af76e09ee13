-- Correctness beside price-performance (llmbench.quality): one row per target and suite of a
-- config's quality section, the scores on targets and price_performance, and the gate's verdict.
CREATE TABLE IF NOT EXISTS llmbench.quality (
    run_key VARCHAR NOT NULL,
    target_id VARCHAR NOT NULL,
    suite VARCHAR NOT NULL,
    status VARCHAR NOT NULL,
    score DOUBLE,
    n INTEGER NOT NULL,
    n_passed INTEGER NOT NULL,
    runs INTEGER NOT NULL,
    min_score DOUBLE,
    baseline_target_id VARCHAR,
    baseline_score DOUBLE,
    drop_vs_baseline DOUBLE,
    reason VARCHAR,
    raw_path VARCHAR,
    PRIMARY KEY (run_key, target_id, suite)
);
COMMENT ON COLUMN llmbench.quality.status IS 'scored; unsupported (the target refused the suite''s tools: not a failure, no score); not_run (the stage never ran)';
COMMENT ON COLUMN llmbench.quality.score IS 'fraction of graded answers (items x runs) that passed the suite''s grader';
COMMENT ON COLUMN llmbench.quality.drop_vs_baseline IS 'baseline_score - score (the gate allows at most quality.max_drop_vs_baseline)';
COMMENT ON COLUMN llmbench.quality.raw_path IS 'quality.jsonl: every prompt, raw output, verdict and the grader''s reason';
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS quality_score DOUBLE;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS quality_score_tool_call DOUBLE;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS quality_score_exact DOUBLE;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS quality_passed BOOLEAN;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS quality_score DOUBLE;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS quality_passed BOOLEAN;
ALTER TABLE llmbench.runs ADD COLUMN IF NOT EXISTS targets_quality_failed INTEGER;
COMMENT ON COLUMN llmbench.targets.quality_score IS 'mean score of the target''s scored quality suites; NULL without a quality stage';
COMMENT ON COLUMN llmbench.targets.quality_passed IS 'the quality gate: NULL without a quality stage (or no suite scored); false excludes the target from best_under_slo';
COMMENT ON COLUMN llmbench.price_performance.quality_score IS 'the target''s quality score (targets.quality_score), beside its $/M';
COMMENT ON COLUMN llmbench.price_performance.quality_passed IS 'the target''s quality gate; false: never best_under_slo';
