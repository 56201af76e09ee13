"""A level's rates over its window: the window itself, output tokens and requests per second, and
the concurrency the client really held."""

from __future__ import annotations

from typing import Any

from llmbench.analysis.metrics.types.base import Level, LevelMetric, register

__all__ = ["AchievedConcurrency", "OutputTokensPerS", "RequestsPerS", "WindowS"]


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
        return level.per_s(sum(r.output_tokens for r in level.ok))


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
