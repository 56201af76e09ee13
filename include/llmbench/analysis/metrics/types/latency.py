"""Per-request latencies and sizes, each a distribution over a level's requests: TTFT, per-token
ITL, the inter-chunk gap, TPOT, end-to-end, the send lag, and the output token count; and how many
tokens the level's chunks carried."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from llmbench.analysis.metrics.requests import chunk_tokens_of, per_token_itl_ms
from llmbench.analysis.metrics.types.base import Level, LevelFigures, RequestMetric, register

if TYPE_CHECKING:
    from llmbench.schemas.records import RequestRecord

__all__ = ["ChunkGapMs", "ChunkTokens", "E2eMs", "ItlMs", "OutputTokens", "SendLagMs", "TpotMs", "TtftMs"]


@register
class TtftMs(RequestMetric):
    tag = "ttft_ms"
    header = "TTFT"
    unit = "ms"
    kind = "ms"
    definition = "request sent -> first chunk carrying generated content"
    not_null = True
    min_value = 0.0
    level_checked = True


@register
class ItlMs(RequestMetric):
    tag = "itl_ms"
    header = "ITL"
    unit = "ms"
    kind = "ms"
    definition = (
        "per-token inter-token latency: each inter-chunk gap / the k tokens of the chunk that ended it, k times"
    )
    in_table = False  # the requests table's itl_ms is each request's list of gaps
    level_checked = True

    @classmethod
    def sample(cls, r: RequestRecord) -> Iterable[float | None]:
        return per_token_itl_ms(r.itl_ms, r.chunk_tokens)


@register
class ChunkGapMs(RequestMetric):
    tag = "chunk_gap_ms"
    header = "Chunk gap"
    unit = "ms"
    kind = "ms"
    definition = "every gap between consecutive token-carrying chunks, as it is: what a client waits between two"
    in_table = False

    @classmethod
    def sample(cls, r: RequestRecord) -> Iterable[float | None]:
        return r.itl_ms


@register
class ChunkTokens(LevelFigures):
    tag = "chunk_tokens"
    header = "Tokens per chunk"
    unit = "tokens, fraction"
    definition = (
        "tokens per token-carrying chunk over the successful requests: mean, max, the fraction of chunks "
        "with more than one, and how they were counted (usage: per-chunk usage; content: one per content "
        "chunk; mixed)"
    )
    parts = {
        "tokens_per_chunk_mean": ("Tokens per chunk (mean)", "num"),
        "tokens_per_chunk_max": ("Tokens per chunk (max)", "int"),
        "multi_token_chunk_frac": ("Multi-token chunks", "pct"),
        "chunk_tokens_source": ("Chunk tokens counted from", "text"),
    }

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> dict[str, Any]:
        counts = [k for r in level.ok for k in chunk_tokens_of(r)]
        sources = sorted({r.chunk_tokens_source for r in level.ok})
        if not counts:
            return dict.fromkeys(cls.parts)
        return {
            "tokens_per_chunk_mean": sum(counts) / len(counts),
            "tokens_per_chunk_max": max(counts),
            "multi_token_chunk_frac": sum(1 for k in counts if k > 1) / len(counts),
            "chunk_tokens_source": sources[0] if len(sources) == 1 else "mixed",
        }


@register
class TpotMs(RequestMetric):
    tag = "tpot_ms"
    header = "TPOT"
    unit = "ms"
    kind = "ms"
    definition = "(e2e - ttft) / (output_tokens - 1): the per-token mean of the decode; none for one token"
    min_value = 0.0
    level_checked = True


@register
class E2eMs(RequestMetric):
    tag = "e2e_ms"
    header = "End-to-end"
    unit = "ms"
    kind = "ms"
    definition = "request sent -> last byte of the response"
    checked = "all"
    not_null = True
    min_value = 0.0
    level_checked = True


@register
class SendLagMs(RequestMetric):
    tag = "send_lag_ms"
    header = "Send lag"
    unit = "ms"
    kind = "ms"
    definition = (
        "how late the request left, connecting excluded (closed loop: from its worker being free; "
        "open: from its arrival time)"
    )
    over = "all"
    checked = "all"
    min_value = 0.0


@register
class OutputTokens(RequestMetric):
    tag = "output_tokens"
    header = "Output tokens"
    unit = "tokens"
    kind = "int"
    definition = "the server's usage count when it reports one, else the counted content chunks"
    min_value = 1.0
    stats = False  # a level has output_tokens_mean and output_tokens_total instead
