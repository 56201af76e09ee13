"""The one set of metric definitions (docs/metrics.md describes them). Everything else calls these.

Per request: `request_timings` turns raw monotonic timestamps (time.perf_counter_ns, taken in the
hot path) into ttft / itl / tpot / e2e. Per level: `summarize_level` reduces one list of request
records into one row, in the spirit of vLLM's benchmarks/serve.py: all level metrics computed in
one function over one list.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from llmbench.schemas.slo import Slo

if TYPE_CHECKING:
    from llmbench.schemas.records import RequestRecord

PERCENTILES = (50, 90, 95, 99)
DISTRIBUTIONS = ("ttft_ms", "itl_ms", "chunk_gap_ms", "tpot_ms", "e2e_ms")
ERROR_KINDS = (
    "http_status",
    "timeout",
    "connection",
    "stream_error",
    "malformed_chunk",
    "empty_response",
    "truncated",
    "throttled",  # the service refused for rate (a per-token API: HTTP 429 or a throttling frame)
    "response_too_large",  # the response brought more than the workload's max_response_bytes
    "implausible_usage",  # reported token counts that cannot be true (wire.check_usage); fails validation
)
NS_PER_MS = 1_000_000
# A level's client is saturated when its load generator could not keep up: its processes kept the
# cores they may use busy, or free workers waited to send. Such a level measured the client, not
# the server, and validation fails it. 70 %, not 100 %: client CPU counts the record builder,
# which runs at idle priority, and make bench (benchmarks/results/client_fidelity.md) saw the
# timings hold at 25-55 % and drift once client and server together filled both cores (1024
# streams).
CLIENT_CPU_SATURATED_PCT = 70.0
# Send lateness splits in two (records.stream_wait_ms): the wait for a free stream (every one of
# an open-loop level's max_in_flight busy: the server's pace held the arrival, so the level was
# not offered as scheduled, `in_flight_capped`) and the client's own lag after a stream was free.
# Only the client's own lag can mean a saturated client.
SEND_LAG_SATURATED_MS_P99 = 10.0
IN_FLIGHT_CAPPED_MS_P99 = 10.0
# A client that waited for a core (the kernel's run-queue wait of its event loop's thread) at
# least as long as it ran was starved by the work beside it (on one machine: the server it
# measures), not saturated by its own: its lateness is the machine's, its own CPU is idle, and
# more load would not be its limit. Up to STARVED_LAG_MS_P99_MAX such lateness is excused (a few
# ms against the hundreds a TTFT SLO is written in); beyond it the level is saturated all the same.
STARVED_RUNQUEUE_PER_CPU = 1.0
STARVED_LAG_MS_P99_MAX = 100.0


def request_timings(
    send_ns: int, content_ns: Sequence[int], end_ns: int, output_tokens: int, chunk_ns: Sequence[int] | None = None
) -> dict[str, Any]:
    """ttft_ms: send -> first content chunk; itl_ms: every gap between consecutive chunks that
    carried tokens (chunk_ns; by default the content chunks), the inter-chunk gap, not yet per
    token (per_token_itl_ms); e2e_ms: send -> last byte; tpot_ms: (e2e - ttft) / (output_tokens - 1),
    None for one token: the per-token mean whatever the chunks carried."""
    e2e_ms = (end_ns - send_ns) / NS_PER_MS
    if not content_ns:
        return {"ttft_ms": None, "itl_ms": [], "tpot_ms": None, "e2e_ms": e2e_ms}
    ttft_ms = (content_ns[0] - send_ns) / NS_PER_MS
    arrivals = content_ns if chunk_ns is None else chunk_ns
    itl_ms = [(b - a) / NS_PER_MS for a, b in zip(arrivals, arrivals[1:], strict=False)]
    tpot_ms = (e2e_ms - ttft_ms) / (output_tokens - 1) if output_tokens > 1 else None
    return {"ttft_ms": ttft_ms, "itl_ms": itl_ms, "tpot_ms": tpot_ms, "e2e_ms": e2e_ms}


def per_token_itl_ms(chunk_gap_ms: Sequence[float], chunk_tokens: Sequence[int]) -> list[float]:
    """Per-token inter-token latency of one request: each inter-chunk gap shared by the k tokens
    of the chunk that ended it, gap / k, once per token (a k-token chunk is k tokens that each
    took gap / k, not one token that took the gap; vllm-project/vllm#35471 is that mistake for
    throughput). chunk_tokens: the tokens of every chunk, the first included (RequestRecord);
    empty: one each (a record without per-chunk counts)."""
    if len(chunk_tokens) == 0:  # len: a list, or an array read back from Parquet
        return list(chunk_gap_ms)
    out: list[float] = []
    for gap_ms, k in zip(chunk_gap_ms, chunk_tokens[1:], strict=False):
        if k > 0:
            out.extend([gap_ms / k] * k)
    return out


def chunk_tokens_of(r: RequestRecord) -> list[int]:
    """The tokens each chunk behind r.itl_ms carried: r.chunk_tokens, or one each for a record
    without them."""
    return list(r.chunk_tokens) if len(r.chunk_tokens) else [1] * (len(r.itl_ms) + 1)


def distribution(values: Iterable[float | None], name: str) -> dict[str, float | None]:
    """p50/p90/p95/p99 (linear interpolation), mean, min, max of the non-missing values."""
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    keys = [f"{name}_p{p}" for p in PERCENTILES] + [f"{name}_{s}" for s in ("mean", "min", "max")]
    if arr.size == 0:
        return dict.fromkeys(keys)
    pct = np.percentile(arr, PERCENTILES)
    out: dict[str, float | None] = {f"{name}_p{p}": float(v) for p, v in zip(PERCENTILES, pct, strict=True)}
    out.update({f"{name}_mean": float(arr.mean()), f"{name}_min": float(arr.min()), f"{name}_max": float(arr.max())})
    return out


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
    attempted = len(records)
    ok = [r for r in records if r.ok]
    failed = attempted - len(ok)
    window_s = sum((max(r.end_ns for r in rep) - min(r.send_ns for r in rep)) / 1e9 for rep in _by_repeat(records))
    out_tokens = sum(r.output_tokens for r in ok)
    busy_s = sum((r.end_ns - r.send_ns) / 1e9 for r in records)

    row: dict[str, Any] = {
        "concurrency": concurrency,
        "requests_attempted": attempted,
        "requests_ok": len(ok),
        "requests_failed": failed,
        "error_rate": failed / attempted if attempted else None,
        "errors_by_kind": json.dumps(dict(Counter(r.error_kind for r in records if not r.ok))),
        "window_s": window_s,
        "output_tokens_total": out_tokens,
        "output_tokens_per_s": out_tokens / window_s if window_s > 0 else None,
        "requests_per_s": len(ok) / window_s if window_s > 0 else None,
        "input_tokens_mean": float(np.mean([r.input_tokens for r in ok if r.input_tokens is not None]))
        if any(r.input_tokens is not None for r in ok)
        else None,
        "output_tokens_mean": out_tokens / len(ok) if ok else None,
        "input_tokens_client_minus_server_mean": input_tokens_client_minus_server_mean(ok),
        "achieved_concurrency": busy_s / window_s if window_s > 0 else None,
        "client_cpu_pct": 100.0 * client_cpu_s / window_s if client_cpu_s is not None and window_s > 0 else None,
        # sends repeated on a fresh connection because the server had closed the reused one
        "sends_retried": sum(1 for r in records if r.send_retried),
    }
    row.update(distribution((r.ttft_ms for r in ok), "ttft_ms"))
    row.update(distribution((itl for r in ok for itl in per_token_itl_ms(r.itl_ms, r.chunk_tokens)), "itl_ms"))
    row.update(distribution((gap for r in ok for gap in r.itl_ms), "chunk_gap_ms"))
    row.update(chunk_tokens_level(ok))
    row.update(distribution((r.tpot_ms for r in ok), "tpot_ms"))
    row.update(distribution((r.e2e_ms for r in ok), "e2e_ms"))
    row.update(distribution((r.send_lag_ms for r in records), "send_lag_ms"))
    row.update(send_lateness_split(records))
    row["client_runqueue_pct"] = (
        100.0 * client_runqueue_s / window_s if client_runqueue_s is not None and window_s > 0 else None
    )
    row["client_starved"] = client_starved(client_runqueue_s, client_cpu_s)
    row["client_saturated"] = client_saturated(row["client_cpu_pct"], row["client_lag_ms_p99"], row["client_starved"])
    row.update(steady_state(records))
    if slo is None and slo_ttft_ms is not None and slo_tpot_ms is not None:
        slo = Slo(ttft_ms=slo_ttft_ms, tpot_ms=slo_tpot_ms)
    row.update(goodput(records, window_s, slo))
    return row


def goodput(records: Sequence[RequestRecord], window_s: float, slo: Slo | None) -> dict[str, Any]:
    """Goodput as DistServe and vLLM's `--goodput` define it: the requests that met every
    objective of the SLO (request_meets_slo) per second of the level's window, and their output
    tokens per second; and slo_latency_met, whether the level's own percentiles meet every
    objective (latency_objectives_met). All None without an SLO or a window."""
    keys = ("goodput_rps", "goodput_output_tokens_per_s", "slo_latency_met")
    if slo is None or window_s <= 0:
        return dict.fromkeys(keys)
    good = [r for r in records if request_meets_slo(r, slo)]
    return {
        "goodput_rps": len(good) / window_s,
        "goodput_output_tokens_per_s": sum(r.output_tokens for r in good) / window_s,
        "slo_latency_met": latency_objectives_met(records, slo),
    }


def _request_values(record: RequestRecord, metric: str) -> list[float]:
    """One request's values of an SLO metric: its ttft, tpot or e2e (one value, none where
    undefined), or its per-token inter-token latencies (itl: per_token_itl_ms, as the level's itl_ms_*)."""
    if metric == "itl":
        return per_token_itl_ms(record.itl_ms, record.chunk_tokens)
    v = getattr(record, f"{metric}_ms")
    return [] if v is None else [float(v)]


def request_meets_slo(record: RequestRecord, slo: Slo) -> bool:
    """A successful request within every objective of the SLO, each judged on the request's own
    value (vLLM's goodput: ttft, tpot, e2e per request); an ITL objective on the objective's
    percentile of the request's own gaps. A value the request does not have (tpot of a one-token
    answer, ITL of a one-chunk one) does not count against it; a request with no first token fails."""
    if not record.ok or record.ttft_ms is None:
        return False
    for o in slo.objectives_list():
        vals = _request_values(record, o.metric)
        if not vals:
            continue
        v = vals[0] if len(vals) == 1 else float(np.percentile(vals, o.percentile))
        if v > o.max_ms:
            return False
    return True


def latency_objectives_met(records: Sequence[RequestRecord], slo: Slo) -> bool | None:
    """Whether a level's latencies meet every objective: for each, the objective's percentile
    (linear interpolation, as distribution) of the metric over the level's successful requests
    (ITL: over all their gaps) is at most its threshold. None when no request succeeded."""
    ok = [r for r in records if r.ok]
    if not ok:
        return None
    for o in slo.objectives_list():
        vals = [v for r in ok for v in _request_values(r, o.metric)]
        if not vals:
            if o.metric == "ttft":  # every successful request had no first token: nothing met it
                return False
            continue
        if float(np.percentile(np.asarray(vals, dtype=float), o.percentile)) > o.max_ms:
            return False
    return True


def chunk_tokens_level(ok: Sequence[RequestRecord]) -> dict[str, Any]:
    """How many tokens a level's chunks carried (successful requests): tokens_per_chunk_mean and
    _max, multi_token_chunk_frac (the chunks carrying more than one), and chunk_tokens_source:
    how they were counted (usage: per-chunk usage; content: one per content chunk; mixed)."""
    counts = [k for r in ok for k in chunk_tokens_of(r)]
    sources = sorted({r.chunk_tokens_source for r in ok})
    if not counts:
        return {"tokens_per_chunk_mean": None, "tokens_per_chunk_max": None, "multi_token_chunk_frac": None,
                "chunk_tokens_source": None}  # fmt: skip
    return {
        "tokens_per_chunk_mean": sum(counts) / len(counts),
        "tokens_per_chunk_max": max(counts),
        "multi_token_chunk_frac": sum(1 for k in counts if k > 1) / len(counts),
        "chunk_tokens_source": sources[0] if len(sources) == 1 else "mixed",
    }


def input_tokens_client_minus_server_mean(records: Sequence[RequestRecord]) -> float | None:
    """Mean of (the client's count of a prompt with the served model's tokenizer - the server's
    reported usage.prompt_tokens) over the records that have both: how far the sizing missed;
    None when no prompt was counted (words ~ tokens) or no usage was reported."""
    diffs = [
        r.input_tokens_client - r.input_tokens
        for r in records
        if r.input_tokens_client is not None and r.input_tokens is not None
    ]
    return float(np.mean(diffs)) if diffs else None


def _by_repeat(records: Sequence[RequestRecord]) -> list[list[RequestRecord]]:
    groups: dict[int, list[RequestRecord]] = {}
    for r in records:
        groups.setdefault(r.repeat or 0, []).append(r)
    return list(groups.values())


def steady_state(records: Sequence[RequestRecord]) -> dict[str, Any]:
    """The level without its ramp-up and tail. Ramp-up: until the first request completes, every
    stream is still in its first request, all sent at once. Tail: after the last request was sent,
    streams only drain. Between the two the closed loop holds its concurrency; over that window
    (each repeat's, summed): output tokens whose chunk arrived inside it (a chunk counts the
    tokens per-chunk usage gave it, else output_tokens / chunks of its request's tokens) per
    second, and TTFT of the requests sent inside it. None when the level was too short to have such a window."""
    keys = ("steady_window_s", "steady_requests", "steady_output_tokens_per_s", "steady_ttft_ms_p50")
    tokens, window_s, inside = 0.0, 0.0, []
    for rep in _by_repeat(records):
        ok = [r for r in rep if r.ok and r.first_content_ns is not None]
        start_ns = min(r.end_ns for r in rep)
        end_ns = max(r.send_ns for r in rep)
        if not ok or end_ns <= start_ns:
            continue
        for r in ok:
            chunk_ns: list[float] = [float(r.first_content_ns or 0)]  # ok: every r has a first chunk
            for gap_ms in r.itl_ms:
                chunk_ns.append(chunk_ns[-1] + gap_ms * NS_PER_MS)
            if r.chunk_tokens_source == "usage":  # each chunk's own count
                tokens += sum(k for t, k in zip(chunk_ns, r.chunk_tokens, strict=False) if start_ns <= t <= end_ns)
            else:
                per_chunk = r.output_tokens / max(1, len(chunk_ns))
                tokens += per_chunk * sum(1 for t in chunk_ns if start_ns <= t <= end_ns)
        inside += [r for r in ok if start_ns <= r.send_ns <= end_ns]
        window_s += (end_ns - start_ns) / 1e9
    if window_s <= 0:
        return dict.fromkeys(keys)
    return {
        "steady_window_s": window_s,
        "steady_requests": len(inside),
        "steady_output_tokens_per_s": tokens / window_s,
        "steady_ttft_ms_p50": distribution((r.ttft_ms for r in inside), "ttft_ms")["ttft_ms_p50"],
    }


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


def send_lateness_split(records: Sequence[RequestRecord]) -> dict[str, Any]:
    """A level's send lateness in its two parts: stream_wait_ms_p99 (arrivals held with every
    stream busy: the in-flight cap, the server's pace), client_lag_ms_p99 (send lag less that wait:
    the client's own), and in_flight_capped (the cap held arrivals back: not offered as scheduled)."""
    if not records:
        return {"client_lag_ms_p99": None, "stream_wait_ms_p99": None, "in_flight_capped": False}
    waits = np.asarray([r.stream_wait_ms for r in records], dtype=float)
    own = np.asarray([r.send_lag_ms for r in records], dtype=float) - waits
    wait_p99 = float(np.percentile(waits, 99))
    return {
        "client_lag_ms_p99": float(np.percentile(np.maximum(own, 0.0), 99)),
        "stream_wait_ms_p99": wait_p99,
        "in_flight_capped": wait_p99 > IN_FLIGHT_CAPPED_MS_P99,
    }


def client_starved(client_runqueue_s: float | None, client_cpu_s: float | None) -> bool:
    """True when the client's event loop waited for a core at least as long as the client ran
    (STARVED_RUNQUEUE_PER_CPU): the work beside it, not its own, held it back."""
    if client_runqueue_s is None or client_cpu_s is None:
        return False
    return client_runqueue_s >= STARVED_RUNQUEUE_PER_CPU * client_cpu_s and client_runqueue_s > 0


def client_saturated(client_cpu_pct: float | None, client_lag_ms_p99: float | None, starved: bool = False) -> bool:
    """True when the load generator, not the server, may have set the pace of a level: it kept
    its cores busy, or it sent late with a stream free (its own lag, not the in-flight cap's wait)
    and was not merely starved of a core by the work beside it (up to STARVED_LAG_MS_P99_MAX)."""
    if client_cpu_pct is not None and client_cpu_pct >= CLIENT_CPU_SATURATED_PCT:
        return True
    if client_lag_ms_p99 is None or client_lag_ms_p99 <= SEND_LAG_SATURATED_MS_P99:
        return False
    return not starved or client_lag_ms_p99 > STARVED_LAG_MS_P99_MAX


def meets_slo(record: RequestRecord, slo_ttft_ms: float, slo_tpot_ms: float) -> bool:
    """A successful request whose ttft and tpot are both within the SLO (tpot of a one-token
    answer is undefined and does not count against it)."""
    return (
        record.ok
        and record.ttft_ms is not None
        and record.ttft_ms <= slo_ttft_ms
        and (record.tpot_ms is None or record.tpot_ms <= slo_tpot_ms)
    )


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


def speculative_speedup(with_speculation: float | None, without: float | None) -> float | None:
    """Speed-up of speculative decoding at one concurrency (seed 002's EAGLE3 figures): a figure
    (tok/s or requests/s) of the target with speculation / the same figure of the target that
    differs only in having none (1.9 = 90 % faster). None where either is unknown or zero."""
    if not with_speculation or not without:
        return None
    return with_speculation / without


def spec_decode_acceptance_rate(accepted_tokens: float | None, draft_tokens: float | None) -> float | None:
    """Speculative decoding's acceptance rate over a level: the draft tokens the target model
    accepted / the draft tokens proposed (vLLM's counters, their increase over the level). None
    without draft tokens (no speculation happened) or where either is unknown."""
    if accepted_tokens is None or not draft_tokens or draft_tokens < 0:
        return None
    return accepted_tokens / draft_tokens


def spec_decode_level(
    before: dict[str, float] | None, after: dict[str, float] | None, note: str | None = None
) -> dict[str, Any]:
    """A level's speculative-decoding columns from the server's counters read just before and just
    after it ({"accepted_tokens", "draft_tokens"}, cumulative): their increases, the acceptance rate
    (spec_decode_acceptance_rate) and, where the rate is NULL, why (`note`: the reader's reason
    when either reading is missing; no draft tokens; counters that went backwards, i.e. the server
    restarted during the level)."""
    keys = ("spec_decode_draft_tokens", "spec_decode_accepted_tokens", "spec_decode_acceptance_rate")
    if before is None or after is None:
        return {**dict.fromkeys(keys), "spec_decode_note": note or "the server's counters were not read"}
    draft = after["draft_tokens"] - before["draft_tokens"]
    accepted = after["accepted_tokens"] - before["accepted_tokens"]
    if draft < 0 or accepted < 0:
        return {**dict.fromkeys(keys), "spec_decode_note": "the counters went backwards: the server restarted"}
    rate = spec_decode_acceptance_rate(accepted, draft)
    return {
        "spec_decode_draft_tokens": draft,
        "spec_decode_accepted_tokens": accepted,
        "spec_decode_acceptance_rate": rate,
        "spec_decode_note": None if rate is not None else "no draft tokens during the level: no speculative decoding",
    }


@dataclass(frozen=True)
class ServerReading:
    """One reading of a vLLM server's Prometheus page (backends.servermetrics reads it): the
    gauges at that moment and the counters since the server started. None: the page lacks it
    (an older vLLM)."""

    requests_running: float | None
    requests_waiting: float | None
    kv_cache_usage_frac: float | None  # vllm:kv_cache_usage_perc, a fraction in [0, 1] despite its name
    prefix_cache_queries_tokens: float | None
    prefix_cache_hits_tokens: float | None
    prompt_tokens_cached: float | None
    queue_time_s_sum: float | None
    queue_time_count: float | None


SERVER_METRIC_COLUMNS = (
    "server_requests_running_mean",
    "server_requests_running_max",
    "server_requests_waiting_mean",
    "server_requests_waiting_max",
    "server_kv_cache_usage_frac_mean",
    "server_kv_cache_usage_frac_max",
    "prefix_cache_hit_rate",
    "prefix_cache_hits_tokens",
    "prompt_tokens_cached",
    "server_queue_time_ms_mean",
    "server_metrics_samples",
    "server_metrics_note",
)


def _increase(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else after - before


def server_metrics_level(
    before: ServerReading | None, after: ServerReading | None, samples: Sequence[ServerReading], note: str | None
) -> dict[str, Any]:
    """A level's server-side columns from vLLM's /metrics: the gauges (requests running and
    waiting, KV-cache usage) as mean and max over the readings taken while the level ran
    (`samples`, about two a second), and the counters' increases between the readings just
    before and just after it: the prefix-cache hit rate (hit tokens / queried tokens), prompt
    tokens served from the cache, the mean queue time of the requests that left the queue. NULL
    with the reason (`note`) where the path has no metrics page or it did not answer; counters
    that went backwards (a restart) give NULL counter columns."""
    out: dict[str, Any] = dict.fromkeys(SERVER_METRIC_COLUMNS)
    if before is None or after is None:
        out["server_metrics_samples"] = 0
        out["server_metrics_note"] = note or "the server's /metrics was not read"
        return out
    readings = [before, *samples, after]
    for name, field in (
        ("server_requests_running", "requests_running"),
        ("server_requests_waiting", "requests_waiting"),
        ("server_kv_cache_usage_frac", "kv_cache_usage_frac"),
    ):
        values = [v for r in readings if (v := getattr(r, field)) is not None]
        if values:
            out[f"{name}_mean"], out[f"{name}_max"] = float(np.mean(values)), float(max(values))
    queries = _increase(before.prefix_cache_queries_tokens, after.prefix_cache_queries_tokens)
    hits = _increase(before.prefix_cache_hits_tokens, after.prefix_cache_hits_tokens)
    cached = _increase(before.prompt_tokens_cached, after.prompt_tokens_cached)
    queue_s = _increase(before.queue_time_s_sum, after.queue_time_s_sum)
    queued = _increase(before.queue_time_count, after.queue_time_count)
    if any(v is not None and v < 0 for v in (queries, hits, cached, queue_s, queued)):
        out["server_metrics_samples"] = len(readings)
        out["server_metrics_note"] = "the counters went backwards: the server restarted"
        return out
    out["prefix_cache_hits_tokens"] = hits
    out["prefix_cache_hit_rate"] = hits / queries if hits is not None and queries else None
    out["prompt_tokens_cached"] = cached
    out["server_queue_time_ms_mean"] = queue_s / queued * 1000 if queue_s is not None and queued else None
    out["server_metrics_samples"] = len(readings)
    return out


def time_to_ready_s(events: Sequence[dict[str, Any]]) -> float | None:
    """Cold start (seed 003, seed 001's ~9 min to InService): seconds from the deploy's create call
    to the first readiness look that found the endpoint ready, from a target's events.jsonl rows:
    the last `deploy` `created` event (a retried deploy: the attempt whose endpoint was used) gives
    `deployed_at`, the first `wait_ready` `succeeded` event after it gives the time. None where the
    deploy created nothing (`creates_endpoint` false: an endpoint that already ran, a per-token
    API), where it never became ready, or for events written before deploys recorded `created`."""
    from datetime import datetime

    created = max((i for i, e in enumerate(events) if e.get("stage") == "deploy" and e.get("status") == "created"),
                  default=None)  # fmt: skip
    if created is None or not events[created].get("creates_endpoint", True):
        return None
    ready = next(
        (e for e in events[created + 1 :] if e.get("stage") == "wait_ready" and e.get("status") == "succeeded"), None
    )
    deployed_at = events[created].get("deployed_at")
    if ready is None or not deployed_at:
        return None
    return (datetime.fromisoformat(ready["at"]) - datetime.fromisoformat(deployed_at)).total_seconds()


# The stages during which a billed endpoint is being measured: everything else it is up for
# (deploy, the wait until ready, validation, teardown, the executor's gaps between tasks) is overhead.
MEASURING_STAGES = ("warm_up", "quality", "sweep")


def measuring_seconds(events: Sequence[dict[str, Any]]) -> float | None:
    """Seconds a target's endpoint spent being measured (issue 45), from its events.jsonl rows: for
    each of MEASURING_STAGES, from its last `started` event before its last `succeeded` one to that
    success (a failed or superseded try was billed but measured nothing: overhead). None when none
    of them succeeded."""
    from datetime import datetime

    total, found = 0.0, False
    for name in MEASURING_STAGES:
        done = max(
            (i for i, e in enumerate(events) if e.get("stage") == name and e.get("status") == "succeeded"), default=None
        )
        if done is None:
            continue
        start = max(
            (i for i, e in enumerate(events[:done]) if e.get("stage") == name and e.get("status") == "started"),
            default=None,
        )
        if start is None:
            continue
        began, ended = datetime.fromisoformat(events[start]["at"]), datetime.fromisoformat(events[done]["at"])
        total += (ended - began).total_seconds()
        found = True
    return total if found else None


def measuring_fraction(measuring_s: float | None, endpoint_s: float | None) -> float | None:
    """The share of the billed endpoint time that was spent measuring (measuring_seconds over the
    endpoint's seconds from deploy to teardown): 1 - the overhead the user pays for. None without
    either figure (a per-token API bills no endpoint time)."""
    if measuring_s is None or endpoint_s is None or endpoint_s != endpoint_s or endpoint_s <= 0:
        return None
    return measuring_s / endpoint_s


def first_request_ttft_ms(records: Iterable[Any]) -> float | None:
    """TTFT of the first request a target served, cold caches and all (seed 003): of the records
    given (the target's first warm-up, else its first level), the one sent first (smallest
    send_ns); None if it failed (its error is in the records) or there is none."""
    first = min(records, key=lambda r: r.send_ns, default=None)
    if first is None or not first.ok:
        return None
    return first.ttft_ms


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


# ---- level verdicts and ceilings: one definition each, for the tables, the CLI and the report ----


def level_meets_slo(level: dict[str, Any], slo: Slo, max_error_rate: float) -> bool:
    """A level meets the SLO when its latencies meet every objective and its error rate is within
    the validation bound. (A level, not a request: see request_meets_slo for one request.) The
    latencies: the level's slo_latency_met (latency_objectives_met, computed from its records
    when the row was built with this SLO); for a row without it, each objective's
    `<metric>_ms_p<percentile>` column, and a percentile the row does not have fails."""
    latency = level.get("slo_latency_met")
    if latency is None or latency != latency:  # None or NaN: judge on the row's columns
        values = [level.get(f"{o.metric}_ms_p{o.percentile:g}") for o in slo.objectives_list()]
        latency = all(
            v is not None and v == v and v <= o.max_ms for v, o in zip(values, slo.objectives_list(), strict=True)
        )
    return bool(latency and (level.get("error_rate") or 0) <= max_error_rate)


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


GB_PER_GIB = 2**30 / 1e9  # 1.073741824: a GiB in GB (bandwidth is quoted in GB/s, file sizes in GiB)


def weight_gb_read_per_token(model: dict[str, Any], precision: str) -> float:
    """GB of weights one decode step reads per generated token at `precision`: the catalog's
    `weight_gib_read_per_token` where it states one (seed 001's Gemma 4 E2B: 6.32 GiB bf16, 2.85
    GiB int4, every stored weight, the embedding tables included), converted to GB; else active
    parameters x bytes per parameter (a MoE reads only its active experts; dense: all)."""
    stated = (model.get("weight_gib_read_per_token") or {}).get(precision)
    if stated is not None:
        return float(stated) * GB_PER_GIB
    return float(model["active_params_b"] * model["bytes_per_param"][precision])


def roofline_tokens_per_s(inst: dict[str, Any], model: dict[str, Any], precision: str, tp: int) -> float | None:
    """Single-stream decode ceiling: memory bandwidth / GB of weights read per token
    (weight_gb_read_per_token; tensor parallel ranks read their shards at the same time). None
    without a known bandwidth. Seed 001: an L4's 300 GB/s over 6.32 GiB of bf16 Gemma 4 E2B is
    44.2 tok/s (the article's ~47 divides GB/s by GiB), over 2.85 GiB of int4 98.0 (~105)."""
    if not inst.get("memory_bandwidth_gb_s"):
        return None
    return float(inst["memory_bandwidth_gb_s"] * max(tp, 1) / weight_gb_read_per_token(model, precision))


def roofline_efficiency(decode_tokens_per_s: float | None, roofline_tokens_per_s: float | None) -> float | None:
    """Measured single-stream decode rate / the bandwidth ceiling. None where either is unknown
    (a CPU target has no GPU roofline)."""
    if not decode_tokens_per_s or not roofline_tokens_per_s:
        return None
    return decode_tokens_per_s / roofline_tokens_per_s


def roofline_note(
    efficiency: float | None,
    speculative: bool = False,
    prefix_caching: bool = False,
    weights_not_read: str | None = None,
) -> str | None:
    """Why a level beat its bandwidth ceiling (efficiency above 1), from what the target was
    configured with: speculative decoding (several tokens per pass over the weights; seed 002's
    EAGLE3), the catalog counting weights a token does not read (`weights_not_read`, e.g. seed 001's
    per-layer embeddings, looked up one row per token), prefix caching or on-chip caches. None at
    or below 1 (or unknown): nothing to explain."""
    if efficiency is None or efficiency != efficiency or efficiency <= 1:
        return None
    causes = []
    if speculative:
        causes.append("speculative decoding (several tokens verified per pass over the weights)")
    if weights_not_read:
        causes.append(f"the catalog counts weights a token does not read ({weights_not_read})")
    if prefix_caching:
        causes.append("prefix caching (shorter prefills overlap fewer decode steps)")
    if not causes:
        causes.append("no configured cause: on-chip caches, or check the catalog's bandwidth and weight bytes")
    return f"efficiency {efficiency:.2f} above the bandwidth ceiling: likely " + "; ".join(causes)


# ---- correctness (llmbench.quality): one definition each ----------------------------------------


def suite_score(passed: int, n: int) -> float | None:
    """A quality suite's score: the fraction of its graded answers (items x runs) that passed."""
    return passed / n if n else None


def quality_score(suite_scores: list[float]) -> float | None:
    """A target's quality score: the mean of its scored suites (unsupported suites left out)."""
    return sum(suite_scores) / len(suite_scores) if suite_scores else None


def score_drop(baseline_score: float | None, score: float | None) -> float | None:
    """How far a suite's score falls below the baseline target's (negative: above it)."""
    return None if baseline_score is None or score is None else baseline_score - score


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


def offered_as_scheduled(send_lag_ms_p99: float | None, bound_ms: float) -> bool | None:
    """Whether an open-loop level went out on time: its send lateness (send lag: actual send minus
    scheduled, connecting excluded) p99 within the bound; None without a sent request."""
    return None if send_lag_ms_p99 is None else send_lag_ms_p99 <= bound_ms


Z_95 = 1.959963984540054  # the two-sided 95 % normal quantile


def wilson_interval(passed: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """A pass rate's 95 % Wilson score interval: unlike p +- z*sqrt(p(1-p)/n) it stays inside
    [0, 1] and is not zero-width at 0/n or n/n, which small suites hit often. None when n is 0."""
    if n <= 0:
        return None
    p = passed / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def detectable_drop(n: int, z: float = Z_95) -> float | None:
    """The smallest score drop a suite of n graded answers can tell from noise at 95 %: the
    worst-case (p = 0.5) half-width of the interval, z * 0.5 / sqrt(n). A one-point drop needs
    n of about 9,600; 35 answers see only drops above ~17 points."""
    return None if n <= 0 else z * 0.5 / n**0.5


def paired_drop(baseline: Sequence[bool], target: Sequence[bool], z: float = Z_95) -> tuple[float, float, float] | None:
    """The baseline's pass rate minus the target's on the SAME items (paired), with its 95 %
    interval: (drop, low, high). Pairing removes the items' own difficulty from the noise: only
    the discordant items count (b: baseline right and target wrong; c: the reverse); drop =
    (b - c) / n, standard error sqrt(b + c - (b - c)^2 / n) / n (the Wald interval of a paired
    difference). None without paired items."""
    if len(baseline) != len(target):
        raise ValueError(f"paired_drop: {len(baseline)} baseline answers but {len(target)} target answers")
    n = len(baseline)
    if n == 0:
        return None
    b = sum(1 for x, y in zip(baseline, target, strict=True) if x and not y)
    c = sum(1 for x, y in zip(baseline, target, strict=True) if y and not x)
    drop = (b - c) / n
    se = max(0.0, b + c - (b - c) ** 2 / n) ** 0.5 / n
    return drop, drop - z * se, drop + z * se
