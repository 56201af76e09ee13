"""Open-loop load against the calibration server (a process of its own): requests go out on the
seeded Poisson schedule whatever the server's pace, and the in-flight cap holds."""

import itertools

import pandas as pd

from llmbench.loadgen import Endpoint, poisson_offsets_s, run_sweep
from llmbench.testing._serve import ServerProcess


def test_requests_leave_on_the_poisson_schedule_not_the_servers_pace(tmp_path):
    rate, n = 20.0, 80
    workload = {"input_tokens": 16, "output_tokens": 20, "arrival_rates_rps": [rate], "max_in_flight": 256,
                "requests_per_level": n, "seed": 3, "request_timeout_s": 30}
    with ServerProcess("llmbench.testing.calibration", "--ttft-ms", "100", "--itl-ms", "5") as server:
        result = run_sweep(Endpoint(server.url + "/v1/chat/completions", keep_alive=True), workload, tmp_path)
    (level,) = result.levels
    assert level["load_mode"] == "poisson" and level["arrival_rate_rps"] == rate and level["concurrency"] == 256
    assert level["requests_ok"] == n and not level["client_saturated"]
    rq = pd.read_parquet(result.requests_path).sort_values("request_index")
    # each request left at its scheduled arrival (the level's first request number is 0)
    due = list(itertools.islice(poisson_offsets_s(rate, f"3:0:{rate}"), n))
    sent = [(t - rq["send_ns"].min()) / 1e9 for t in rq["send_ns"]]
    late_ms = [1000 * (s - (d - due[0])) for s, d in zip(sent, due)]
    assert max(abs(x) for x in late_ms) < 15, late_ms
    # a request takes ~195 ms and one arrives every 50 ms: several are in flight at once, which a
    # closed loop of one stream never has
    assert level["achieved_concurrency"] > 2
    assert level["send_lag_ms_p99"] < 10


def test_the_in_flight_cap_queues_arrivals_and_the_wait_is_send_lag(tmp_path):
    workload = {"input_tokens": 16, "output_tokens": 20, "arrival_rates_rps": [20.0], "max_in_flight": 1,
                "requests_per_level": 30, "seed": 3, "request_timeout_s": 30}
    with ServerProcess("llmbench.testing.calibration", "--ttft-ms", "100", "--itl-ms", "5") as server:
        result = run_sweep(Endpoint(server.url + "/v1/chat/completions", keep_alive=True), workload, tmp_path)
    (level,) = result.levels
    assert level["requests_ok"] == 30
    assert level["achieved_concurrency"] <= 1.01
    # 20 arrivals/s against one slot that serves ~5/s: arrivals wait ever longer
    assert level["send_lag_ms_p99"] > 1000 and level["client_saturated"]


def test_open_loop_config_runs_on_the_local_default_and_publishes_one_row_per_rate(tmp_path, monkeypatch):
    """The whole per-target pipeline (library calls, the DAG's tasks without Airflow) on the
    real llama-server with config local-open-loop, published into a DuckDB file."""
    from llmbench import pipeline, warehouse
    from llmbench.config import plan

    from .conftest import llama_server_pids

    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path))  # the default DuckDB warehouse lands here
    before = llama_server_pids()
    run = plan("local-open-loop", "2026-12-03", {"requests_per_level": 6}, runs_root=tmp_path)
    (target,) = run["targets"]
    handle = pipeline.deploy(target)
    try:
        pipeline.wait_ready(target, handle)
        pipeline.warm_up(target, handle)
        swept = pipeline.sweep(target, handle)
        validated = pipeline.validate(target, swept)
    finally:
        pipeline.teardown(target, handle)
    assert llama_server_pids() == before
    assert validated["validation_passed"], validated
    run_dir = pipeline.run_dir_of([target])
    pipeline.price_performance(run_dir)
    db = str(tmp_path / "warehouse.duckdb")
    assert pipeline.publish(run_dir)["warehouse"] == db
    pp = warehouse.query("SELECT concurrency, arrival_rate_rps, load_mode, usd_per_m_output_tokens "
                         "FROM llmbench.price_performance ORDER BY arrival_rate_rps", target=db)
    assert pp[["concurrency", "arrival_rate_rps", "load_mode"]].values.tolist() == [[32, 1.0, "poisson"],
                                                                                    [32, 4.0, "poisson"]]
    lv = warehouse.query("SELECT arrival_rate_rps, requests_ok, achieved_concurrency, ttft_ms_p50 "
                         "FROM llmbench.levels ORDER BY arrival_rate_rps", target=db)
    assert lv["requests_ok"].tolist() == [6, 6]
    rq = warehouse.query("SELECT DISTINCT arrival_rate_rps FROM llmbench.requests ORDER BY 1", target=db)
    assert rq["arrival_rate_rps"].tolist() == [1.0, 4.0]
    # the report plots against the offered load, not the in-flight cap
    html = open(pipeline.report(run_dir)).read()
    assert html.count("<img") >= 3 and "arrival_rate_rps" in html
