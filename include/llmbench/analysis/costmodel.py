"""What a traffic profile (schemas.traffic) costs on each serving path at the SLO, hour by hour
(docs/metrics.md, "Cost of a traffic profile"). Pure functions of their arguments: the figures
measured elsewhere (capacity at the SLO, time to ready, prices) come in as numbers.

An hourly path needs ceil(load / (capacity_at_slo x headroom)) instances each hour. Always-on N
keeps N; autoscaling follows the need between its bounds, and an instance added in an hour is
paid for the whole hour but serves only after the scale-up delay plus the path's cold start: that
share of the hour misses the SLO. A per-token path pays its token prices. The week repeats over
the month (730 hours, pricing.HOURS_PER_MONTH); growth multiplies each month's load.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llmbench.analysis.pricing import HOURS_PER_MONTH, SECONDS_PER_HOUR
from llmbench.errors import InputError
from llmbench.schemas.traffic import HOURS_PER_WEEK, Policy, TrafficProfile

__all__ = [
    "BreakEvenPoint",
    "Comparison",
    "HourlyPath",
    "PathCost",
    "PerTokenPath",
    "break_even_curve",
    "break_even_daily_output_tokens",
    "compare_paths",
    "cost_hourly_path",
    "cost_per_token_path",
    "instances_needed",
    "month_requests_per_hour",
]

WEEKS_PER_MONTH = HOURS_PER_MONTH / HOURS_PER_WEEK
# A need of 2.0000000001 instances is 2: float noise of load / capacity must not buy an instance.
_CEIL_SLACK = 1e-9


@dataclass(frozen=True)
class HourlyPath:
    """A path billed by the instance-hour: its price, the requests/s one instance serves at the
    SLO (capacity search, or the best level meeting it), its measured time to ready (cold start)
    and whether its platform can scale to zero."""

    name: str
    usd_per_hour: float
    capacity_rps: float | None  # None: no measured load met the SLO (capacity below the lowest probe)
    policy: Policy
    time_to_ready_s: float = 0.0
    scale_to_zero_allowed: bool = False
    backend: str = ""


@dataclass(frozen=True)
class PerTokenPath:
    """A path billed per token (a per-token API): its list prices, and whether its measured levels
    met the SLO (None: not measured; counted as meeting it)."""

    name: str
    usd_per_m_input: float
    usd_per_m_output: float
    meets_slo: bool | None = None
    backend: str = ""


@dataclass(frozen=True)
class PathCost:
    """One path's month for the profile."""

    path: str
    backend: str
    price_basis: str  # per_hour | per_token
    month: int
    monthly_usd: float | None
    usd_per_m_output_paid: float | None  # monthly cost / output tokens served, per million
    mean_utilisation: float | None  # served load / (instance-hours x capacity); None per token
    instance_hours: float | None
    peak_instances: int | None
    capacity_miss_hours: float  # hours whose need exceeded what the policy may run
    scale_up_miss_hours: float  # hours (fractions) waiting for added instances to be ready
    meets_slo: bool
    note: str | None = None


@dataclass(frozen=True)
class Comparison:
    """Every path's cost, cheapest first; the cheapest meeting the SLO, the runner-up, and by how
    much it wins (None without two such paths)."""

    costs: tuple[PathCost, ...]
    cheapest: PathCost | None
    runner_up: PathCost | None
    margin_usd: float | None
    margin_pct: float | None  # of the runner-up's monthly cost


@dataclass(frozen=True)
class BreakEvenPoint:
    """The profile's shape scaled to `daily_output_tokens` a day, and both paths' monthly cost."""

    daily_output_tokens: float
    hourly_usd: float | None
    per_token_usd: float


def _check_finite(name: str, v: float, allow_zero: bool = True) -> None:
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise InputError(f"cost model: {name} is {v!r}: it must be a finite number {'>=' if allow_zero else '>'} 0")


def month_requests_per_hour(profile: TrafficProfile, month: int = 1) -> list[float]:
    """The week's 168 hourly request counts in `month` (1: as profiled; each later month times
    1 + monthly_growth)."""
    if month < 1:
        raise InputError(f"cost model: month {month} must be >= 1")
    factor = (1 + profile.monthly_growth) ** (month - 1)
    return [r * factor for r in profile.week_requests_per_hour()]


def instances_needed(requests_per_hour: float, capacity_rps: float, headroom: float) -> int:
    """ceil(load / (capacity_at_slo x headroom)): how many instances serve an hour's load at the SLO,
    each loaded to at most `headroom` of its capacity; 0 for no load."""
    _check_finite("requests_per_hour", requests_per_hour)
    _check_finite("capacity_rps", capacity_rps, allow_zero=False)
    if not 0 < headroom <= 1:
        raise InputError(f"cost model: headroom {headroom!r} must be in (0, 1]")
    if requests_per_hour == 0:
        return 0
    return math.ceil(requests_per_hour / (capacity_rps * SECONDS_PER_HOUR * headroom) - _CEIL_SLACK)


