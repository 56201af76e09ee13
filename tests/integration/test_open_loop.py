"""Open-loop load against the calibration server (a process of its own): requests go out on the
seeded Poisson schedule whatever the server's pace, and the in-flight cap holds."""

import itertools

import numpy as np
import pandas as pd

from llmbench.analysis import metrics
from llmbench.backends.base import Endpoint
from llmbench.loadgen.schedules import poisson_offsets_s
from llmbench.loadgen.sweep import run_sweep
from llmbench.testing import calibration
from llmbench.testing._serve import ServerProcess


def test_requests_leave_on_the_poisson_schedule_not_the_servers_pace(tmp_path):
    rate, n = 20.0, 80
    workload = {"input_tokens": 16, "output_tokens": 20, "arrival_rates_rps": [rate], "max_in_flight": 256,
                "requests_per_level": n, "seed": 3, "request_timeout_s": 30}
    with ServerProcess("llmbench.testing.calibration", "--ttft-ms", "100", "--itl-ms", "5") as server:
        result = run_sweep(Endpoint(server.url + "/v1/chat/completions", keep_alive=True), workload, tmp_path)
        record = calibration.fetch_record(server.url)
    (level,) = result.levels
    assert level["load_mode"] == "poisson" and level["arrival_rate_rps"] == rate and level["concurrency"] == 256
    assert level["requests_ok"] == n and record["requests"] == n
    # Judged by the server's record, not by the client's clock: when each request's first byte
    # reached the server (the kernel's receive stamp), against its arrival in the seeded schedule
    # (the level's first request number is 0). A send can be late, never early, so the level
    # starts where the most punctual request was exactly on time.
    due = np.array(list(itertools.islice(poisson_offsets_s(rate, f"3:0:{rate}"), n)))
    arrived = np.array([r["arrival_s"] for r in record["per_request"]])  # in arrival order, like due
    late_ms = 1000 * (arrived - due - (arrived - due).min())
    # Tolerances. The client sleeps until each due time and wakes about 1 ms late (p50 1-1.5 ms
    # measured, idle and with both cores of this 2-core machine kept busy by other work); a loaded
    # machine now and then holds one send back by tens of ms (max 18 ms measured with a busy loop
    # on each core beside a C++ build). What this test proves is the schedule, not the scheduler's
    # latency, and the schedule is far from anything else: a client paced by the server (closed
    # loop) sends a request only after an earlier one has ended (~195 ms), so it falls seconds
    # behind (measured against this record: 1 stream p50 5.4 s, 4 streams p50 0.56 s, all 80 at
    # once p50 2.5 s), and a steady 20/s in place of the Poisson gaps is p50 0.48 s off. So p50
    # < 5 ms, and max < 40 ms: under the 50 ms mean gap between arrivals, and under the 100 ms
    # TTFT, so not one request can have waited for a response before it left.
    assert np.median(late_ms) < 5 and late_ms.max() < 40, late_ms.round(1).tolist()
    # The client's own stamps agree with the server's record: a request reaches the server right
    # after the client stamps it sent (loopback, ~20 us at the median), and the client's send lag
    # (send - due) is the lateness the server saw up to one constant, the level's start, which only
    # the client knows (the server's view starts at its most punctual request, which on a loaded
    # machine was itself ~1 ms late): within 1 ms at the median (a send on a new connection counts
    # its connect in the server's view only).
    rq = pd.read_parquet(result.requests_path).sort_values("send_ns")
    assert -0.5 < 1000 * np.median(arrived - rq["send_ns"].to_numpy() / 1e9) < 1
    differ = late_ms - rq["send_lag_ms"].to_numpy()
    assert np.median(np.abs(differ - np.median(differ))) < 1, differ.round(2).tolist()
    # a request takes ~195 ms and one arrives every 50 ms: several are in flight at once, which a
    # closed loop of one stream never has
    assert level["achieved_concurrency"] > 2
    # The client had CPU to spare, and its send lag p99 is under the bound the server's record is
    # held to above. The level's client_saturated flag is not asserted: its send-lag half (p99 over
    # 10 ms) is a true verdict on a machine that other work keeps busy, which this test is not about.
    assert level["client_cpu_pct"] < metrics.CLIENT_CPU_SATURATED_PCT
    assert level["send_lag_ms_p99"] < 40


def test_the_in_flight_cap_queues_arrivals_and_the_wait_is_the_caps_not_the_clients(tmp_path):
    workload = {"input_tokens": 16, "output_tokens": 20, "arrival_rates_rps": [20.0], "max_in_flight": 1,
                "requests_per_level": 30, "seed": 3, "request_timeout_s": 30}
    with ServerProcess("llmbench.testing.calibration", "--ttft-ms", "100", "--itl-ms", "5") as server:
        result = run_sweep(Endpoint(server.url + "/v1/chat/completions", keep_alive=True), workload, tmp_path)
    (level,) = result.levels
    assert level["requests_ok"] == 30
    assert level["achieved_concurrency"] <= 1.01
    # 20 arrivals/s against one slot that serves ~5/s: arrivals wait ever longer for the one stream
    assert level["send_lag_ms_p99"] > 1000 and level["stream_wait_ms_p99"] > 1000 and level["in_flight_capped"]
    # ...and that wait is the server's pace, not the client's: once the stream is free, the next
    # arrival goes out at once (the client's own lag p99 a few ms at most), so not saturated
    rq = pd.read_parquet(result.requests_path)
    own = rq["send_lag_ms"] - rq["stream_wait_ms"]
    assert (rq["stream_wait_ms"] <= rq["send_lag_ms"]).all() and own.min() >= 0
    assert level["client_lag_ms_p99"] < metrics.SEND_LAG_SATURATED_MS_P99 and not level["client_saturated"]


def test_open_loop_config_runs_on_the_local_default_and_publishes_one_row_per_rate(tmp_path, monkeypatch):
    """The whole per-target pipeline (library calls, the DAG's tasks without Airflow) on the
    real llama-server with config local-open-loop, published into a DuckDB file."""
    from llmbench import pipeline, warehouse
    from llmbench.planning.plan import plan

    from .conftest import llama_server_pids

    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path))  # the default DuckDB warehouse lands here
    before = llama_server_pids()
    run = plan("local-open-loop", "2026-12-03", {"requests_per_level": 6}, runs_root=tmp_path)
    (target,) = run.targets
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
    assert html.count('<div class="chart" id=') >= 3, "the report's charts"
    assert "offered load (Poisson arrivals, requests/s)" in html
