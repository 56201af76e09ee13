"""Per level: `summarize_level` reduces one list of request records into one row, in the spirit of
vLLM's benchmarks/serve.py (all level metrics computed in one function over one list), with what
it draws on (steady state, tokens per chunk, offered load) and what is read off a curve of levels
(knees, degradation, repeats' confidence intervals)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from llmbench.analysis.metrics.requests import NS_PER_MS
from llmbench.analysis.metrics.types.base import Level, LevelBased
from llmbench.analysis.metrics.types.client import (
    ClientCpuPct,
    ClientRunqueuePct,
    ClientSaturated,
    ClientStarved,
    SendLateness,
)
from llmbench.analysis.metrics.types.counts import (
    ErrorRate,
    ErrorsByKind,
    InputTokensClientMinusServerMean,
    InputTokensMean,
    OutputTokensMean,
    OutputTokensTotal,
    RequestsAttempted,
    RequestsFailed,
    RequestsOk,
    SendsRetried,
)
from llmbench.analysis.metrics.types.latency import ChunkGapMs, ChunkTokens, E2eMs, ItlMs, SendLagMs, TpotMs, TtftMs
from llmbench.analysis.metrics.types.slo import Goodput
from llmbench.analysis.metrics.types.throughput import (
    AchievedConcurrency,
    OutputTokensPerS,
    RequestsPerS,
    SteadyState,
    WindowS,
)
from llmbench.schemas.slo import Slo

if TYPE_CHECKING:
    from llmbench.schemas.records import RequestRecord


# A level's row, every figure its metric class's (analysis.metrics.types), in the order its columns
# have always had (the Parquet files and the warehouse keep it). A class reads the row so far: the
# client's saturation is judged on its CPU and lag.
LEVEL_ROW: tuple[type[LevelBased], ...] = (
    RequestsAttempted,
    RequestsOk,
    RequestsFailed,
    ErrorRate,
    ErrorsByKind,
    WindowS,
    OutputTokensTotal,
    OutputTokensPerS,
    RequestsPerS,
    InputTokensMean,
    OutputTokensMean,
    InputTokensClientMinusServerMean,
    AchievedConcurrency,
    ClientCpuPct,
    SendsRetried,
    TtftMs,
    ItlMs,
    ChunkGapMs,
    ChunkTokens,
    TpotMs,
    E2eMs,
    SendLagMs,
    SendLateness,
    ClientRunqueuePct,
    ClientStarved,
    ClientSaturated,
    SteadyState,
    Goodput,
)


def summarize_level(
    records: Sequence[RequestRecord],
    concurrency: int,
    slo_ttft_ms: float | None = None,
    slo_tpot_ms: float | None = None,
    client_cpu_s: float | None = None,
    slo: Slo | None = None,
    client_runqueue_s: float | None = None,
) -> dict[str, Any]:
    """One level's row from its request records (records.RequestRecord, built by wire.build_record).

    window_s: first send -> last completion over every attempted request (summed over the
    level's repeats: the pauses between repeats are nobody's throughput). Throughputs count
    successful requests only. achieved_concurrency: sum of request durations / window, evidence
    that the client really held the level's concurrency. With an SLO (`slo`, or the old form's
    slo_ttft_ms and slo_tpot_ms): goodput (goodput_rps, goodput_output_tokens_per_s) and whether the
    level's latencies meet every objective (slo_latency_met; the error bound is level_meets_slo's).
    client_runqueue_s: how long the client's event loop waited for a core during the level
    (driver.thread_runqueue_s; None: not measured), which tells a starved client from a saturated one.
    """
    if slo is None and slo_ttft_ms is not None and slo_tpot_ms is not None:
        slo = Slo(ttft_ms=slo_ttft_ms, tpot_ms=slo_tpot_ms)
    level = Level.of(records, client_cpu_s, client_runqueue_s, slo)
    row: dict[str, Any] = {"concurrency": concurrency}
    for metric in LEVEL_ROW:
        row.update(metric.values(level, row))
    return row


def steady_state(records: Sequence[RequestRecord]) -> dict[str, Any]:
    """The level without its ramp-up and tail (types.throughput.SteadyState, which defines it)."""
    return SteadyState.compute(Level.of(records), {})


def schedule_output_tokens_per_s(concurrency: int, ttft_ms: float, itl_ms: float, output_tokens: int) -> float:
    """The ideal throughput of a closed loop: `concurrency` streams against a server with a fixed
    TTFT T, inter-token latency I and N output tokens per request, every stream sending its next
    request the instant its previous one ended: C * N / (T + (N - 1) * I), in tokens per second."""
    if concurrency < 1 or output_tokens < 1 or ttft_ms < 0 or itl_ms < 0 or ttft_ms + itl_ms <= 0:
        raise ValueError("concurrency and output_tokens must be >= 1, ttft_ms and itl_ms >= 0, not both 0")
    return concurrency * output_tokens / ((ttft_ms + (output_tokens - 1) * itl_ms) / 1000.0)


def schedule_deficit_pct(achieved: float | None, ideal: float) -> float | None:
    """How far below the schedule's ideal an achieved throughput stayed, in percent of the ideal
    (negative: above it)."""
    if achieved is None or ideal <= 0:
        return None
    return 100.0 * (1.0 - achieved / ideal)


def turnaround_ms(records: Iterable[Any]) -> list[float]:
    """A closed loop's turnaround: for each stream (records with the same repeat and worker >= 0;
    open-loop records, worker -1, have no stream), its requests in send order, and for each
    consecutive pair the time from the completion of one (end_ns) to the send of the next
    (send_ns), in ms. What the client spends turning a finished request into the next one: a
    schedule's ideal throughput assumes 0. Takes anything with repeat, worker, send_ns and end_ns
    (RequestRecord, or a namespace over a requests.jsonl row)."""
    streams: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for r in records:
        if r.worker is None or r.worker < 0:
            continue
        streams.setdefault((r.repeat or 0, r.worker), []).append((r.send_ns, r.end_ns))
    gaps: list[float] = []
    for reqs in streams.values():
        reqs.sort()
        gaps.extend((nxt[0] - prev[1]) / NS_PER_MS for prev, nxt in zip(reqs, reqs[1:], strict=False))
    return gaps


def offered_load(
    records: Sequence[Any],
    concurrency: int,
    ttft_ms: float,
    itl_ms: float,
    output_tokens: int,
    achieved_output_tokens_per_s: float | None,
    achieved_concurrency: float | None = None,
) -> dict[str, Any]:
    """A closed-loop level held against its schedule: the ideal throughput
    (schedule_output_tokens_per_s), the achieved one, the deficit in percent
    (schedule_deficit_pct), the achieved concurrency, and the turnaround's p50, p99 and max in ms
    (turnaround_ms; None when no stream sent twice)."""
    ideal = schedule_output_tokens_per_s(concurrency, ttft_ms, itl_ms, output_tokens)
    gaps = np.asarray(turnaround_ms(records), dtype=float)
    p50, p99, top = (
        (float(np.percentile(gaps, 50)), float(np.percentile(gaps, 99)), float(gaps.max()))
        if gaps.size
        else (None, None, None)
    )
    return {
        "schedule_output_tokens_per_s": ideal,
        "output_tokens_per_s": achieved_output_tokens_per_s,
        "schedule_deficit_pct": schedule_deficit_pct(achieved_output_tokens_per_s, ideal),
        "achieved_concurrency": achieved_concurrency,
        "turnaround_ms_p50": p50,
        "turnaround_ms_p99": p99,
        "turnaround_ms_max": top,
        "turnarounds": int(gaps.size),
    }


def knee_concurrency(levels: Sequence[dict[str, Any]], fraction: float = 0.9) -> int | None:
    """The knee of the latency-throughput curve: the lowest concurrency that reaches `fraction` of
    the best output throughput. Beyond it, more concurrency buys mostly latency."""
    rated = [
        (lv["concurrency"], lv["output_tokens_per_s"])
        for lv in levels
        if lv.get("output_tokens_per_s") is not None and lv["output_tokens_per_s"] == lv["output_tokens_per_s"]
    ]
    if not rated:
        return None
    best = max(tps for _, tps in rated)
    return min(c for c, tps in rated if tps >= fraction * best)


def latency_knee_concurrency(levels: Sequence[dict[str, Any]], metric: str = "e2e_ms_p90") -> int | None:
    """Seed 003's knee: the level past which latency starts to grow faster than throughput. Over
    the levels in order of concurrency, the first step whose relative p90 latency growth exceeds
    its relative output-throughput growth (L1/L0 - 1 > T1/T0 - 1); the knee is the concurrency
    before that step. None when no step does (or with fewer than two rated levels)."""
    rated: list[tuple[int, float, float]] = sorted(
        (lv["concurrency"], float(lv["output_tokens_per_s"]), float(lv[metric]))
        for lv in levels
        if lv.get("output_tokens_per_s") and lv.get(metric) and lv[metric] == lv[metric]
    )
    for (c0, t0, l0), (_, t1, l1) in zip(rated, rated[1:], strict=False):
        if l1 / l0 - 1 > t1 / t0 - 1:
            return int(c0)
    return None


def latency_degradation(levels: Sequence[dict[str, Any]], metric: str = "e2e_ms_p50") -> float | None:
    """How much slower a request gets from the lowest to the highest concurrency (seed 002's
    table): metric at the highest level / at the lowest - 1 (0.5 = 50 % slower). None with
    fewer than two levels or a missing value."""
    rated = sorted((lv["concurrency"], lv.get(metric)) for lv in levels)
    if len(rated) < 2 or not rated[0][1] or rated[-1][1] is None or rated[-1][1] != rated[-1][1]:
        return None
    return rated[-1][1] / rated[0][1] - 1


# Student's t, two-sided 95 %, by degrees of freedom (repeats - 1); beyond 30, the normal's 1.96.
_T95 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    11: 2.201,
    12: 2.179,
    13: 2.160,
    14: 2.145,
    15: 2.131,
    16: 2.120,
    17: 2.110,
    18: 2.101,
    19: 2.093,
    20: 2.086,
    25: 2.060,
    30: 2.042,
}


def confidence_interval(values: Sequence[float | None]) -> tuple[float | None, float | None]:
    """95 % confidence interval of the mean of repeated measurements (Student's t): (low, high),
    or (None, None) with fewer than two values."""
    vals = [v for v in values if v is not None and v == v]
    if len(vals) < 2:
        return None, None
    arr = np.asarray(vals, dtype=float)
    df = len(arr) - 1
    t = _T95.get(df) or (1.96 if df > 30 else _T95[max(k for k in _T95 if k <= df)])
    half = t * arr.std(ddof=1) / np.sqrt(len(arr))
    return float(arr.mean() - half), float(arr.mean() + half)


def total_tokens_per_s(level: dict[str, Any]) -> float | None:
    """Input + output tokens per second: output tok/s + mean input tokens x successful requests/s.
    None where the level produced no output throughput."""
    out_tps = level.get("output_tokens_per_s")
    if not out_tps:
        return None
    return out_tps + (level.get("input_tokens_mean") or 0) * (level.get("requests_per_s") or 0)


def input_tokens_per_output_token(level: dict[str, Any]) -> float | None:
    """The level's measured input:output ratio: mean input tokens / mean output tokens per
    successful request (what a per-token price is blended at). None where either is unknown."""
    in_mean, out_mean = level.get("input_tokens_mean"), level.get("output_tokens_mean")
    if not in_mean or not out_mean or in_mean != in_mean or out_mean != out_mean:  # None, 0 or NaN
        return None
    return float(in_mean) / float(out_mean)


def decode_tokens_per_s_per_stream(tpot_ms_p50: float | None) -> float | None:
    """One stream's decode rate: 1000 / median time per output token."""
    return 1000 / tpot_ms_p50 if tpot_ms_p50 else None


def shared_prefix_fraction(shared_prefix_tokens: int, other_input_tokens_mean: float) -> float | None:
    """The fraction of a request's input tokens that are a shared prefix (workload.shared_prefix_tokens
    over the whole prompt): what prefix caching can at best skip. None without a prompt."""
    total = shared_prefix_tokens + other_input_tokens_mean
    return shared_prefix_tokens / total if total > 0 else None


def trace_shared_fraction(
    hash_ids: Sequence[Sequence[int]], input_lengths: Sequence[int], block_tokens: int
) -> float | None:
    """A trace's shared fraction of input tokens: the tokens of blocks (hash ids) an earlier request
    of the trace already sent, over all input tokens (each request's blocks cut to its length)."""
    seen: set[int] = set()
    shared = total = 0
    for ids, n in zip(hash_ids, input_lengths, strict=True):
        total += n
        left = n
        for h in ids:
            if left <= 0:
                break
            take = min(block_tokens, left)
            if h in seen:
                shared += take
            seen.add(h)
            left -= take
    return shared / total if total else None
