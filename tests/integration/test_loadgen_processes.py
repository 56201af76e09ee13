"""One level split over several load-generator processes: every request sent exactly once, the
records merged into one level, SigV4 signing carried into the child processes."""

import json

import pandas as pd

from llmbench.backends.base import Endpoint
from llmbench.loadgen.processes import client_processes
from llmbench.loadgen.sweep import run_sweep
from llmbench.schemas.workload import Workload
from llmbench.testing import calibration
from llmbench.testing._serve import ServerProcess

from .test_sagemaker_wire import AK, SK, assert_matches_record, sagemaker_endpoint, server_truth

WORKLOAD = Workload.model_validate({"input_tokens": 32, "output_tokens": 20, "concurrency": [8],
                                    "requests_per_level": 24, "request_timeout_s": 30, "client_processes": 2})


def _check(out, result, record, kernel_stamped=False):
    (level,) = result.levels
    assert level["client_processes"] == 2 and level["requests_ok"] == 24 and level["requests_failed"] == 0
    rq = pd.read_parquet(result.requests_path)
    assert sorted(rq["request_index"]) == list(range(24))  # each request once, from the shared counter
    assert set(rq["worker"]) == set(range(8))  # 4 streams in each process, numbered apart
    assert set(rq["concurrency"]) == {8}  # the level's, not each process's share
    # The server's 100 ms, not more. The schedule is a floor (no token is written before it is due);
    # above it the client is held to the server's own record of these requests, counted from the
    # client's send stamps (tolerances and their reasons: test_sagemaker_wire), not to the schedule,
    # which a loaded machine makes the server miss by itself (its p50 up to 111 ms measured).
    assert rq["ttft_ms"].min() >= 100
    (srv,) = server_truth(record, result.requests_path).values()  # the one level's requests
    assert_matches_record([level], {int(level["concurrency"]): srv}, out.name)
    if kernel_stamped:  # and each request reached the server as the client stamped it sent (< 0.1 ms measured)
        assert srv["wait_ms_p50"] < 5, srv
    lines = [json.loads(x) for x in (out / "requests.jsonl").read_text().splitlines()]
    assert len(lines) == 24 and not list(out.glob("requests.part*"))
    return level


def test_split_level_over_two_processes_openai(tmp_path):
    with ServerProcess("llmbench.testing.calibration", "--ttft-ms", "100", "--itl-ms", "10",
                       "--tokens", "20") as server:
        result = run_sweep(Endpoint(server.url + "/v1/chat/completions", keep_alive=True), WORKLOAD, tmp_path / "o")
        record = calibration.fetch_record(server.url)
    level = _check(tmp_path / "o", result, record, kernel_stamped=True)
    # the 8 streams really ran at once across the processes (7.6-8.0 measured, loaded or not: a
    # request's ~0.3 s dwarfs the moment between one request's end and its stream's next send)
    assert level["achieved_concurrency"] > 6


def test_split_level_over_two_processes_sagemaker_signed(tmp_path):
    with ServerProcess("llmbench.testing.sagemaker_runtime", "--access-key", AK, "--secret-key", SK,
                       "--ttft-ms", "100", "--itl-ms", "10") as server:
        result = run_sweep(sagemaker_endpoint(server.url), WORKLOAD, tmp_path / "s")
        record = calibration.fetch_record(server.url)
    _check(tmp_path / "s", result, record)  # a bad signature would be a 403: failed requests


def test_process_count_follows_concurrency_and_cores():
    assert client_processes(1) == 1 and client_processes(64) == 1
    assert client_processes(1024) >= 1 and client_processes(1024) <= 8
    assert client_processes(8, configured=3) == 3 and client_processes(2, configured=4) == 2
