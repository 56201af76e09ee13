"""The latency target a level is judged by."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Slo"]


class Slo(BaseModel):
    """The latency target a level is judged by (p90 of TTFT and TPOT, see level_meets_slo)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ttft_ms: float = Field(2000, gt=0)
    tpot_ms: float = Field(100, gt=0)
