-- The report's path on the run's row, and column comments for BI tools (shown in their catalogs).
ALTER TABLE llmbench.runs ADD COLUMN IF NOT EXISTS report_path VARCHAR;

COMMENT ON TABLE llmbench.runs IS 'One row per run key (<config>-<logical date>); publishing a run key again replaces its rows in every table';
COMMENT ON COLUMN llmbench.runs.run_key IS '<config name>-<logical date>: the unit of replacement';
COMMENT ON COLUMN llmbench.runs.status IS 'succeeded | partial (some targets failed or failed validation) | failed (all targets failed)';
COMMENT ON COLUMN llmbench.runs.benchmark_cost_usd IS 'what the run itself cost: sum over targets of endpoint seconds x usd_per_hour / 3600';
COMMENT ON COLUMN llmbench.runs.run_dir IS 'raw results of the published attempt (requests.jsonl, parquet, validation, logs)';
COMMENT ON COLUMN llmbench.runs.report_path IS 'the HTML report of the run (plots), written right after publishing';

COMMENT ON TABLE llmbench.targets IS 'One row per planned target (instance type x model x serving config), failed ones included';
COMMENT ON COLUMN llmbench.targets.status IS 'succeeded | failed; failed_stage and error say where and why';
COMMENT ON COLUMN llmbench.targets.usd_per_hour IS 'instance price used for every figure of this row, frozen at plan time';
COMMENT ON COLUMN llmbench.targets.price_source IS 'where usd_per_hour came from (catalog, AWS Pricing API cache, ...) and its date';
COMMENT ON COLUMN llmbench.targets.endpoint_seconds IS 'deploy to teardown, seconds: what the endpoint was billed for';

COMMENT ON TABLE llmbench.levels IS 'One row per target and concurrency level: every metric of the level, computed once (llmbench.metrics.summarize_level)';
COMMENT ON COLUMN llmbench.levels.output_tokens_per_s IS 'successful requests'' output tokens / window_s (first send to last completion)';
COMMENT ON COLUMN llmbench.levels.ttft_ms_p50 IS 'time to first token, ms: send to the first content chunk, median over successful requests';
COMMENT ON COLUMN llmbench.levels.itl_ms_mean IS 'inter-token latency, ms: mean gap between consecutive content chunks';
COMMENT ON COLUMN llmbench.levels.tpot_ms_p50 IS 'time per output token, ms: (e2e - ttft) / (output tokens - 1), median';
COMMENT ON COLUMN llmbench.levels.e2e_ms_p99 IS 'end-to-end latency, ms: send to the last byte, 99th percentile';
COMMENT ON COLUMN llmbench.levels.achieved_concurrency IS 'sum of request durations / window_s: the concurrency the client really held';
COMMENT ON COLUMN llmbench.levels.client_cpu_pct IS 'load generator CPU time / window_s x 100: near 100 means the client, not the server, may be the limit';
COMMENT ON COLUMN llmbench.levels.send_lag_ms_p99 IS 'time a free worker waited before its request went out, ms: client-side queueing';
COMMENT ON COLUMN llmbench.levels.goodput_rps IS 'successful requests per second whose ttft and tpot meet the SLO';

COMMENT ON TABLE llmbench.requests IS 'One row per request of the sweep (warm-up excluded), failed ones included with error_kind';

COMMENT ON TABLE llmbench.price_performance IS 'Price-performance per target and concurrency: what BI dashboards query';
COMMENT ON COLUMN llmbench.price_performance.usd_per_m_output_tokens IS 'usd_per_hour / (output_tokens_per_s x 3600) x 1e6';
COMMENT ON COLUMN llmbench.price_performance.usd_per_m_total_tokens IS 'usd_per_hour / (total_tokens_per_s x 3600) x 1e6, input and output tokens';
COMMENT ON COLUMN llmbench.price_performance.monthly_usd IS 'usd_per_hour x 730: the endpoint running 24x7';
COMMENT ON COLUMN llmbench.price_performance.break_even_output_tokens_per_s IS 'output tok/s at which this instance costs the same as break_even_api per token';
COMMENT ON COLUMN llmbench.price_performance.roofline_tokens_per_s IS 'single-stream decode ceiling: memory bandwidth / bytes of active weights';
COMMENT ON COLUMN llmbench.price_performance.roofline_efficiency IS 'decode_tokens_per_s_per_stream / roofline_tokens_per_s';
COMMENT ON COLUMN llmbench.price_performance.meets_slo IS 'ttft p90 and tpot p90 within the SLO and error rate within its bound';
COMMENT ON COLUMN llmbench.price_performance.best_under_slo IS 'the lowest usd_per_m_output_tokens per model among levels meeting the SLO';
