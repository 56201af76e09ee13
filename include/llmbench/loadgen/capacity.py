"""The capacity search: the highest arrival rate at which a target meets its SLO, found by
measuring (docs/metrics.md, "Capacity at the SLO"). Grow the rate until a probe misses the SLO,
then bisect between the highest passing and the lowest failing rate until they are within the
stated relative tolerance; each probe is an open-loop level measured and recorded like any other
(requests.jsonl, levels.parquet, with its probe number). Stops at the budget (probes or minutes),
at the target's limit (max_rps) and at the first probe whose client was saturated: beyond that the
client, not the server, would be measured.

`search` is the algorithm on any `probe(rate) -> Probe` (the unit tests give it a simulated
target); `run_capacity_search` gives it real levels against an endpoint.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmbench.errors import InputError
from llmbench.schemas.capacity import CapacitySearch

__all__ = ["CapacityResult", "Probe", "run_capacity_search", "search", "sweep_rates"]

# Request numbers of the probes: far above any sweep level's (levels x repeats x 10^6 stays below)
PROBE_INDEX_BASE = 10**9
PROBE_INDEX_STRIDE = 10**6  # request_index is int32: 10^9 + 100 probes x 10 repeats x 10^6 fits


@dataclass(frozen=True)
class Probe:
    """One measured level of the search."""

    rate_rps: float
    passed: bool  # met the SLO (metrics.level_meets_slo) and no arrival was held by the in-flight cap
    client_saturated: bool
    requests_per_s: float | None = None
    output_tokens_per_s: float | None = None
    output_tokens_per_s_ci95: tuple[float | None, float | None] = (None, None)
    seconds: float = 0.0


@dataclass(frozen=True)
class CapacityResult:
    """What the search found. capacity_rps is a measured passing rate or None, never an estimate:
    `status` says which (found; bracket_wider_than_tolerance: the budget ended between a pass and a
    fail further apart than the tolerance; above_highest_probe: every probe passed, up to the
    budget or max_rps; below_lowest_probe: every probe failed; client_saturated: stopped there)."""

    status: str
    capacity_rps: float | None
    capacity_output_tokens_per_s: float | None
    capacity_output_tokens_per_s_ci95: tuple[float | None, float | None]
    bracket_pass_rps: float | None
    bracket_fail_rps: float | None
    rel_tolerance: float
    probes: list[Probe] = field(default_factory=list)
    search_s: float = 0.0
    note: str = ""

    @property
    def summary(self) -> str:
        """One line for a log or a report."""
        if self.capacity_rps is not None:
            head = f"capacity {self.capacity_rps:.3g} req/s"
            if self.capacity_output_tokens_per_s is not None:
                head += f" ({self.capacity_output_tokens_per_s:.1f} output tok/s)"
        else:
            head = "capacity not found"
        return f"{head}: {self.status}, {len(self.probes)} probes in {self.search_s:.0f} s; {self.note}"


def search(
    probe: Callable[[float], Probe], cfg: CapacitySearch, clock: Callable[[], float] = time.monotonic
) -> CapacityResult:
    """Grow from cfg.start_rps by cfg.growth until a probe fails (or, if the first fails, shrink
    by it until one passes), then bisect (arithmetic midpoint) until (fail - pass) / pass <=
    rel_tolerance. Within max_probes and max_minutes; never above max_rps; stops at the first
    probe whose client was saturated (its verdict is not used)."""
    started = clock()
    probes: list[Probe] = []
    passing: Probe | None = None  # the highest passing probe
    fail_rps: float | None = None  # the lowest failing rate
    rate = cfg.start_rps
    stop = ""
    while True:
        if len(probes) >= cfg.max_probes:
            stop = f"the budget of {cfg.max_probes} probes is spent"
            break
        if cfg.max_minutes is not None and clock() - started >= cfg.max_minutes * 60:
            stop = f"the budget of {cfg.max_minutes:g} minutes is spent"
            break
        p = probe(rate)
        probes.append(p)
        if p.client_saturated:
            stop = f"the client saturated at {rate:.4g} req/s: beyond it the client, not the server, is measured"
            break
        if p.passed:
            if passing is None or rate > passing.rate_rps:
                passing = p
        elif fail_rps is None or rate < fail_rps:
            fail_rps = rate
        if passing is not None and fail_rps is not None:
            if (fail_rps - passing.rate_rps) / passing.rate_rps <= cfg.rel_tolerance:
                stop = f"a pass and a fail within {cfg.rel_tolerance:.0%}"
                break
            rate = (passing.rate_rps + fail_rps) / 2
        elif passing is not None:  # growing
            if cfg.max_rps is not None and passing.rate_rps >= cfg.max_rps:
                stop = f"the target's limit of {cfg.max_rps:g} req/s passed"
                break
            rate = passing.rate_rps * cfg.growth
            if cfg.max_rps is not None:
                rate = min(rate, cfg.max_rps)
        else:  # every probe so far failed: shrink
            rate = rate / cfg.growth
    saturated = bool(probes and probes[-1].client_saturated)
    if passing is not None and fail_rps is not None:
        status = "found" if (fail_rps - passing.rate_rps) / passing.rate_rps <= cfg.rel_tolerance else (
            "client_saturated" if saturated else "bracket_wider_than_tolerance")  # fmt: skip
    elif passing is not None:
        status = "client_saturated" if saturated else "above_highest_probe"
    else:
        status = "client_saturated" if saturated else "below_lowest_probe"
    return _result(status, passing, fail_rps, probes, cfg.rel_tolerance, clock() - started, stop)


def _result(
    status: str,
    passing: Probe | None,
    fail_rps: float | None,
    probes: list[Probe],
    rel_tolerance: float,
    seconds: float,
    note: str,
) -> CapacityResult:
    """The result around its highest passing probe and lowest failing rate. A capacity is reported
    only where a measured fail bounds a measured pass: a lower bound alone ("above the highest
    probe") is not a capacity."""
    cap = passing if passing is not None and fail_rps is not None else None
    return CapacityResult(
        status=status,
        capacity_rps=cap.rate_rps if cap else None,
        capacity_output_tokens_per_s=cap.output_tokens_per_s if cap else None,
        capacity_output_tokens_per_s_ci95=cap.output_tokens_per_s_ci95 if cap else (None, None),
        bracket_pass_rps=passing.rate_rps if passing else None,
        bracket_fail_rps=fail_rps,
        rel_tolerance=rel_tolerance,
        probes=probes,
        search_s=seconds,
        note=note,
    )


def sweep_rates(probe: Callable[[float], Probe], rates: list[float], rel_tolerance: float) -> CapacityResult:
    """Every rate measured, in order (a dense sweep, no search): the capacity is the highest
    passing rate below the first failing one, as a sweep's table reads it; status as search's."""
    started = time.monotonic()
    probes = [probe(r) for r in rates]
    first_fail = next((p for p in probes if not p.passed), None)
    below = [p for p in probes if p.passed and (first_fail is None or p.rate_rps < first_fail.rate_rps)]
    passing = max(below, key=lambda p: p.rate_rps) if below else None
    status = "found" if passing and first_fail else "above_highest_probe" if passing else "below_lowest_probe"
    fail_rps = first_fail.rate_rps if first_fail else None
    note = f"a sweep of {len(rates)} rates"
    return _result(status, passing, fail_rps, probes, rel_tolerance, time.monotonic() - started, note)


def run_capacity_search(
    endpoint: Any,
    workload: Any,
    out_dir: Path,
    slo: Any,
    cfg: CapacitySearch,
    max_error_rate: float,
    progress: Callable[[str], None] | None = None,
    measured: list[dict[str, Any]] | None = None,
    rates: list[float] | None = None,
) -> tuple[CapacityResult, list[dict[str, Any]]]:
    """The search against a real endpoint: each probe an open-loop level (Poisson arrivals at the
    probe's rate, at most workload.max_in_flight in flight, cfg.probe_duration_s x cfg.repeats),
    its records appended to out_dir/requests.jsonl and its row (sweep.level_row, with
    capacity_probe = its number) returned in order, for the caller to add to levels.parquet
    (append_probe_levels). A rate the sweep already measured open loop at the same in-flight cap
    (`measured`: its level rows) is judged on that level, not measured twice: a level is keyed by
    its rate and cap, and the sweep's is as good a measurement. Returns (the result, the probes'
    new level rows).

    With cfg.common_arrivals every probe replays one seeded arrival pattern (per repeat) scaled to
    its rate: common random numbers, so two probes differ by their rate and not by the luck of
    their Poisson draws, and a verdict near the capacity is not a coin toss. `rates`: measure
    exactly these, in order, with no search (a dense sweep measured the same way, to check the
    search against); the result then brackets the capacity as the first failing rate reads it.
    cfg.growth_probe_duration_s: the search's probes before its first failure last that long (far
    below the capacity a short probe's verdict is clear); the bisection's, and a sweep's, last
    cfg.probe_duration_s."""
    from llmbench.loadgen.driver import thread_runqueue_s
    from llmbench.loadgen.sweep import _level_args, _models, _prompt_sizing, _since, level_row

    workload, slo = _models(workload, slo)
    out_dir.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda _m: None)
    rows: list[dict[str, Any]] = []
    cap = workload.max_in_flight
    jsonl = open(out_dir / "requests.jsonl", "ab", buffering=0)  # noqa: SIM115 (closed below)
    level_args = _level_args(workload, endpoint)  # prompt sizing measured once, before any probe
    sizing = _prompt_sizing(workload, level_args)

    failed_once = False  # growing until a probe fails: until then a probe may be shorter (growth_probe_duration_s)

    def probe(rate: float) -> Probe:
        p = measure(rate)
        nonlocal failed_once
        failed_once = failed_once or not p.passed
        return p

    def measure(rate: float) -> Probe:
        swept = next(
            (r for r in measured or [] if r.get("arrival_rate_rps") == rate and r.get("concurrency") == cap), None
        )
        if swept is not None:
            say(f"capacity: {rate:.4g} req/s was measured by the sweep: judged on that level")
            return _probe_of(swept, rate, 0.0, workload.level_duration_s or 0.0, slo, max_error_rate)
        k = len(rows) + 1
        growing = rates is None and not failed_once and cfg.growth_probe_duration_s is not None
        duration_s = cfg.growth_probe_duration_s if growing and cfg.growth_probe_duration_s else cfg.probe_duration_s
        say(f"capacity probe {k}: Poisson arrivals at {rate:.4g} req/s, at most {cap} in flight, "
            f"{duration_s:g} s x {cfg.repeats}" + (" (growing)" if growing else ""))  # fmt: skip
        t0 = time.monotonic()
        runqueue0 = thread_runqueue_s()
        recs, cpu_s = _probe_levels(endpoint, workload, cfg, rate, k, duration_s, jsonl.fileno(), level_args)
        extras = {"level_warmup_requests": 0, "capacity_probe": k, "prompt_sizing": sizing}
        row = level_row(recs, cap, rate, slo, cpu_s, 1, extras, "poisson", _since(runqueue0, thread_runqueue_s()))
        rows.append(row)
        p = _probe_of(row, rate, time.monotonic() - t0, duration_s, slo, max_error_rate)
        verdict = "meets" if p.passed else "misses"
        saturated = ", client saturated" if p.client_saturated else ""
        served = row["requests_per_s"] or 0
        say(f"capacity probe {k}: {rate:.4g} req/s -> {served:.3g} req/s served, {verdict} the SLO{saturated}")
        return p

    try:
        result = search(probe, cfg) if rates is None else sweep_rates(probe, rates, cfg.rel_tolerance)
    finally:
        jsonl.close()
    say(result.summary)
    return result, rows


