"""The user's traffic (issue 28), three rows:

  trace_replay   a Mooncake trace at 500 requests/s (a request every 2 ms, 3,000 of them) replayed
                 open loop by one client process pinned to core 0, against the calibration server
                 (TTFT 5 ms, 4 tokens 1 ms apart) on core 1: the send lateness (actual send minus
                 scheduled, connecting excluded) p50/p99. Target: p99 <= 2 ms.
  dataset_rss    a 1 GB OpenAI-chat JSONL written to a temporary folder (deleted after), scanned
                 (every line checked and hashed) and 2,000 requests' bodies drawn from it without
                 replacement, in a fresh process: its peak RSS. Target: < 300 MB.
  multi_turn     the client's turnaround (a stream's response end -> its next send) at 16 streams
                 against the calibration server (TTFT 20 ms, 32 tokens 2 ms apart): single-turn
                 requests from a dataset vs the same rows as multi-turn sessions (history carried,
                 no think time). Target: multi-turn no slower.

Writes benchmarks/results/traffic.{json,md}.

  .venv/bin/python benchmarks/traffic.py [--skip-rss]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

from llmbench.analysis import metrics
from llmbench.backends.base import Endpoint
from llmbench.loadgen.sweep import run_sweep
from llmbench.schemas.workload import Workload
from llmbench.testing._serve import ServerProcess

RESULTS = Path(__file__).resolve().parent / "results"
TARGETS = {"trace_send_lateness_ms_p99": 2.0, "dataset_rss_mb": 300.0}


def _server(ttft_ms: float, itl_ms: float, tokens: int) -> ServerProcess:
    server = ServerProcess(
        "llmbench.testing.calibration", "--ttft-ms", str(ttft_ms), "--itl-ms", str(itl_ms), "--tokens", str(tokens)
    )
    if (os.cpu_count() or 1) >= 2:
        server.cmd = ["taskset", "-c", "1", *server.cmd]
    return server


def trace_replay(work: Path, rate_rps: float = 500.0, n: int = 3000) -> dict:
    trace = work / "trace.jsonl"
    with trace.open("w") as f:
        for i in range(n):  # 64 input tokens, 4 output, two shared prefix blocks among every 8
            row = {"timestamp": i * 1000 / rate_rps, "input_length": 64, "output_length": 4, "hash_ids": [i % 8]}
            f.write(json.dumps(row) + "\n")
    workload = Workload.model_validate(
        {"trace": {"path": str(trace), "block_tokens": 16, "max_lateness_ms_p99": 2.0}, "max_in_flight": 256,
         "warmup_requests": 0, "request_timeout_s": 30}
    )  # fmt: skip
    with _server(5.0, 1.0, 4) as server:
        if (os.cpu_count() or 1) >= 2:
            os.sched_setaffinity(0, {0})
        lv = run_sweep(Endpoint(server.url + "/v1/chat/completions", keep_alive=True), workload, work / "out").levels[0]
    return {
        "row": "trace_replay",
        "rate_rps": rate_rps,
        "requests": lv["requests_attempted"],
        "requests_failed": lv["requests_failed"],
        "send_lateness_ms_p50": round(lv["send_lag_ms_p50"], 3),
        "send_lateness_ms_p99": round(lv["send_lag_ms_p99"], 3),
        "send_lateness_ms_max": round(lv["send_lag_ms_max"], 3),
        "offered_as_scheduled": bool(lv["offered_as_scheduled"]),
        "client_cpu_pct": round(lv["client_cpu_pct"], 1),
        "within_target": lv["send_lag_ms_p99"] <= TARGETS["trace_send_lateness_ms_p99"],
    }


_CHILD = """
import json, resource, sys, time
from llmbench.loadgen.prompts import chat_request_body, dataset_prompt
from llmbench.schemas.dataset import DatasetSpec, scan
spec = DatasetSpec(path=sys.argv[1], format="openai", sample="without_replacement")
t0 = time.monotonic()
index = scan(spec)
scan_s = time.monotonic() - t0
size = sum(len(json.dumps(chat_request_body(dataset_prompt(spec, index, 7, i, 64)))) for i in range(2000))
print(json.dumps({"rows": index.rows_used, "scan_s": scan_s, "bodies_bytes": size,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def dataset_rss(work: Path, gigabytes: float = 1.0) -> dict:
    path = work / "big.jsonl"
    rng = random.Random(1)
    words = "the of and to in is was for on that with as by at from his her it an are".split()
    target = int(gigabytes * (1 << 30))
    written = 0
    with path.open("w") as f:
        while written < target:  # ~1 KB rows, 1 to 3 turns each
            msgs = []
            for _ in range(rng.randint(1, 3)):
                msgs.append({"role": "user", "content": " ".join(rng.choices(words, k=rng.randint(40, 120)))})
                msgs.append({"role": "assistant", "content": " ".join(rng.choices(words, k=rng.randint(10, 60)))})
            line = json.dumps({"messages": msgs}) + "\n"
            f.write(line)
            written += len(line)
    size_mb = path.stat().st_size / (1 << 20)
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, check=True)
    child = json.loads(out.stdout)
    path.unlink()
    return {
        "row": "dataset_rss",
        "file_mb": round(size_mb, 1),
        "rows": child["rows"],
        "scan_s": round(child["scan_s"], 1),
        "requests_drawn": 2000,
        "rss_mb_peak": round(child["rss_mb"], 1),
        "within_target": child["rss_mb"] < TARGETS["dataset_rss_mb"],
    }


def multi_turn(work: Path, streams: int = 16, requests: int = 480) -> list[dict]:
    data = work / "conv.jsonl"
    rng = random.Random(2)
    with data.open("w") as f:
        for _ in range(400):
            msgs = []
            for _ in range(4):
                msgs.append({"role": "user", "content": " ".join(["word"] * rng.randint(20, 80))})
                msgs.append({"role": "assistant", "content": " ".join(["answer"] * rng.randint(20, 80))})
            f.write(json.dumps({"messages": msgs}) + "\n")
    rows = []
    with _server(20.0, 2.0, 32) as server:
        if (os.cpu_count() or 1) >= 2:
            os.sched_setaffinity(0, {0})
        for kind in ("single_turn", "multi_turn"):
            w = {"output_tokens": 32, "concurrency": [streams], "requests_per_level": requests, "warmup_requests": 0,
                 "dataset": {"path": str(data), "format": "openai"}}  # fmt: skip
            if kind == "multi_turn":
                w["multi_turn"] = {"think_time_s": 0, "max_turns": 4}
            out = work / kind
            lv = run_sweep(
                Endpoint(server.url + "/v1/chat/completions", keep_alive=True), Workload.model_validate(w), out
            ).levels[0]
            records = [SimpleNamespace(**json.loads(line)) for line in (out / "requests.jsonl").open()]
            load = metrics.offered_load(records, streams, 20.0, 2.0, 32, lv["output_tokens_per_s"])
            rows.append({
                "row": kind, "streams": streams, "requests": lv["requests_attempted"],
                "requests_failed": lv["requests_failed"],
                "turnaround_ms_p50": round(load["turnaround_ms_p50"], 3),
                "turnaround_ms_p99": round(load["turnaround_ms_p99"], 3),
                "output_tokens_per_s": round(lv["output_tokens_per_s"], 1),
                "client_cpu_pct": round(lv["client_cpu_pct"], 1),
            })  # fmt: skip
    return rows


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--skip-rss", action="store_true", help="leave out the 1 GB dataset row")
    p.add_argument("--out", default=str(RESULTS / "traffic"))
    a = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="llmbench-traffic-"))
    rows = []
    try:
        t0 = time.monotonic()
        rows.append(trace_replay(work))
        print(json.dumps(rows[-1]), flush=True)
        rows.extend(multi_turn(work))
        print(json.dumps(rows[-2:]), flush=True)
        if not a.skip_rss:
            rows.append(dataset_rss(work))
            print(json.dumps(rows[-1]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()
    result = {
        "benchmark": "traffic", "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores", "load_average_1m_at_end": round(load[0], 2),
        "wall_s": round(time.monotonic() - t0, 1), "targets": TARGETS, "rows": rows,
    }  # fmt: skip
    RESULTS.mkdir(parents=True, exist_ok=True)
    Path(a.out + ".json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "# Traffic benchmark (issue 28)", "",
        f"{result['at']}, {result['machine']}, load average (1 min) at the end {result['load_average_1m_at_end']} "
        "(the machine is shared: lateness and turnaround rise with other load).", "",
        "| row | figures |", "|---|---|",
    ]  # fmt: skip
    for r in rows:
        lines.append(f"| {r['row']} | " + ", ".join(f"{k} {v}" for k, v in r.items() if k != "row") + " |")
    Path(a.out + ".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
