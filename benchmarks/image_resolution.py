"""Container image resolution, measured: what asking the SageMaker SDK's tables
(sagemaker.core.image_uris) costs, and where. Each figure is the median of fresh interpreters:
importing the SDK module; the first resolution in a process (which reads the framework's JSON
tables) and a repeated one (answered from the process's cache); `llmbench plan` of seed 002's six
SageMaker targets, which pays both; and importing what the DAG's tasks import after plan (backends,
pipeline, load generator, results), which must not load the SDK at all. Every child records any
socket or DNS call (an audit hook): the tables ship with the package, so there must be none.
Writes benchmarks/results/image_resolution.{json,md}.

  .venv/bin/python benchmarks/image_resolution.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "include"), "AWS_EC2_METADATA_DISABLED": "true"}

CHILD = """
import json, sys, time
calls = []
sys.addaudithook(lambda e, a: calls.append(e) if e in ("socket.connect", "socket.getaddrinfo") else None)
t0 = time.perf_counter()
import llmbench.backends, llmbench.pipeline, llmbench.loadgen.sweep, llmbench.results.tables
tasks_s = time.perf_counter() - t0
tasks_load_sdk = "sagemaker.core.image_uris" in sys.modules
t0 = time.perf_counter()
import sagemaker.core.image_uris
import_s = time.perf_counter() - t0
from llmbench.backends.sagemaker import images
t0 = time.perf_counter()
images.resolve("vllm", "0.30.0", "me-south-1")
first_s = time.perf_counter() - t0
t0 = time.perf_counter()
images.resolve("djl-lmi", "0.36.0", "ap-east-1")
other_s = time.perf_counter() - t0
t0 = time.perf_counter()
for _ in range(100):
    images.resolve("vllm", "0.30.0", "me-south-1")
again_s = (time.perf_counter() - t0) / 100
print(json.dumps({"tasks_import_s": tasks_s, "tasks_load_sdk": tasks_load_sdk, "sdk_import_s": import_s,
                  "first_resolve_s": first_s, "second_framework_resolve_s": other_s,
                  "cached_resolve_s": again_s, "network_calls": calls}))
"""


def _child() -> dict:
    r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=ENV, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def _plan_s() -> float:
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as home:  # the plan's folder, not the user's data folder
        subprocess.run([sys.executable, "-m", "llmbench.cli.main", "plan", "--config", "sagemaker-seed-002"],
                       capture_output=True, env={**ENV, "LLMBENCH_HOME": home}, check=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    load_before = os.getloadavg()
    runs = [_child() for _ in range(args.repeats)]
    plans = [_plan_s() for _ in range(args.repeats)]
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0] if k.endswith("_s")}
    from importlib.metadata import version

    out = {
        "run_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_average_before": [round(x, 2) for x in load_before],
        "repeats": args.repeats,
        "sagemaker": version("sagemaker"),
        "sagemaker_core": version("sagemaker-core"),
        "median_s": {**med, "plan_seed_002_s": statistics.median(plans)},
        "tasks_load_sdk": any(r["tasks_load_sdk"] for r in runs),
        "network_calls": sorted({c for r in runs for c in r["network_calls"]}),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "image_resolution.json").write_text(json.dumps(out, indent=2) + "\n")
    m = out["median_s"]
    rows = [
        ("import sagemaker.core.image_uris (fresh interpreter)", m["sdk_import_s"]),
        ("first resolution in a process (vllm 0.30.0, me-south-1)", m["first_resolve_s"]),
        ("first resolution of a second framework (djl-lmi 0.36.0, ap-east-1)", m["second_framework_resolve_s"]),
        ("a repeated resolution (cached)", m["cached_resolve_s"]),
        ("`llmbench plan --config sagemaker-seed-002` (6 targets), wall", m["plan_seed_002_s"]),
        ("import backends + pipeline + load generator + results (what tasks import)", m["tasks_import_s"]),
    ]
    md = [
        "# Image resolution",
        "",
        __doc__.split("\n\n")[0],
        "",
        f"Run {out['run_at']} on {out['machine']}, sagemaker {out['sagemaker']} / sagemaker-core "
        f"{out['sagemaker_core']}, median of {args.repeats}; load average before {out['load_average_before']}.",
        "",
        "| figure | seconds |",
        "|---|---|",
        *(f"| {k} | {v:.4f} |" for k, v in rows),
        "",
        f"Tasks' imports load the SDK: {out['tasks_load_sdk']}. Socket or DNS calls in any child: "
        f"{out['network_calls'] or 'none'}.",
        "",
    ]
    (RESULTS / "image_resolution.md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
