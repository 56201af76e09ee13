-- repeatable: re-applied whenever this file changes (llmbench.warehouse.migrate)
-- The comparison a user comes for (issue 14): every serving path of a run side by side, per model
-- and workload. The figures are computed once, in Python (llmbench.results.tables.compare_paths,
-- llmbench.analysis.pricing); these views choose and join. Defined here, after 027_comparison.sql, because
-- they read the workload columns it adds.

-- One row per path (target) and level of each run: what a million output tokens cost with their
-- input (comparable across hourly and per-token paths), the 24x7 month, the SLO, and the output
-- tok/s the path must sustain around the clock to cost no more than the run's cheapest per-token
-- path (every per-token path: v_break_even). Dropped first: PostgreSQL cannot add columns to a
-- view other than at its end (it was defined in 018_quality_views.sql without the workload).
DROP VIEW IF EXISTS llmbench.v_path_comparison;
CREATE VIEW llmbench.v_path_comparison AS
SELECT run_key, logical_date, model, workload_label, workload_input_tokens, workload_output_tokens,
       backend, instance_type, serving_config, target_id,
       concurrency, arrival_rate_rps, load_mode, price_basis, usd_per_hour,
       output_tokens_per_s, ttft_ms_p50, ttft_ms_p90, tpot_ms_p50, e2e_ms_p50, error_rate,
       meets_slo, validation_passed,
       usd_per_m_output_tokens, usd_per_m_output_tokens_with_input, usd_per_m_total_tokens,
       headline_basis, usd_per_m_headline,
       monthly_usd, price_note, per_token_target_id, break_even_output_tokens_per_s_vs_per_token, beats_per_token,
       quality_score, quality_passed
FROM llmbench.price_performance;

-- Each path at the SLO: one row per run key and target, its level with the highest output tok/s
-- among those that meet the SLO and passed validation, with that level's $/M on the run's price
-- basis (usd_per_m_headline) and the other price figures. A target none of whose levels meets the
-- SLO has its row, with levels_meeting_slo 0 and the level's columns NULL.
CREATE OR REPLACE VIEW llmbench.v_path_at_slo AS
SELECT p.run_key, p.logical_date, p.model, p.workload_label, p.workload_input_tokens, p.workload_output_tokens,
       p.backend, p.instance_type, p.serving_config, p.target_id, p.price_basis,
       p.levels, p.levels_meeting_slo,
       s.concurrency, s.arrival_rate_rps, s.load_mode, s.output_tokens_per_s,
       s.ttft_ms_p90, s.tpot_ms_p90, s.e2e_ms_p50, s.error_rate,
       s.headline_basis, s.usd_per_m_headline, s.usd_per_m_output_tokens, s.usd_per_m_output_tokens_with_input,
       s.usd_per_m_total_tokens, s.usd_per_hour, s.monthly_usd,
       s.per_token_target_id, s.break_even_output_tokens_per_s_vs_per_token, s.beats_per_token,
       p.quality_passed
FROM (
    SELECT run_key, target_id, logical_date, model, workload_label, workload_input_tokens, workload_output_tokens,
           backend, instance_type, serving_config, price_basis, quality_passed,
           CAST(count(*) AS INTEGER) AS levels,
           CAST(sum(CASE WHEN meets_slo AND validation_passed THEN 1 ELSE 0 END) AS INTEGER) AS levels_meeting_slo
    FROM llmbench.price_performance
    GROUP BY run_key, target_id, logical_date, model, workload_label, workload_input_tokens, workload_output_tokens,
             backend, instance_type, serving_config, price_basis, quality_passed
) p
LEFT JOIN (
    SELECT pp.*,
           row_number() OVER (PARTITION BY pp.run_key, pp.target_id
                              ORDER BY pp.output_tokens_per_s DESC NULLS LAST, pp.concurrency,
                                       pp.arrival_rate_rps) AS rank_in_target
    FROM llmbench.price_performance pp
    WHERE pp.meets_slo AND pp.validation_passed
) s ON s.run_key = p.run_key AND s.target_id = p.target_id AND s.rank_in_target = 1;

-- Every hourly level of a run against every per-token path of the same run (table break_even),
-- not only the cheapest: the output tok/s the hourly path must sustain 24x7 to cost no more than
-- that per-token path, at the level's input:output ratio, beside what both cost per million output
-- tokens with their input. cheapest_per_token: the per-token path v_path_comparison names.
CREATE OR REPLACE VIEW llmbench.v_break_even AS
SELECT b.run_key, pp.logical_date, pp.model, pp.workload_label, pp.backend, pp.instance_type, pp.serving_config,
       b.target_id, b.concurrency, b.arrival_rate_rps, pp.usd_per_hour, pp.output_tokens_per_s, pp.meets_slo,
       pp.usd_per_m_output_tokens_with_input,
       b.per_token_target_id, t.model AS per_token_model, t.serving_config AS per_token_serving_config,
       t.usd_per_m_input_tokens_list AS per_token_usd_per_m_input_tokens,
       t.usd_per_m_output_tokens_list AS per_token_usd_per_m_output_tokens,
       b.per_token_usd_per_m_output_tokens_with_input,
       b.input_tokens_per_output_token, b.break_even_output_tokens_per_s, b.beats_per_token,
       coalesce(pp.per_token_target_id = b.per_token_target_id, false) AS cheapest_per_token
FROM llmbench.break_even b
JOIN llmbench.price_performance pp
  ON pp.run_key = b.run_key AND pp.target_id = b.target_id AND pp.concurrency = b.concurrency
 AND pp.arrival_rate_rps = b.arrival_rate_rps
LEFT JOIN llmbench.targets t ON t.run_key = b.run_key AND t.target_id = b.per_token_target_id;
