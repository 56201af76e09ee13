"""What a level delivered within its SLO: goodput (the requests that met every objective, per second,
and their output tokens per second) and whether the level's own percentiles met them. The rules are
metrics.slo's."""

from __future__ import annotations

from typing import Any

from llmbench.analysis.metrics.slo import goodput
from llmbench.analysis.metrics.types.base import Level, LevelFigures, register

__all__ = ["Goodput"]


@register
class Goodput(LevelFigures):
    tag = "goodput"
    header = "Goodput"
    unit = "requests/s, tokens/s"
    definition = (
        "the requests that met every objective of the SLO, each on its own value, per second of the window, "
        "their output tokens per second, and whether the level's percentiles met every objective (metrics.goodput)"
    )
    parts = {
        "goodput_rps": ("Goodput (req/s)", "rps"),
        "goodput_output_tokens_per_s": ("Goodput (output tok/s)", "tps"),
        "slo_latency_met": ("Latencies within the SLO", "bool"),
    }

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> dict[str, Any]:
        return goodput(level.records, level.window_s, level.slo)