def _probe_of(
    row: dict[str, Any], rate: float, seconds: float, duration_s: float, slo: Any, max_error_rate: float
) -> Probe:
    """A probe's verdict from its level row; a probe that sent nothing is refused (no evidence
    either way: neither a pass nor a fail)."""
    from llmbench.analysis import metrics

    if not row["requests_attempted"]:
        raise InputError(
            f"capacity probe at {rate:.4g} req/s sent no request in {duration_s:g} s: lengthen "
            f"capacity.probe_duration_s (a probe expects rate x duration requests)"
        )
    return Probe(
        rate_rps=rate,
        # An arrival held back by the in-flight cap was not offered at the probe's rate, and its
        # wait is in no latency measured from the send: the target did not serve that rate.
        passed=metrics.level_meets_slo(row, slo, max_error_rate) and not row.get("in_flight_capped"),
        client_saturated=bool(row["client_saturated"]),
        requests_per_s=row["requests_per_s"],
        output_tokens_per_s=row["output_tokens_per_s"],
        output_tokens_per_s_ci95=(row["output_tokens_per_s_ci95_low"], row["output_tokens_per_s_ci95_high"]),
        seconds=seconds,
    )


def _probe_levels(
    endpoint: Any,
    workload: Any,
    cfg: CapacitySearch,
    rate: float,
    k: int,
    duration_s: float,
    fd: int,
    level_args: dict[str, Any],
) -> tuple[list[Any], float]:
    """Probe k's records and client CPU seconds: cfg.repeats open-loop levels at `rate`, each
    `duration_s` long, its records appended to the file `fd` as they complete."""
    from llmbench.loadgen.driver import run_level, run_loop
    from llmbench.loadgen.processes import append_line
    from llmbench.loadgen.schedules import PoissonArrivals

    cap = workload.max_in_flight
    recs, cpu_s = [], 0.0
    for rep in range(cfg.repeats):
        first = PROBE_INDEX_BASE + ((k - 1) * cfg.repeats + rep) * PROBE_INDEX_STRIDE
        arrivals = (
            PoissonArrivals(rate, cap, f"{workload.seed}:capacity:{rep}")
            if cfg.common_arrivals
            else PoissonArrivals.for_level(rate, cap, workload.seed, first)
        )
        r_recs, r_cpu = run_loop(
            run_level(
                endpoint,
                arrivals,
                n_requests=None,
                first_index=first,
                on_record=lambda rec: append_line(fd, rec.to_row()),
                duration_s=duration_s,
                repeat=rep,
                **level_args,
            )
        )
        recs.extend(r_recs)
        cpu_s += r_cpu
    return recs, cpu_s


def append_probe_levels(out_dir: Path, rows: list[dict[str, Any]]) -> None:
    """Add the probes' level rows to out_dir/levels.parquet and rewrite requests.parquet from
    requests.jsonl (which now holds the probes' records too), so the probes are levels like any
    other."""
    import pandas as pd

    from llmbench.loadgen.sweep import read_jsonl_records, records_by_level, write_requests

    levels_path = out_dir / "levels.parquet"
    old = pd.read_parquet(levels_path) if levels_path.exists() else pd.DataFrame()
    pd.concat([old, pd.DataFrame(rows)], ignore_index=True).to_parquet(levels_path, index=False)
    records, _ = read_jsonl_records(out_dir / "requests.jsonl")
    write_requests(out_dir / "requests.parquet", records_by_level(records))
