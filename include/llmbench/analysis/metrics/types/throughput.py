"""A level's rates over its window: the window itself, output tokens and requests per second, the
concurrency the client really held, and the steady state without the ramp-up and the tail."""

from __future__ import annotations

from typing import Any

from llmbench.analysis.metrics.requests import NS_PER_MS, distribution
from llmbench.analysis.metrics.types.base import Level, LevelFigures, LevelMetric, by_repeat, register

__all__ = ["AchievedConcurrency", "OutputTokensPerS", "RequestsPerS", "SteadyState", "WindowS"]


@register
class WindowS(LevelMetric):
    tag = "window_s"
    header = "Window (s)"
    unit = "s"
    kind = "s"
    definition = "first send -> last completion over every attempted request, summed over the level's repeats"

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> float:
        return level.window_s


@register
class OutputTokensPerS(LevelMetric):
    tag = "output_tokens_per_s"
    header = "Output tok/s"
    unit = "tokens/s"
    kind = "tps"
    definition = "the output tokens of the successful requests / the window"
    not_null = True
    min_value = 0.0
    strict_min = True

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> float | None:
        return level.per_s(row["output_tokens_total"])  # OutputTokensTotal comes before it in the row


@register
class RequestsPerS(LevelMetric):
    tag = "requests_per_s"
    header = "Requests/s"
    unit = "requests/s"
    kind = "rps"
    definition = "successful requests / the window"

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> float | None:
        return level.per_s(len(level.ok))


@register
class AchievedConcurrency(LevelMetric):
    tag = "achieved_concurrency"
    header = "Achieved concurrency"
    unit = "requests"
    definition = "the attempted requests' durations, summed / the window: the concurrency the client really held"

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> float | None:
        return level.per_s(sum((r.end_ns - r.send_ns) / 1e9 for r in level.records))


@register
class SteadyState(LevelFigures):
    tag = "steady_state"
    header = "Steady state"
    unit = "s, requests, tokens/s, ms"
    definition = (
        "the level without its ramp-up (until the first completion) and tail (after the last send), "
        "each repeat's window summed: its length, the requests sent in it, output tokens per second "
        "whose chunk arrived in it, and TTFT p50 of the requests sent in it; null for a level too short"
    )
    parts = {
        "steady_window_s": ("Steady window (s)", "s"),
        "steady_requests": ("Steady requests", "int"),
        "steady_output_tokens_per_s": ("Steady output tok/s", "tps"),
        "steady_ttft_ms_p50": ("Steady TTFT p50 (ms)", "ms"),
    }

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> dict[str, Any]:
        # a chunk counts the tokens per-chunk usage gave it, else output_tokens / chunks of its request
        tokens, window_s, inside = 0.0, 0.0, []
        for rep in by_repeat(level.records):
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
            return dict.fromkeys(cls.parts)
        return {
            "steady_window_s": window_s,
            "steady_requests": len(inside),
            "steady_output_tokens_per_s": tokens / window_s,
            "steady_ttft_ms_p50": distribution((r.ttft_ms for r in inside), "ttft_ms")["ttft_ms_p50"],
        }
