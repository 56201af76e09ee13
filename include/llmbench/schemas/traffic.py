"""A traffic profile (`traffic:` in a config, or a file it names) and how each path is scaled to
serve it: the demand side of the cost model (llmbench.analysis.costmodel). Not a load generator's
arrival process (schemas.workload's arrivals): this is what production sends over a week."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["HOURS_PER_WEEK", "Policy", "TrafficProfile", "load_profile_file"]

HOURS_PER_WEEK = 168
HOURS_PER_DAY = 24


def _finite_non_negative(values: tuple[float, ...], what: str) -> tuple[float, ...]:
    for i, v in enumerate(values):
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"{what}[{i}] is {v!r}: rates must be finite and >= 0")
    return values


class Policy(BaseModel):
    """How an hourly path is scaled: `always_on` keeps `instances` up; `autoscaling` runs between
    min_instances and max_instances, adding instances scale_up_delay_s after the load needs them
    plus the path's measured time to ready (cold start); min_instances 0 is scale to zero, refused
    by the cost model where the platform cannot."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["always_on", "autoscaling"] = "autoscaling"
    instances: int = Field(1, ge=1)  # always_on
    min_instances: int = Field(1, ge=0)  # autoscaling
    max_instances: int = Field(8, ge=1)
    scale_up_delay_s: float = Field(300.0, ge=0)  # the metric's period and the alarm's evaluation

    @model_validator(mode="after")
    def _bounds(self) -> Policy:
        if self.min_instances > self.max_instances:
            raise ValueError(f"min_instances {self.min_instances} > max_instances {self.max_instances}")
        if not math.isfinite(self.scale_up_delay_s):
            raise ValueError("scale_up_delay_s must be finite")
        return self


class TrafficProfile(BaseModel):
    """Requests per hour over a week (168 values from Monday 00:00, or 24 repeated every day), or
    a peak with a daily shape (24 fractions of the peak); the mean tokens of a request; monthly
    growth; the headroom each instance is loaded to; the scaling policy (one for every hourly path,
    or per target id)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "traffic"
    requests_per_hour: tuple[float, ...] | None = None
    peak_requests_per_hour: float | None = None
    daily_shape: tuple[float, ...] | None = None
    input_tokens: float = Field(gt=0)  # mean per request
    output_tokens: float = Field(gt=0)
    monthly_growth: float = 0.0  # 0.1: each month 10 % more than the one before
    months: int = Field(1, ge=1, le=36)  # how many months the cost model projects (growth applied)
    headroom: float = Field(0.8, gt=0, le=1)  # load an instance to at most this share of its capacity
    policy: Policy = Field(default_factory=Policy)
    policies: dict[str, Policy] = Field(default_factory=dict)  # target id -> its own policy
    max_scale_up_miss_hours: float | None = None  # per month; None: reported, not disqualifying

    @field_validator("requests_per_hour")
    @classmethod
    def _rates(cls, v: tuple[float, ...] | None) -> tuple[float, ...] | None:
        if v is None:
            return v
        if len(v) not in (HOURS_PER_DAY, HOURS_PER_WEEK):
            raise ValueError(f"requests_per_hour has {len(v)} values: give 24 (every day) or 168 (a week)")
        return _finite_non_negative(v, "requests_per_hour")

    @field_validator("daily_shape")
    @classmethod
    def _shape(cls, v: tuple[float, ...] | None) -> tuple[float, ...] | None:
        if v is None:
            return v
        if len(v) != HOURS_PER_DAY:
            raise ValueError(f"daily_shape has {len(v)} values: give 24 fractions of the peak")
        _finite_non_negative(v, "daily_shape")
        if max(v) > 1:
            raise ValueError("daily_shape holds fractions of the peak: each at most 1")
        return v

    @field_validator("peak_requests_per_hour", "monthly_growth", "input_tokens", "output_tokens")
    @classmethod
    def _finite(cls, v: float | None) -> float | None:
        if v is not None and not math.isfinite(v):
            raise ValueError(f"{v!r} is not a finite number")
        return v

    @model_validator(mode="after")
    def _one_form(self) -> TrafficProfile:
        if (self.requests_per_hour is None) == (self.peak_requests_per_hour is None):
            raise ValueError("give requests_per_hour, or peak_requests_per_hour with daily_shape (one of them)")
        if self.peak_requests_per_hour is not None:
            if self.peak_requests_per_hour < 0:
                raise ValueError(f"peak_requests_per_hour {self.peak_requests_per_hour!r} must be >= 0")
            if self.daily_shape is None:
                raise ValueError("peak_requests_per_hour needs daily_shape (24 fractions of the peak)")
        elif self.daily_shape is not None:
            raise ValueError("daily_shape goes with peak_requests_per_hour, not with requests_per_hour")
        if self.monthly_growth <= -1:
            raise ValueError(f"monthly_growth {self.monthly_growth!r} must be above -1")
        return self

    def week_requests_per_hour(self) -> tuple[float, ...]:
        """The week's 168 hourly request counts, month 1."""
        if self.requests_per_hour is not None:
            rates = self.requests_per_hour
        else:
            assert self.peak_requests_per_hour is not None and self.daily_shape is not None
            rates = tuple(self.peak_requests_per_hour * f for f in self.daily_shape)
        return rates * (HOURS_PER_WEEK // len(rates))

    def policy_for(self, target_id: str) -> Policy:
        return self.policies.get(target_id, self.policy)


def load_profile_file(data: Any, base: Path) -> Any:
    """A `traffic:` mapping that names `file:` (a YAML file of the profile's fields, relative to
    `base`), merged under the mapping's own keys; anything else is returned as it is."""
    if not isinstance(data, dict) or "file" not in data:
        return data
    import yaml

    path = Path(data["file"])
    path = path if path.is_absolute() else base / path
    if not path.is_file():
        raise ValueError(f"traffic.file {str(path)!r} is not a file")
    loaded = yaml.safe_load(path.read_text())
    if not isinstance(loaded, dict):
        raise ValueError(f"traffic.file {str(path)!r} does not hold a mapping of profile fields")
    return {**loaded, **{k: v for k, v in data.items() if k != "file"}}
