-- llmbench warehouse schema (DuckDB; kept PostgreSQL-compatible where the types allow).
-- Every table's primary key includes run_key: publishing a run key replaces its rows.
-- Units are in the column names: _ms milliseconds, _s seconds, _ns monotonic nanoseconds
-- (time.perf_counter_ns on the client; only differences are meaningful), usd_ US dollars.
CREATE SCHEMA IF NOT EXISTS llmbench;

CREATE TABLE IF NOT EXISTS llmbench.runs (
    run_key VARCHAR PRIMARY KEY,            -- <config name>-<logical date>
    config_name VARCHAR NOT NULL,
    logical_date DATE NOT NULL,
    run_dir VARCHAR NOT NULL,               -- raw results of the attempt that was published
    planned_at TIMESTAMPTZ NOT NULL,
    published_at TIMESTAMPTZ NOT NULL,
    status VARCHAR NOT NULL,                -- succeeded | partial | failed
    targets_planned INTEGER NOT NULL,
    targets_failed INTEGER NOT NULL,
    targets_validation_failed INTEGER NOT NULL,
    benchmark_cost_usd DOUBLE,              -- sum over targets of endpoint-seconds x usd_per_hour
    llmbench_version VARCHAR NOT NULL
);

CREATE TABLE IF NOT EXISTS llmbench.targets (
    run_key VARCHAR NOT NULL,
    target_id VARCHAR NOT NULL,
    label VARCHAR NOT NULL,                 -- instance type / model / serving config
    backend VARCHAR NOT NULL,
    instance_type VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    precision VARCHAR NOT NULL,
    serving_config VARCHAR NOT NULL,
    serving_json VARCHAR NOT NULL,          -- every serving knob, as JSON
    workload_json VARCHAR NOT NULL,
    usd_per_hour DOUBLE NOT NULL,           -- the price used, frozen on the row
    price_source VARCHAR,
    price_date VARCHAR,
    status VARCHAR NOT NULL,                -- succeeded | failed
    failed_stage VARCHAR,                   -- deploy | wait_ready | warm_up | sweep | validate | teardown
    error VARCHAR,
    validation_passed BOOLEAN,              -- null when the target never reached validation
    endpoint_seconds DOUBLE,                -- deploy to deleted
    benchmark_cost_usd DOUBLE,
    raw_dir VARCHAR NOT NULL,
    PRIMARY KEY (run_key, target_id)
);

CREATE TABLE IF NOT EXISTS llmbench.levels (
    run_key VARCHAR NOT NULL,
    target_id VARCHAR NOT NULL,
    concurrency INTEGER NOT NULL,
    requests_attempted INTEGER NOT NULL,
    requests_ok INTEGER NOT NULL,
    requests_failed INTEGER NOT NULL,
    error_rate DOUBLE,
    errors_by_kind VARCHAR,                 -- JSON {error_kind: count}
    window_s DOUBLE,                        -- first send to last completion
    output_tokens_total BIGINT,
    output_tokens_per_s DOUBLE,
    requests_per_s DOUBLE,
    goodput_rps DOUBLE,                     -- successful requests/s within the SLO
    input_tokens_mean DOUBLE,
    output_tokens_mean DOUBLE,
    achieved_concurrency DOUBLE,
    client_cpu_pct DOUBLE,
    ttft_ms_p50 DOUBLE, ttft_ms_p90 DOUBLE, ttft_ms_p95 DOUBLE, ttft_ms_p99 DOUBLE, ttft_ms_mean DOUBLE, ttft_ms_min DOUBLE, ttft_ms_max DOUBLE,
    itl_ms_p50 DOUBLE, itl_ms_p90 DOUBLE, itl_ms_p95 DOUBLE, itl_ms_p99 DOUBLE, itl_ms_mean DOUBLE, itl_ms_min DOUBLE, itl_ms_max DOUBLE,
    tpot_ms_p50 DOUBLE, tpot_ms_p90 DOUBLE, tpot_ms_p95 DOUBLE, tpot_ms_p99 DOUBLE, tpot_ms_mean DOUBLE, tpot_ms_min DOUBLE, tpot_ms_max DOUBLE,
    e2e_ms_p50 DOUBLE, e2e_ms_p90 DOUBLE, e2e_ms_p95 DOUBLE, e2e_ms_p99 DOUBLE, e2e_ms_mean DOUBLE, e2e_ms_min DOUBLE, e2e_ms_max DOUBLE,
    send_lag_ms_p50 DOUBLE, send_lag_ms_p90 DOUBLE, send_lag_ms_p95 DOUBLE, send_lag_ms_p99 DOUBLE, send_lag_ms_mean DOUBLE, send_lag_ms_min DOUBLE, send_lag_ms_max DOUBLE,
    validation_passed BOOLEAN,
    PRIMARY KEY (run_key, target_id, concurrency)
);

CREATE TABLE IF NOT EXISTS llmbench.requests (
    run_key VARCHAR NOT NULL,
    target_id VARCHAR NOT NULL,
    concurrency INTEGER NOT NULL,
    request_index INTEGER NOT NULL,
    worker INTEGER,
    ok BOOLEAN NOT NULL,
    error_kind VARCHAR,                     -- http_status | timeout | connection | stream_error | malformed_chunk | empty_response | truncated
    error_detail VARCHAR,
    http_status INTEGER,
    send_ns BIGINT NOT NULL,
    first_content_ns BIGINT,
    end_ns BIGINT NOT NULL,
    send_lag_ms DOUBLE,
    ttft_ms DOUBLE,
    e2e_ms DOUBLE,
    tpot_ms DOUBLE,
    itl_ms DOUBLE[],                        -- every gap between consecutive content chunks
    content_chunks INTEGER,
    output_tokens INTEGER,
    output_tokens_source VARCHAR,           -- usage | counted
    output_tokens_counted INTEGER,
    input_tokens INTEGER,
    finish_reason VARCHAR,
    validation_passed BOOLEAN,
    PRIMARY KEY (run_key, target_id, concurrency, request_index)
);

CREATE TABLE IF NOT EXISTS llmbench.price_performance (
    run_key VARCHAR NOT NULL,
    target_id VARCHAR NOT NULL,
    concurrency INTEGER NOT NULL,
    logical_date DATE NOT NULL,
    instance_type VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    serving_config VARCHAR NOT NULL,
    usd_per_hour DOUBLE NOT NULL,
    price_source VARCHAR,
    output_tokens_per_s DOUBLE,
    requests_per_s DOUBLE,
    usd_per_m_output_tokens DOUBLE,         -- usd_per_hour / (output_tokens_per_s x 3600) x 1e6
    monthly_usd DOUBLE,                     -- usd_per_hour x 730 (24x7)
    ttft_ms_p50 DOUBLE,
    ttft_ms_p90 DOUBLE,
    tpot_ms_p50 DOUBLE,
    tpot_ms_p90 DOUBLE,
    e2e_ms_p50 DOUBLE,
    error_rate DOUBLE,
    meets_slo BOOLEAN,                      -- ttft p90 and tpot p90 within the SLO, error rate within its bound
    best_under_slo BOOLEAN,                 -- lowest usd_per_m_output_tokens per model among levels meeting the SLO
    validation_passed BOOLEAN,
    PRIMARY KEY (run_key, target_id, concurrency)
);
