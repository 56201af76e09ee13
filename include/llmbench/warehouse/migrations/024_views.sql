-- repeatable: re-applied whenever this file changes (llmbench.warehouse.migrate)
-- Week-over-week change per target and level (concurrency, arrival rate): each run against the
-- previous run of the same target. A regression is throughput down, or $/M up, by more than the
-- setting regression_threshold (llmbench.settings, default 10 %), and is judged only between two
-- runs whose tables the same code computed (comparable): otherwise a change may be a changed
-- definition, not a changed server, and `regression` is NULL with the reason in not_comparable.
-- Reprocessing the older week (llmbench reprocess) makes a pair comparable again. Defined here,
-- not in 010_views.sql, because it reads the columns 023_computation.sql adds.
CREATE OR REPLACE VIEW llmbench.v_week_over_week AS
SELECT run_key, target_id, concurrency, arrival_rate_rps, logical_date, previous_logical_date,
       output_tokens_per_s, previous_output_tokens_per_s,
       output_tokens_per_s / previous_output_tokens_per_s - 1 AS output_tokens_per_s_change,
       usd_per_m_output_tokens, previous_usd_per_m_output_tokens,
       usd_per_m_output_tokens / previous_usd_per_m_output_tokens - 1 AS usd_per_m_output_tokens_change,
       CASE WHEN computed_by = previous_computed_by
            THEN (output_tokens_per_s / previous_output_tokens_per_s - 1 < -s.value
                  OR usd_per_m_output_tokens / previous_usd_per_m_output_tokens - 1 > s.value)
       END AS regression,
       s.value AS regression_threshold,
       computed_by, previous_computed_by,
       coalesce(computed_by = previous_computed_by, false) AS comparable,
       CASE WHEN computed_by IS NULL OR previous_computed_by IS NULL
            THEN 'a run computed by unknown code (published before computed_by existed): reprocess it'
            WHEN computed_by <> previous_computed_by
            THEN 'computed by different code (' || previous_computed_by || ' then ' || computed_by || '): reprocess the older run'
       END AS not_comparable
FROM (
    SELECT pp.*, r.computed_by,
           -- the same window four times: Redshift has no WINDOW clause
           lag(pp.logical_date) OVER (PARTITION BY pp.target_id, pp.instance_type, pp.serving_config, pp.concurrency,
                                      pp.arrival_rate_rps ORDER BY pp.logical_date) AS previous_logical_date,
           lag(pp.output_tokens_per_s) OVER (PARTITION BY pp.target_id, pp.instance_type, pp.serving_config,
                                             pp.concurrency, pp.arrival_rate_rps
                                             ORDER BY pp.logical_date) AS previous_output_tokens_per_s,
           lag(pp.usd_per_m_output_tokens) OVER (PARTITION BY pp.target_id, pp.instance_type, pp.serving_config,
                                                 pp.concurrency, pp.arrival_rate_rps
                                                 ORDER BY pp.logical_date) AS previous_usd_per_m_output_tokens,
           lag(r.computed_by) OVER (PARTITION BY pp.target_id, pp.instance_type, pp.serving_config, pp.concurrency,
                                    pp.arrival_rate_rps ORDER BY pp.logical_date) AS previous_computed_by
    FROM llmbench.price_performance pp
    JOIN llmbench.runs r USING (run_key)
) t
CROSS JOIN (SELECT value FROM llmbench.settings WHERE name = 'regression_threshold') s
WHERE previous_logical_date IS NOT NULL;
