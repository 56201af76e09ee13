"""Per request: raw monotonic timestamps into ttft / itl / tpot / e2e (request_timings), per-token
ITL samples, and a distribution's percentiles (distribution)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

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
