-- Quality a buyer can trust (llmbench.quality): strict and flexible scores with their Wilson 95 %
-- intervals, the drop below the baseline target measured on the same items with its interval,
-- answers cut off by the token limit, and the reasoning tokens spent.
ALTER TABLE llmbench.quality ADD COLUMN IF NOT EXISTS grade_on VARCHAR;
ALTER TABLE llmbench.quality ADD COLUMN IF NOT EXISTS score_strict DOUBLE;
ALTER TABLE llmbench.quality ADD COLUMN IF NOT EXISTS strict_ci_low DOUBLE;
ALTER TABLE llmbench.quality ADD COLUMN IF NOT EXISTS strict_ci_high DOUBLE;
ALTER TABLE llmbench.quality ADD COLUMN IF NOT EXISTS score_flexible DOUBLE;
ALTER TABLE llmbench.quality ADD COLUMN IF NOT EXISTS flexible_ci_low DOUBLE;
ALTER TABLE llmbench.quality ADD COLUMN IF NOT EXISTS flexible_ci_high DOUBLE;
ALTER TABLE llmbench.quality ADD COLUMN IF NOT EXISTS detectable_drop DOUBLE;
ALTER TABLE llmbench.quality ADD COLUMN IF NOT EXISTS drop_ci_low DOUBLE;
ALTER TABLE llmbench.quality ADD COLUMN IF NOT EXISTS drop_ci_high DOUBLE;
ALTER TABLE llmbench.quality ADD COLUMN IF NOT EXISTS n_truncated INTEGER;
ALTER TABLE llmbench.quality ADD COLUMN IF NOT EXISTS reasoning_tokens BIGINT;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS quality_ci_low DOUBLE;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS quality_ci_high DOUBLE;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS quality_ci_low DOUBLE;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS quality_ci_high DOUBLE;
COMMENT ON COLUMN llmbench.quality.score IS 'the gate''s score (grade_on: flexible unless the config says strict): fraction of graded answers (items x runs) that passed';
COMMENT ON COLUMN llmbench.quality.grade_on IS 'which score the gate judges: flexible (default) or strict';
COMMENT ON COLUMN llmbench.quality.score_strict IS 'fraction of answers in exactly the format asked for (the normalised reply is the answer)';
COMMENT ON COLUMN llmbench.quality.strict_ci_low IS 'Wilson 95 % interval of score_strict: lower bound';
COMMENT ON COLUMN llmbench.quality.strict_ci_high IS 'Wilson 95 % interval of score_strict: upper bound';
COMMENT ON COLUMN llmbench.quality.score_flexible IS 'fraction right once extracted: the last number ($ , and a trailing . stripped, as lm-eval flexible-extract), or a text answer contained as a whole word';
COMMENT ON COLUMN llmbench.quality.flexible_ci_low IS 'Wilson 95 % interval of score_flexible: lower bound';
COMMENT ON COLUMN llmbench.quality.flexible_ci_high IS 'Wilson 95 % interval of score_flexible: upper bound';
COMMENT ON COLUMN llmbench.quality.detectable_drop IS 'smallest score drop this suite size tells from noise at 95 % (1.96 * 0.5 / sqrt(n))';
COMMENT ON COLUMN llmbench.quality.drop_vs_baseline IS 'baseline target''s score minus this target''s on the same items (paired); the gate allows at most quality.max_drop_vs_baseline';
COMMENT ON COLUMN llmbench.quality.drop_ci_low IS '95 % interval of the paired drop_vs_baseline: lower bound (NULL without a baseline)';
COMMENT ON COLUMN llmbench.quality.drop_ci_high IS '95 % interval of the paired drop_vs_baseline: upper bound (NULL without a baseline)';
COMMENT ON COLUMN llmbench.quality.n_truncated IS 'answers cut off by the token limit (finish_reason length): counted as failed, never graded silently';
COMMENT ON COLUMN llmbench.quality.reasoning_tokens IS 'tokens spent thinking (<think> or reasoning_content) over the suite: the server''s count, else the reasoning''s character share of completion tokens';
COMMENT ON COLUMN llmbench.targets.quality_ci_low IS 'Wilson 95 % interval of all the target''s graded quality answers pooled: lower bound';
COMMENT ON COLUMN llmbench.targets.quality_ci_high IS 'Wilson 95 % interval of all the target''s graded quality answers pooled: upper bound';
COMMENT ON COLUMN llmbench.price_performance.quality_ci_low IS 'the target''s quality interval (targets.quality_ci_low), beside its $/M';
COMMENT ON COLUMN llmbench.price_performance.quality_ci_high IS 'the target''s quality interval (targets.quality_ci_high), beside its $/M';