def cost_hourly_path(profile: TrafficProfile, path: HourlyPath, month: int = 1) -> PathCost:
    """An hourly path's month for the profile, hour by hour over the week (see the module's
    docstring); a path with no capacity at the SLO cannot meet it and gets no cost."""
    _check_finite("usd_per_hour", path.usd_per_hour)
    _check_finite("time_to_ready_s", path.time_to_ready_s)
    loads = month_requests_per_hour(profile, month)
    out_tokens = sum(loads) * profile.output_tokens * WEEKS_PER_MONTH
    if path.capacity_rps is None:
        return PathCost(path.name, path.backend, "per_hour", month, None, None, None, None, None,
                        float(sum(1 for x in loads if x > 0)) * WEEKS_PER_MONTH, 0.0, False,
                        "no measured load met the SLO: capacity below the lowest probe")  # fmt: skip
    policy = path.policy
    if policy.kind == "autoscaling" and policy.min_instances == 0 and not path.scale_to_zero_allowed:
        raise InputError(f"cost model: {path.name}: min_instances 0 (scale to zero) is not allowed on this platform")
    cap_rph = path.capacity_rps * SECONDS_PER_HOUR
    need = [instances_needed(x, path.capacity_rps, profile.headroom) for x in loads]
    if policy.kind == "always_on":
        running = [policy.instances] * len(need)
        ceiling = policy.instances
    else:
        running = [min(max(n, policy.min_instances), policy.max_instances) for n in need]
        ceiling = policy.max_instances
    capacity_miss = sum(1.0 for n in need if n > ceiling)
    lag_h = min(1.0, (policy.scale_up_delay_s + path.time_to_ready_s) / SECONDS_PER_HOUR)
    # the week repeats: hour 0 follows hour 167
    scale_up_miss = sum(lag_h for h in range(len(running)) if running[h] > running[h - 1] and loads[h] > 0)
    if policy.kind == "always_on":
        scale_up_miss = 0.0
    instance_hours = float(sum(running))
    served = sum(min(x, r * cap_rph) for x, r in zip(loads, running, strict=True))
    monthly = instance_hours * path.usd_per_hour * WEEKS_PER_MONTH
    capacity_miss *= WEEKS_PER_MONTH
    scale_up_miss *= WEEKS_PER_MONTH
    meets = capacity_miss == 0 and (
        profile.max_scale_up_miss_hours is None or scale_up_miss <= profile.max_scale_up_miss_hours
    )
    return PathCost(
        path=path.name,
        backend=path.backend,
        price_basis="per_hour",
        month=month,
        monthly_usd=monthly,
        usd_per_m_output_paid=monthly / (out_tokens / 1e6) if out_tokens > 0 else None,
        mean_utilisation=served / (instance_hours * cap_rph) if instance_hours > 0 else None,
        instance_hours=instance_hours * WEEKS_PER_MONTH,
        peak_instances=max(running),
        capacity_miss_hours=capacity_miss,
        scale_up_miss_hours=scale_up_miss,
        meets_slo=meets,
        note=None if capacity_miss == 0 else f"the load needs up to {max(need)} instances; the policy allows {ceiling}",
    )


def cost_per_token_path(profile: TrafficProfile, path: PerTokenPath, month: int = 1) -> PathCost:
    """A per-token path's month: every request's input and output tokens at list price."""
    _check_finite("usd_per_m_input", path.usd_per_m_input)
    _check_finite("usd_per_m_output", path.usd_per_m_output)
    requests = sum(month_requests_per_hour(profile, month)) * WEEKS_PER_MONTH
    usd_per_request = (
        profile.input_tokens * path.usd_per_m_input + profile.output_tokens * path.usd_per_m_output
    ) / 1e6
    monthly = requests * usd_per_request
    out_tokens = requests * profile.output_tokens
    return PathCost(
        path=path.name,
        backend=path.backend,
        price_basis="per_token",
        month=month,
        monthly_usd=monthly,
        usd_per_m_output_paid=monthly / (out_tokens / 1e6) if out_tokens > 0 else None,
        mean_utilisation=None,
        instance_hours=None,
        peak_instances=None,
        capacity_miss_hours=0.0,
        scale_up_miss_hours=0.0,
        meets_slo=path.meets_slo is not False,
        note="its measured levels missed the SLO" if path.meets_slo is False else None,
    )


