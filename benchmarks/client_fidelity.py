"""Client fidelity: is llmbench's load generator the bottleneck? The client against the calibration
server (TTFT 100 ms, ITL 10 ms, 256 tokens) at 1, 64, 256 and 1024 closed-loop streams: one
client process pinned to core 0, the server pinned to core 1 (on a machine with two cores or
more); from 256 streams also several client processes spread over every core.

Each row compares what the client measured with the server's own record of what it did (when it
received each request, when it wrote each token), in the same metric definitions; "schedule" is
the throughput the schedule alone would give. Targets (issue: a load generator that is provably
not the bottleneck), one client core at 256 streams: output tok/s within 2 % of the server's,
TTFT p50 no more than 20 ms above it, ITL mean within 1 %. Writes
benchmarks/results/client_fidelity.{json,md}.

  .venv/bin/python benchmarks/client_fidelity.py [--streams 1,64,256,1024] [--requests-per-stream 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

from llmbench.analysis import metrics
from llmbench.backends.base import Endpoint
from llmbench.loadgen.processes import client_processes
from llmbench.loadgen.sweep import run_sweep
from llmbench.schemas.workload import Workload
from llmbench.testing._serve import ServerProcess

RESULTS = Path(__file__).resolve().parent / "results"
TTFT_MS, ITL_MS, TOKENS = 100.0, 10.0, 256
BOUNDS = {"tps_error_pct": 2.0, "ttft_p50_excess_ms": 20.0, "itl_mean_error_pct": 1.0}


def _record(url: str, method: str = "GET") -> dict:
    req = urllib.request.Request(url + "/calibration/record", method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def one(server: ServerProcess, streams: int, per_stream: int, processes: int, work: Path) -> dict:
    import psutil

    _record(server.url, "POST")
    # The server's CPU too: if its one core is full, its own record (taken in its handler) misses
    # the time requests wait in its queue, and the client is not the only suspect.
    server_proc = psutil.Process(server.proc.pid)
    for child in server_proc.children(recursive=True):  # under taskset, the Python process is a child or itself
        server_proc = child
    cpu0 = sum(server_proc.cpu_times()[:2])
    workload = Workload.model_validate({"input_tokens": 32, "output_tokens": TOKENS, "concurrency": [streams],
                                        "requests_per_level": streams * per_stream, "request_timeout_s": 120,
                                        "client_processes": processes})
    t0 = time.monotonic()
    lv = run_sweep(Endpoint(server.url + "/v1/chat/completions", keep_alive=True), workload, work).levels[0]
    wall_s = time.monotonic() - t0
    server_cpu_pct = 100 * (sum(server_proc.cpu_times()[:2]) - cpu0) / wall_s
    srv = _record(server.url)
    schedule_tps = metrics.schedule_output_tokens_per_s(streams, TTFT_MS, ITL_MS, TOKENS)
    row = {
        "streams": streams, "client_processes": processes,
        "client_cores": ",".join(str(c) for c in sorted(os.sched_getaffinity(0))), "requests": lv["requests_attempted"],
        "requests_failed": lv["requests_failed"], "wall_s": round(wall_s, 1),
        "output_tps_client": round(lv["output_tokens_per_s"], 1),
        "output_tps_server": round(srv["output_tokens_per_s"], 1),
        "output_tps_schedule": round(schedule_tps, 1),
        "tps_error_pct": round(100 * (lv["output_tokens_per_s"] / srv["output_tokens_per_s"] - 1), 2),
        "ttft_ms_p50_client": round(lv["ttft_ms_p50"], 1), "ttft_ms_p50_server": round(srv["ttft_ms_p50"], 1),
        "ttft_ms_p99_client": round(lv["ttft_ms_p99"], 1), "ttft_ms_p99_server": round(srv["ttft_ms_p99"], 1),
        "ttft_p50_excess_ms": round(lv["ttft_ms_p50"] - srv["ttft_ms_p50"], 1),
        "itl_ms_mean_client": round(lv["itl_ms_mean"], 3), "itl_ms_mean_server": round(srv["itl_ms_mean"], 3),
        "itl_ms_p99_client": round(lv["itl_ms_p99"], 2), "itl_ms_p99_server": round(srv["itl_ms_p99"], 2),
        "itl_mean_error_pct": round(100 * (lv["itl_ms_mean"] / srv["itl_ms_mean"] - 1), 2),
        "client_cpu_pct": round(lv["client_cpu_pct"], 1), "client_saturated": bool(lv["client_saturated"]),
        "server_cpu_pct": round(server_cpu_pct, 1),
        "send_lag_ms_p99": round(lv["send_lag_ms_p99"], 2),
        "server_late_vs_schedule_ms_p50": round(srv["ttft_ms_p50"] - TTFT_MS, 1),
    }
    # Against the schedule too: C * N / (T + (N - 1) * I), and the closed loop's turnaround
    # (per stream: a request's completion -> the next send), from the sweep's requests.jsonl.
    records = [SimpleNamespace(**json.loads(line)) for line in (work / "requests.jsonl").open()]
    load = metrics.offered_load(records, streams, TTFT_MS, ITL_MS, TOKENS, lv["output_tokens_per_s"])
    row.update({
        "deficit_vs_schedule_pct": round(load["schedule_deficit_pct"], 2),
        "achieved_concurrency": round(lv["achieved_concurrency"], 1),
        **{k: (round(load[k], 2) if load[k] is not None else None)
           for k in ("turnaround_ms_p50", "turnaround_ms_p99", "turnaround_ms_max")},
    })
    row["within_bounds"] = (abs(row["tps_error_pct"]) <= BOUNDS["tps_error_pct"]
                            and row["ttft_p50_excess_ms"] <= BOUNDS["ttft_p50_excess_ms"]
                            and abs(row["itl_mean_error_pct"]) <= BOUNDS["itl_mean_error_pct"])
    shutil.rmtree(work)
    print(json.dumps(row), flush=True)
    return row


def planning_ms_per_1000(n: int = 10_000) -> dict:
    """How long a level's plan takes before its clock starts: the driver builds (prompt, JSON body)
    every request of a count-bounded level ahead (driver.prebuild, up to PREBUILT_BODIES), here
    generated prompts of 32 words and 256 output tokens; ms per 1,000 requests, median of 5."""
    import statistics

    from llmbench.loadgen.driver import _Level, _Prompts
    from llmbench.loadgen.schedules import ClosedLoop

    prompts = _Prompts(32, TOKENS, 0, 0, 0, "words", None, (1, "uniform", 1.0), None, None)
    took = []
    for _ in range(5):
        t0 = time.perf_counter()
        level = _Level(Endpoint("http://127.0.0.1:9/v1/chat/completions"), ClosedLoop(256), n, prompts, 60.0,
                       None, 0, None, 0, 1 << 24, None, None)
        took.append(time.perf_counter() - t0)
        assert len(level.bodies) == n
    row = {"row": "planning", "requests": n, "planning_ms_per_1000": round(1000 * statistics.median(took) * 1000 / n, 2)}
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--streams", default="1,64,256,1024")
    p.add_argument("--requests-per-stream", type=int, default=3)
    p.add_argument("--out", default=str(RESULTS / "client_fidelity"))
    p.add_argument("--processes", type=int, default=0, help="client processes of the multi-process rows (default: auto)")
    p.add_argument("--share-server-core", action="store_true",
                   help="let the multi-process rows' client run on the server's core too")
    a = p.parse_args()
    cores = os.cpu_count() or 1
    pinned = cores >= 2
    server = ServerProcess("llmbench.testing.calibration", "--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS),
                           "--tokens", str(TOKENS))
    if pinned:
        server.cmd = ["taskset", "-c", "1", *server.cmd]
    rows = []
    with server:
        for streams in [int(s) for s in a.streams.split(",")]:
            # One client process on core 0 ...
            if pinned:
                os.sched_setaffinity(0, {0})
            rows.append(one(server, streams, a.requests_per_stream if streams > 1 else 10, 1, Path(a.out + ".work")))
            if streams >= 256 and cores >= 2:
                # ... and several processes on every core but the server's, as many as the load
                # generator picks for itself (loadgen.client_processes: one per 128 streams, at
                # most one per core), or at least two. On two cores: two processes on core 0.
                client_cores = set(range(cores)) - {1} if not a.share_server_core else set(range(cores))
                os.sched_setaffinity(0, client_cores)
                procs = a.processes or max(2, client_processes(streams))
                rows.append(one(server, streams, a.requests_per_stream, procs, Path(a.out + ".work")))
    planning = planning_ms_per_1000()
    result = {"benchmark": "client_fidelity", "at": datetime.now(UTC).isoformat(timespec="seconds"),
              "machine": f"{platform.machine()}, {cores} cores", "client_core_pinned": pinned, "planning": planning,
              "schedule": {"ttft_ms": TTFT_MS, "itl_ms": ITL_MS, "tokens": TOKENS}, "bounds": BOUNDS, "rows": rows}
    RESULTS.mkdir(parents=True, exist_ok=True)
    Path(a.out + ".json").write_text(json.dumps(result, indent=2) + "\n")
    cols = ["streams", "client_processes", "client_cores", "requests_failed", "output_tps_client", "output_tps_server",
            "output_tps_schedule", "tps_error_pct", "deficit_vs_schedule_pct", "achieved_concurrency",
            "turnaround_ms_p50", "turnaround_ms_p99", "turnaround_ms_max", "ttft_ms_p50_client", "ttft_ms_p50_server",
            "ttft_ms_p99_client",
            "ttft_ms_p99_server", "itl_ms_mean_client", "itl_ms_mean_server", "itl_ms_p99_client",
            "itl_ms_p99_server", "client_cpu_pct", "server_cpu_pct", "client_saturated", "within_bounds"]
    table = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n" + "\n".join(
        "| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows)
    Path(a.out + ".md").write_text(
        f"# Client fidelity\n\n{__doc__.strip().split(chr(10) + chr(10))[0]}\n\nRun {result['at']} on "
        f"{result['machine']}; server on core 1, client on the cores in client_cores. Bounds: {BOUNDS}.\n\n{table}\n\n"
        f"A level's plan before its clock (issue 47): {planning['planning_ms_per_1000']} ms per 1,000 requests "
        f"(every body of a {planning['requests']:,}-request level built ahead, generated prompts).\n")


if __name__ == "__main__":
    main()
