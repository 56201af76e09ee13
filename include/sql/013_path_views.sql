-- repeatable: re-applied whenever this file changes (llmbench.warehouse.migrate)
-- The comparison a user comes for: every serving path of a run side by side.

-- One row per path (target) and level of each run: what a million output tokens cost with their
-- input (comparable across hourly and per-token paths), the 24x7 month, the SLO, and the output
-- tok/s the path must sustain around the clock to cost no more than the run's cheapest per-token
-- path, at this level's measured input:output ratio (5:1 where unmeasured).
CREATE OR REPLACE VIEW llmbench.v_path_comparison AS
SELECT pp.run_key, pp.logical_date, pp.model, pp.backend, pp.instance_type, pp.serving_config, pp.target_id,
       pp.concurrency, pp.arrival_rate_rps, pp.load_mode, pp.price_basis, pp.usd_per_hour,
       pp.output_tokens_per_s, pp.ttft_ms_p50, pp.ttft_ms_p90, pp.tpot_ms_p50, pp.e2e_ms_p50, pp.error_rate,
       pp.meets_slo, pp.validation_passed,
       pp.usd_per_m_output_tokens, pp.usd_per_m_output_tokens_with_input, pp.usd_per_m_total_tokens,
       pp.monthly_usd, pp.price_note,
       api.target_id AS per_token_target_id,
       CASE WHEN pp.usd_per_hour IS NOT NULL AND api.target_id IS NOT NULL
            THEN pp.usd_per_hour / ((coalesce(pp.input_tokens_per_output_token, 5) * api.usd_per_m_input_tokens_list
                                     + api.usd_per_m_output_tokens_list) / 1000000.0 * 3600)
       END AS break_even_output_tokens_per_s_vs_per_token,
       CASE WHEN pp.usd_per_hour IS NOT NULL AND api.target_id IS NOT NULL
            THEN pp.output_tokens_per_s >= pp.usd_per_hour / ((coalesce(pp.input_tokens_per_output_token, 5)
                 * api.usd_per_m_input_tokens_list + api.usd_per_m_output_tokens_list) / 1000000.0 * 3600)
       END AS beats_per_token
FROM llmbench.price_performance pp
LEFT JOIN (
    SELECT run_key, target_id, usd_per_m_input_tokens_list, usd_per_m_output_tokens_list
    FROM (
        SELECT t.*, row_number() OVER (PARTITION BY run_key
                                       ORDER BY 5 * usd_per_m_input_tokens_list + usd_per_m_output_tokens_list,
                                                target_id) AS cheapest
        FROM llmbench.targets t
        WHERE price_basis = 'per_token' AND status = 'succeeded'
    ) ranked
    WHERE cheapest = 1
) api ON api.run_key = pp.run_key;

-- Every hourly path against every per-token path of the same run, at each level.
CREATE OR REPLACE VIEW llmbench.v_break_even AS
SELECT pp.run_key, pp.target_id, pp.backend, pp.instance_type, pp.concurrency, pp.arrival_rate_rps,
       pp.usd_per_hour, pp.output_tokens_per_s, coalesce(pp.input_tokens_per_output_token, 5) AS input_tokens_per_output_token,
       api.target_id AS per_token_target_id, api.model AS per_token_model,
       pp.usd_per_hour / ((coalesce(pp.input_tokens_per_output_token, 5) * api.usd_per_m_input_tokens_list
                           + api.usd_per_m_output_tokens_list) / 1000000.0 * 3600) AS break_even_output_tokens_per_s
FROM llmbench.price_performance pp
JOIN llmbench.targets api ON api.run_key = pp.run_key AND api.price_basis = 'per_token'
WHERE pp.usd_per_hour IS NOT NULL;

-- The managed path's overhead: the same instance type run as a SageMaker endpoint (ml.<type>) and
-- as an EC2 instance we manage (<type>), same model and level, same run: what SageMaker adds.
CREATE OR REPLACE VIEW llmbench.v_managed_overhead AS
SELECT sm.run_key, sm.model, ec2.instance_type, sm.concurrency,
       sm.target_id AS sagemaker_target_id, ec2.target_id AS ec2_target_id,
       sm.ttft_ms_p50 - ec2.ttft_ms_p50 AS ttft_ms_p50_added,
       sm.e2e_ms_p50 - ec2.e2e_ms_p50 AS e2e_ms_p50_added,
       sm.usd_per_m_output_tokens AS sagemaker_usd_per_m_output_tokens,
       ec2.usd_per_m_output_tokens AS ec2_usd_per_m_output_tokens
FROM llmbench.price_performance sm
JOIN llmbench.price_performance ec2
  ON ec2.run_key = sm.run_key AND ec2.model = sm.model AND ec2.concurrency = sm.concurrency
 AND ec2.arrival_rate_rps = sm.arrival_rate_rps
 AND ec2.backend = 'ec2' AND sm.backend = 'sagemaker'
 AND sm.instance_type = 'ml.' || ec2.instance_type;