def compare_paths(
    profile: TrafficProfile, hourly: Sequence[HourlyPath], per_token: Sequence[PerTokenPath], month: int = 1
) -> Comparison:
    """Every path's cost for the profile, cheapest first (paths without a cost last), and the
    cheapest path meeting the SLO with its runner-up and margin."""
    costs = [cost_hourly_path(profile, p, month) for p in hourly] + [
        cost_per_token_path(profile, p, month) for p in per_token
    ]
    costs.sort(key=lambda c: (c.monthly_usd is None, c.monthly_usd or 0.0, c.path))
    meeting = [c for c in costs if c.meets_slo and c.monthly_usd is not None]
    cheapest = meeting[0] if meeting else None
    runner_up = meeting[1] if len(meeting) > 1 else None
    margin = None
    pct = None
    if cheapest is not None and runner_up is not None:
        assert cheapest.monthly_usd is not None and runner_up.monthly_usd is not None
        margin = runner_up.monthly_usd - cheapest.monthly_usd
        pct = 100.0 * margin / runner_up.monthly_usd if runner_up.monthly_usd > 0 else None
    return Comparison(tuple(costs), cheapest, runner_up, margin, pct)


def _scaled(profile: TrafficProfile, daily_output_tokens: float) -> TrafficProfile:
    """The profile's weekly shape scaled so its mean day carries `daily_output_tokens`."""
    week = profile.week_requests_per_hour()
    week_out = sum(week) * profile.output_tokens
    if week_out <= 0:
        raise InputError("cost model: the profile has no requests: it has no shape to scale")
    factor = daily_output_tokens * 7 / week_out
    return profile.model_copy(
        update={
            "requests_per_hour": tuple(r * factor for r in week),
            "peak_requests_per_hour": None,
            "daily_shape": None,
            "monthly_growth": 0.0,
        }  # fmt: skip
    )


def break_even_curve(
    profile: TrafficProfile, hourly: HourlyPath, per_token: PerTokenPath, daily_output_tokens: Sequence[float]
) -> list[BreakEvenPoint]:
    """Both paths' monthly cost with the profile's shape scaled to each daily volume of output
    tokens: the break-even as a curve (an autoscaled path's cost steps with its instances)."""
    points = []
    for v in daily_output_tokens:
        _check_finite("daily_output_tokens", v, allow_zero=False)
        p = _scaled(profile, v)
        points.append(
            BreakEvenPoint(
                v, cost_hourly_path(p, hourly).monthly_usd, cost_per_token_path(p, per_token).monthly_usd or 0
            )
        )
    return points


def break_even_daily_output_tokens(
    profile: TrafficProfile,
    hourly: HourlyPath,
    per_token: PerTokenPath,
    low: float,
    high: float,
    rel_tol: float = 1e-12,
) -> list[float]:
    """Every daily volume of output tokens in [low, high] at which the two paths cost the same,
    lowest first: the curve is sampled at 200 geometric steps and each sign change of (hourly -
    per-token) bisected to rel_tol. Only volumes the hourly path serves within the SLO count (past
    its policy's maximum its cost stops growing, and a crossing there would be no answer). An
    autoscaled path's cost steps, so there may be several; empty when one path is cheaper
    throughout (or the hourly path has no capacity at the SLO)."""
    if not (math.isfinite(low) and math.isfinite(high) and 0 < low < high):
        raise InputError(f"cost model: break-even range [{low!r}, {high!r}] must be finite with 0 < low < high")

    def diff(v: float) -> float | None:
        p = _scaled(profile, v)
        h = cost_hourly_path(p, hourly)
        if h.monthly_usd is None or not h.meets_slo:
            return None
        return h.monthly_usd - (cost_per_token_path(p, per_token).monthly_usd or 0.0)

    grid = [low * (high / low) ** (i / 199) for i in range(200)]
    crossings: list[float] = []
    prev_v, prev_d = grid[0], diff(grid[0])
    for v in grid[1:]:
        d = diff(v)
        if prev_d is not None and d is not None:
            if prev_d == 0:
                crossings.append(prev_v)
            elif d != 0 and (prev_d > 0) != (d > 0):
                crossings.append(_bisect(diff, prev_v, v, prev_d, rel_tol))
        prev_v, prev_d = v, d
    return crossings


def _bisect(diff: Callable[[float], float | None], a: float, b: float, da: float, rel_tol: float) -> float:
    """The volume in [a, b] where diff changes sign (diff(a) = da); a volume whose hourly cost is
    not valid on the way ends the bisection at the valid side."""
    while b - a > rel_tol * b:
        m = (a + b) / 2
        dm = diff(m)
        if dm is None or dm == 0:
            return a if dm is None else m
        if (dm > 0) == (da > 0):
            a, da = m, dm
        else:
            b = m
    return (a + b) / 2
