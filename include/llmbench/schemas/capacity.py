"""How the capacity search (loadgen.capacity) looks for the highest arrival rate at which a
target meets its SLO: where it starts, how it grows, when it stops."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["CapacitySearch"]


class CapacitySearch(BaseModel):
    """`capacity:` in a config. Each probe is an open-loop level (Poisson arrivals at a rate, at
    most the workload's max_in_flight in flight) of probe_duration_s, repeated `repeats` times.
    The search grows the rate by `growth` until a probe misses the SLO, then bisects until the
    failing rate is within rel_tolerance of the passing one, within max_probes probes and (if set)
    max_minutes of measuring; it never offers more than max_rps."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    start_rps: float = Field(0.5, gt=0)
    growth: float = Field(2.0, gt=1)
    rel_tolerance: float = Field(0.1, gt=0, lt=1)
    max_probes: int = Field(10, ge=1, le=100)
    max_minutes: float | None = Field(None, gt=0)
    max_rps: float | None = Field(None, gt=0)  # the target's limit (a quota, a rate limit)
    probe_duration_s: float = Field(20.0, gt=0, le=3600)
    # Probes before the first failure (growing from start_rps) may be shorter: far below the
    # capacity a short probe's verdict is clear, and most of the search's time is spent near it.
    # None: as long as the others.
    growth_probe_duration_s: float | None = Field(None, gt=0, le=3600)
    repeats: int = Field(1, ge=1, le=10)
    # Common random numbers: every probe replays one seeded arrival pattern scaled to its rate, so
    # probes differ by rate, not by the luck of their draws (loadgen.capacity.run_capacity_search).
    common_arrivals: bool = True

    @model_validator(mode="after")
    def _finite(self) -> CapacitySearch:
        names = ("start_rps", "growth", "rel_tolerance", "probe_duration_s", "growth_probe_duration_s", "max_minutes")
        for name in (*names, "max_rps"):
            v = getattr(self, name)
            if v is not None and not math.isfinite(v):
                raise ValueError(f"{name} {v!r} must be finite")
        if self.max_rps is not None and self.start_rps > self.max_rps:
            raise ValueError(f"start_rps {self.start_rps:g} is above max_rps {self.max_rps:g}")
        return self
