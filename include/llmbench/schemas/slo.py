"""The latency target a level is judged by: objectives the user defines (any of TTFT, TPOT, ITL
and end-to-end latency, each at a percentile from p50 to p99.9 with a threshold), all of which must
hold. The old form `slo: {ttft_ms, tpot_ms}` is kept: it means p90 TTFT and p90 TPOT."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["SLO_METRICS", "Objective", "Slo"]

SLO_METRICS = ("ttft", "tpot", "itl", "e2e")  # each names a distribution <metric>_ms of a level
SloMetric = Literal["ttft", "tpot", "itl", "e2e"]
PERCENTILE_MIN, PERCENTILE_MAX = 50.0, 99.9
DEFAULT_TTFT_MS, DEFAULT_TPOT_MS = 2000.0, 100.0  # the old form's defaults


class Objective(BaseModel):
    """One objective: the `percentile` of `metric` (in ms) at most `max_ms`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    metric: SloMetric
    percentile: float = 90.0
    max_ms: float = Field(gt=0)

    @field_validator("percentile")
    @classmethod
    def _percentile(cls, v: float) -> float:
        # p50-p99.9: below the median is not a latency target; above p99.9 a level's few hundred
        # requests cannot estimate it
        if not math.isfinite(v) or not PERCENTILE_MIN <= v <= PERCENTILE_MAX:
            raise ValueError(f"percentile {v!r} must be between {PERCENTILE_MIN:g} and {PERCENTILE_MAX:g}")
        return v

    @field_validator("max_ms")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError(f"max_ms {v!r} must be a finite number of milliseconds")
        return v

    @property
    def label(self) -> str:
        """E.g. `ttft p99 <= 500 ms`."""
        return f"{self.metric} p{self.percentile:g} <= {self.max_ms:g} ms"


class Slo(BaseModel):
    """The latency target (see objectives_list; metrics.level_meets_slo judges a level,
    metrics.request_meets_slo one request for goodput)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # the old form: p90 TTFT and p90 TPOT, 2000 and 100 ms unless given (used without `objectives`;
    # None rather than the defaults, so that a dumped SLO with objectives validates again)
    ttft_ms: float | None = Field(None, gt=0)
    tpot_ms: float | None = Field(None, gt=0)
    objectives: tuple[Objective, ...] = ()

    @model_validator(mode="after")
    def _one_form(self) -> Slo:
        if self.objectives and (self.ttft_ms is not None or self.tpot_ms is not None):
            raise ValueError("give either objectives or ttft_ms/tpot_ms, not both")
        return self

    def objectives_list(self) -> tuple[Objective, ...]:
        """The objectives a level must meet: `objectives`, or the old form's p90 TTFT and TPOT."""
        if self.objectives:
            return self.objectives
        return (
            Objective(metric="ttft", percentile=90.0, max_ms=DEFAULT_TTFT_MS if self.ttft_ms is None else self.ttft_ms),
            Objective(metric="tpot", percentile=90.0, max_ms=DEFAULT_TPOT_MS if self.tpot_ms is None else self.tpot_ms),
        )

    @property
    def label(self) -> str:
        return "; ".join(o.label for o in self.objectives_list())
