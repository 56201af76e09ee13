"""What the server says and what the hardware allows: speculative decoding's acceptance and speedup,
the server's own counters over a level (ServerReading), and the memory-bandwidth roofline."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    pass


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
