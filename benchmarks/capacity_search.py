"""The capacity search against a dense sweep (issue 29): on the local default (llama-server, 4
slots, SmolLM2-135M, 64 input / 32 output tokens), Poisson arrivals, one SLO. A dense sweep of 12
arrival rates reads the capacity off the curve; the capacity search (loadgen.capacity) finds it
with at most 6 probes of the same length. Targets: the search's capacity within +-10 % of the dense
sweep's, in at most half its measuring time. Writes benchmarks/results/capacity_search.{json,md}.

The dense sweep's capacity is read two ways: the highest rate whose level met the SLO below the
first that missed it (what a sweep table shows), and the rate at which the binding objective's
value crosses its threshold, linearly interpolated between those two levels (the curve read off).
The search's capacity is its highest passing probe once a failing one is within its tolerance.

Both are measured the same way (loadgen.capacity.run_capacity_search, the dense sweep with its 12
rates given): the same verdict per level (the SLO met, no arrival held back by the in-flight cap)
and, by default, common random numbers (every level replays one seeded Poisson pattern scaled to
its rate, so neighbouring levels differ by their rate, not by their draws);
--independent-arrivals draws each level's own. The search's probes while it grows (before its
first failure, far below the capacity) last --growth-probe-s (default 10 s); its bisection's, and
every level of the dense sweep, --probe-s.

  .venv/bin/python benchmarks/capacity_search.py [--probe-s 20] [--levels 12] [--max-rps R] [--start-rps R]
      [--growth-probe-s 10] [--independent-arrivals]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from llmbench.analysis import metrics
from llmbench.backends.local.backend import LocalBackend
from llmbench.backends.local.models import LocalServing
from llmbench.loadgen.capacity import run_capacity_search
from llmbench.loadgen.sweep import run_sweep, run_warmup
from llmbench.schemas.capacity import CapacitySearch
from llmbench.schemas.slo import Objective, Slo
from llmbench.schemas.workload import Workload

RESULTS = Path(__file__).resolve().parent / "results"
SLO = Slo(objectives=(Objective(metric="ttft", percentile=90, max_ms=1000),))
MAX_ERROR_RATE = 0.05
TOLERANCE = 0.1


def _value(level: dict[str, Any]) -> float:
    """The binding objective's value on a level (the SLO has one: ttft p90)."""
    o = SLO.objectives_list()[0]
    return float(level[f"{o.metric}_ms_p{o.percentile:g}"] or float("inf"))


