"""A target's life around its levels, one row of the targets table each: how long its endpoint took
to be ready, the TTFT of the first request it served, and how much of its billed time went to
measuring. The computations are metrics.lifecycle's; `TargetLife` is what they read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llmbench.analysis.metrics.lifecycle import (
    first_request_ttft_ms,
    measuring_fraction,
    measuring_seconds,
    time_to_ready_s,
)
from llmbench.analysis.metrics.types.base import TargetMetric, register

__all__ = ["FirstRequestTtftMs", "MeasuringFraction", "MeasuringSeconds", "TargetLife", "TimeToReadyS"]


@dataclass(frozen=True)
class TargetLife:
    """What a target's lifecycle figures read: its events.jsonl rows, its billed endpoint seconds
    (teardown.json; None: none billed, or not torn down) and the records of the first request it
    served (its first warm-up, else its first level)."""

    events: Sequence[dict[str, Any]]
    endpoint_seconds: float | None = None
    first_records: Sequence[Any] = ()


@register
class MeasuringSeconds(TargetMetric):
    tag = "measuring_seconds"
    header = "Time measuring (s)"
    unit = "s"
    kind = "s"
    definition = "seconds the endpoint spent in a successful warm-up, quality or sweep try (metrics.measuring_seconds)"

    @classmethod
    def compute(cls, life: TargetLife, row: dict[str, Any]) -> float | None:
        return measuring_seconds(life.events)


@register
class MeasuringFraction(TargetMetric):
    tag = "measuring_fraction"
    header = "Time measuring"
    unit = "fraction"
    kind = "pct"
    definition = "measuring_seconds / the billed endpoint seconds: 1 - the overhead the user pays for"

    @classmethod
    def compute(cls, life: TargetLife, row: dict[str, Any]) -> float | None:
        return measuring_fraction(row["measuring_seconds"], life.endpoint_seconds)


@register
class TimeToReadyS(TargetMetric):
    tag = "time_to_ready_s"
    header = "Time to ready (s)"
    unit = "s"
    kind = "s"
    definition = (
        "the deploy's create call -> the first readiness look that found the endpoint ready (metrics.time_to_ready_s)"
    )

    @classmethod
    def compute(cls, life: TargetLife, row: dict[str, Any]) -> float | None:
        return time_to_ready_s(life.events)


@register
class FirstRequestTtftMs(TargetMetric):
    tag = "first_request_ttft_ms"
    header = "First-request TTFT (ms)"
    unit = "ms"
    kind = "ms"
    definition = "TTFT of the first request the target served, cold caches and all (metrics.first_request_ttft_ms)"

    @classmethod
    def compute(cls, life: TargetLife, row: dict[str, Any]) -> float | None:
        return first_request_ttft_ms(life.first_records)
