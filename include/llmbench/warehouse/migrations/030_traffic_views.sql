-- repeatable: re-applied whenever this file changes (llmbench.warehouse.migrate)
-- Multi-turn sessions per turn (issue 28): TTFT as the history grows, what chat and agent users
-- pay. It reads the request records as measured (requests.session, turn_index and history_chars
-- of 030_traffic.sql); the percentiles are the same linear interpolation as metrics.distribution.
CREATE OR REPLACE VIEW llmbench.v_turns AS
SELECT run_key, target_id, concurrency, turn_index,
       count(*) AS requests,
       sum(CASE WHEN ok THEN 1 ELSE 0 END) AS requests_ok,
       avg(history_chars) AS history_chars_mean,
       avg(input_tokens) AS input_tokens_mean,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY ttft_ms) AS ttft_ms_p50,
       percentile_cont(0.99) WITHIN GROUP (ORDER BY ttft_ms) AS ttft_ms_p99,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY tpot_ms) AS tpot_ms_p50
FROM llmbench.requests
WHERE session >= 0
GROUP BY run_key, target_id, concurrency, turn_index;