def dense_capacity(levels: list[dict[str, Any]], passed: list[bool]) -> dict[str, Any]:
    """The capacity read off the dense sweep: the highest passing rate below the first failing
    one, and the interpolated crossing of the threshold between them. `passed`: each level's
    verdict, the search's own (the SLO met and no arrival held back by the in-flight cap)."""
    order = sorted(range(len(levels)), key=lambda i: levels[i]["arrival_rate_rps"])
    rows = [levels[i] for i in order]
    verdict = [passed[i] for i in order]
    first_fail = next((i for i, ok in enumerate(verdict) if not ok), None)
    if first_fail is None:
        return {"status": "above_highest_level", "pass_rps": rows[-1]["arrival_rate_rps"], "fail_rps": None}
    if first_fail == 0:
        return {"status": "below_lowest_level", "pass_rps": None, "fail_rps": rows[0]["arrival_rate_rps"]}
    lo, hi = rows[first_fail - 1], rows[first_fail]
    threshold = SLO.objectives_list()[0].max_ms
    v0, v1 = _value(lo), _value(hi)
    r0, r1 = lo["arrival_rate_rps"], hi["arrival_rate_rps"]
    # a level may miss on its error rate, not its latency: then the crossing is the failing rate
    crossing = r0 + (r1 - r0) * (threshold - v0) / (v1 - v0) if v1 > threshold and v1 != v0 else r1
    return {"status": "found", "pass_rps": r0, "fail_rps": r1, "interpolated_rps": crossing}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe-s", type=float, default=20.0)
    ap.add_argument("--levels", type=int, default=12)
    ap.add_argument("--max-rps", type=float, help="the dense sweep's highest rate (default: 1.5 x the calibrated rate)")
    ap.add_argument("--start-rps", type=float, help="the search's first rate (default: max-rps / 4)")
    ap.add_argument("--timeout-s", type=float, default=30.0, help="per request: bounds an overloaded level's drain")
    ap.add_argument(
        "--growth-probe-s",
        type=float,
        default=10.0,
        help="the search's probes before its first failure (0: as long as the others)",
    )
    ap.add_argument(
        "--independent-arrivals",
        action="store_true",
        help="each level and probe draws its own Poisson arrivals (default: common random numbers)",
    )
    a = ap.parse_args()

    base = dict(input_tokens=64, output_tokens=32, max_in_flight=32, request_timeout_s=a.timeout_s, seed=20261205)
    serving = LocalServing(name="llama-server-4slots", parallel=4, threads=2, ctx_per_slot=1024, max_lifetime_s=3600)
    backend = LocalBackend()
    out = Path(tempfile.mkdtemp(prefix="capacity-bench-"))
    handle = backend.start_server(serving, out / "server", die_with_parent=True)
    try:
        backend.wait_ready(handle, 120)
        endpoint = backend.endpoint(handle)
        # Calibration (measured by neither): the rate the 4 slots serve flat out, closed loop, so
        # that the dense sweep's 12 levels span the capacity on a machine whatever its load.
        calibrate = Workload(**base, concurrency=[4], requests_per_level=8, warmup_requests=4)
        run_warmup(endpoint, calibrate)
        served_rps = run_sweep(endpoint, calibrate, out / "calibrate").levels[0]["requests_per_s"]
        max_rps = a.max_rps or round(1.5 * served_rps, 3)
        start_rps = a.start_rps or round(max_rps / 4, 4)
        rates = [round(max_rps * (i + 1) / a.levels, 4) for i in range(a.levels)]
        print(f"calibration: {served_rps:.3f} req/s at 4 streams; dense sweep {rates}; search from {start_rps}")
        workload = Workload(**base, level_duration_s=a.probe_s, arrival_rates_rps=rates, warmup_requests=0)
        cfg = CapacitySearch(
            start_rps=start_rps, rel_tolerance=TOLERANCE, max_probes=a.levels // 2, probe_duration_s=a.probe_s,
            max_rps=max_rps, common_arrivals=not a.independent_arrivals,
            growth_probe_duration_s=a.growth_probe_s or None,
        )  # fmt: skip
        # The dense sweep is measured exactly as the search's probes are (the same arrivals, the
        # same verdict), every rate in order: only the choice of rates differs.
        t0 = time.monotonic()
        dense_result, dense_rows = run_capacity_search(
            endpoint, workload, out / "dense", SLO, cfg, MAX_ERROR_RATE, print, rates=rates
        )
        dense_s = time.monotonic() - t0
        dense_measuring_s = dense_s  # wall time, drains included (a level with no request has no window)
        t0 = time.monotonic()
        result, probe_rows = run_capacity_search(endpoint, workload, out / "search", SLO, cfg, MAX_ERROR_RATE, print)
        search_s = time.monotonic() - t0
        search_measuring_s = search_s
    finally:
        backend.teardown(handle)

    dense = dense_capacity(dense_rows, [p.passed for p in dense_result.probes])
    ref = dense.get("interpolated_rps")
    found = result.capacity_rps
    rel = None if ref is None or found is None else (found - ref) / ref
    rel_pass = None if dense["pass_rps"] is None or found is None else (found - dense["pass_rps"]) / dense["pass_rps"]
    row = {
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} at the end",
        "target": "local llama-server 4 slots, SmolLM2-135M Q4_1, 64 in / 32 out, Poisson arrivals, <= 32 in flight",
        "slo": SLO.label,
        "max_error_rate": MAX_ERROR_RATE,
        "probe_s": a.probe_s,
        "growth_probe_s": a.growth_probe_s,
        "calibrated_rps_4_streams": served_rps,
        "common_arrivals": cfg.common_arrivals,
        "dense": {
            "levels": [_level(r, p) for r, p in zip(dense_rows, dense_result.probes, strict=True)],
            **dense,
            "wall_s": dense_s,
            "measuring_s": dense_measuring_s,
        },
        "search": {
            "status": result.status,
            "capacity_rps": found,
            "capacity_output_tokens_per_s": result.capacity_output_tokens_per_s,
            "bracket_pass_rps": result.bracket_pass_rps,
            "bracket_fail_rps": result.bracket_fail_rps,
            "rel_tolerance": TOLERANCE,
            "probes": [_level(r, p) for r, p in zip(probe_rows, result.probes, strict=True)],
            "note": result.note,
            "wall_s": search_s,
            "measuring_s": search_measuring_s,
        },
        "capacity_vs_dense_interpolated": rel,
        "capacity_vs_dense_highest_pass": rel_pass,
        "time_ratio": search_measuring_s / dense_measuring_s,
        "within_10pct": rel is not None and abs(rel) <= 0.10,
        "at_most_half_the_time": search_measuring_s <= 0.5 * dense_measuring_s,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "capacity_search.json").write_text(json.dumps(row, indent=1))
    lines = [
        "# Capacity search against a dense sweep",
        "",
        f"Measured {row['measured_at']} on {row['machine']} by `.venv/bin/python benchmarks/capacity_search.py "
        f"--probe-s {a.probe_s:g} --levels {a.levels} --growth-probe-s {a.growth_probe_s:g}` (calibrated: "
        f"{served_rps:.3f} req/s at 4 streams; dense sweep to {max_rps:g} req/s; search from {start_rps:g} req/s, "
        f"tolerance {TOLERANCE:.0%}, at most {a.levels // 2} probes, {a.growth_probe_s:g} s each while growing).",
        f"Target: {row['target']}. SLO: {row['slo']}, error rate <= {MAX_ERROR_RATE:g}.",
        "",
        "| | levels / probes | measuring s | capacity req/s |",
        "|---|---|---|---|",
        f"| dense sweep | {len(dense_rows)} | {dense_measuring_s:.0f} | highest pass {dense['pass_rps']}, "
        f"first fail {dense['fail_rps']}, interpolated {_f(ref)} |",
        f"| capacity search | {len(result.probes)} | {search_measuring_s:.0f} | {_f(found)} ({result.status}; "
        f"bracket {_f(result.bracket_pass_rps)}-{_f(result.bracket_fail_rps)}) |",
        "",
        f"Search vs dense (interpolated): {_pct(rel)}; vs the dense sweep's highest passing level: {_pct(rel_pass)}. "
        f"Measuring time: {row['time_ratio']:.0%} of the sweep's. Within +-10 %: {row['within_10pct']}; "
        f"at most half the time: {row['at_most_half_the_time']}.",
        "",
        "Probes: " + ", ".join(f"{p.rate_rps:.3g} ({'pass' if p.passed else 'fail'})" for p in result.probes) + ".",
        "",
        "Dense levels (rate req/s: TTFT p90 ms, passed): "
        + ", ".join(
            f"{lv['rate_rps']:g}: {_f(lv['ttft_ms_p90'])} {'y' if lv['passed'] else 'n'}"
            for lv in row["dense"]["levels"]
        )
        + ".",  # fmt: skip
    ]
    (RESULTS / "capacity_search.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def _level(r: dict[str, Any], p: Any) -> dict[str, Any]:
    """What the results keep of one measured level (a dense level or a probe): its row r, its verdict p."""
    keep = ("requests_per_s", "output_tokens_per_s", "ttft_ms_p90", "error_rate", "in_flight_capped",
            "client_saturated", "client_starved", "client_lag_ms_p99", "send_lag_ms_p99", "stream_wait_ms_p99",
            "client_runqueue_pct", "client_cpu_pct", "goodput_rps")  # fmt: skip
    return {
        "rate_rps": r["arrival_rate_rps"],
        **{k: r[k] for k in keep},
        "meets_slo": metrics.level_meets_slo(r, SLO, MAX_ERROR_RATE),
        "passed": p.passed,
        "seconds": p.seconds,
    }


def _f(v: float | None) -> str:
    return "-" if v is None else f"{v:.3g}"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:+.1%}"


if __name__ == "__main__":
    main()
