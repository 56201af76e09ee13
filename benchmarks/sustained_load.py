"""Sustained load: 256 closed-loop streams for ~2 minutes against the calibration server
(TTFT 100 ms, ITL 10 ms, 256 tokens), the client on one core and the server on the other.

Checks what reliability promises: zero client errors, records streamed to disk (the JSON-lines
file has every request), and memory bounded: peak RSS is recorded with the run length, so two runs
of different length can be compared. Writes benchmarks/results/sustained_load.{json,md}.

  .venv/bin/python benchmarks/sustained_load.py [--streams 256] [--seconds 120]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

from llmbench.analysis import metrics
from llmbench.backends.base import Endpoint
from llmbench.loadgen.sweep import run_sweep
from llmbench.schemas.workload import Workload
from llmbench.testing._serve import ServerProcess

RESULTS = Path(__file__).resolve().parent / "results"
TTFT_MS, ITL_MS, TOKENS = 100.0, 10.0, 256


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--streams", type=int, default=256)
    p.add_argument("--seconds", type=float, default=120.0)
    p.add_argument("--out", default=str(RESULTS / "sustained_load"))
    a = p.parse_args()
    per_request_s = (TTFT_MS + (TOKENS - 1) * ITL_MS) / 1000
    n_requests = int(a.streams * a.seconds / per_request_s)
    two_cores = (os.cpu_count() or 1) >= 2
    if two_cores:
        os.sched_setaffinity(0, {0})  # the client on core 0 ...
    server = ServerProcess("llmbench.testing.calibration", "--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS),
                           "--tokens", str(TOKENS))
    if two_cores:
        server.cmd = ["taskset", "-c", "1", *server.cmd]  # ... and the server on core 1
    work = Path(a.out + ".work")
    with server:
        workload = Workload.model_validate({"input_tokens": 32, "output_tokens": TOKENS, "concurrency": [a.streams],
                                            "requests_per_level": n_requests, "request_timeout_s": 60})
        t0 = time.monotonic()
        lv = run_sweep(Endpoint(server.url + "/v1/chat/completions", keep_alive=True), workload, work).levels[0]
        wall_s = time.monotonic() - t0
    jsonl_lines = sum(1 for _ in (work / "requests.jsonl").open())
    true_tps = metrics.schedule_output_tokens_per_s(a.streams, TTFT_MS, ITL_MS, TOKENS)
    # the closed loop's turnaround: per stream, a request's completion -> its next send
    records = [SimpleNamespace(**json.loads(line)) for line in (work / "requests.jsonl").open()]
    load = metrics.offered_load(records, a.streams, TTFT_MS, ITL_MS, TOKENS, lv["output_tokens_per_s"])
    result = {
        "benchmark": "sustained_load",
        "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "client_core_pinned": two_cores,
        "streams": a.streams, "requests": n_requests, "wall_s": round(wall_s, 1),
        "requests_ok": lv["requests_ok"], "requests_failed": lv["requests_failed"],
        "errors_by_kind": json.loads(lv["errors_by_kind"]),
        "records_on_disk": jsonl_lines,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "output_tokens_per_s": round(lv["output_tokens_per_s"], 1),
        "true_output_tokens_per_s": round(true_tps, 1),
        "ttft_ms_p50": round(lv["ttft_ms_p50"], 1), "ttft_ms_p99": round(lv["ttft_ms_p99"], 1),
        "itl_ms_mean": round(lv["itl_ms_mean"], 3), "itl_ms_p99": round(lv["itl_ms_p99"], 2),
        "client_cpu_pct": round(lv["client_cpu_pct"], 1),
        "client_saturated": bool(lv["client_saturated"]),
        "achieved_concurrency": round(lv["achieved_concurrency"], 1),
        "deficit_vs_schedule_pct": round(load["schedule_deficit_pct"], 2),
        **{k: round(load[k], 2) for k in ("turnaround_ms_p50", "turnaround_ms_p99", "turnaround_ms_max")
           if load[k] is not None},
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    Path(a.out + ".json").write_text(json.dumps(result, indent=2) + "\n")
    rows = "\n".join(f"| {k} | {v} |" for k, v in result.items())
    Path(a.out + ".md").write_text(f"# Sustained load\n\n{__doc__.strip().splitlines()[0]}\n\n| metric | value |\n|---|---|\n{rows}\n")
    print(json.dumps(result, indent=2))
    for f in work.iterdir():
        f.unlink()
    work.rmdir()


if __name__ == "__main__":
    main()
