"""The run's `capacity` and `traffic_cost` tables and the traffic headline (issue 29): each target's
capacity search result (<target dir>/capacity.json, loadgen.capacity), and what the config's
traffic profile costs on each path at the SLO (analysis.costmodel), from the run's own measured
capacities, cold starts and prices."""

from __future__ import annotations

import json
from typing import Any

from llmbench.analysis import costmodel, pricing
from llmbench.backends import registry
from llmbench.schemas.targets import ResolvedTarget, RunPlan

__all__ = ["capacity_rows", "traffic_cost_rows", "traffic_headline"]

# The daily output-token volumes the break-even is looked for in (1 thousand to 1 trillion).
BREAK_EVEN_RANGE = (1e3, 1e12)


def _capacity(target: ResolvedTarget) -> dict[str, Any] | None:
    path = target.dir / "capacity.json"
    return json.loads(path.read_text()) if path.exists() else None


def capacity_rows(run: RunPlan) -> list[dict[str, Any]]:
    """One row of `capacity` per target whose capacity search ran."""
    rows = []
    for t in run.targets:
        c = _capacity(t)
        if c is None:
            continue
        low, high = c["capacity_output_tokens_per_s_ci95"]
        rows.append(
            {
                "run_key": run.run_key,
                "target_id": t.target_id,
                "status": c["status"],
                "capacity_rps": c["capacity_rps"],
                "capacity_output_tokens_per_s": c["capacity_output_tokens_per_s"],
                "capacity_output_tokens_per_s_ci95_low": low,
                "capacity_output_tokens_per_s_ci95_high": high,
                "bracket_pass_rps": c["bracket_pass_rps"],
                "bracket_fail_rps": c["bracket_fail_rps"],
                "rel_tolerance": c["rel_tolerance"],
                "probes": len(c["probes"]),
                "search_s": c["search_s"],
                "slo": t.slo.label,
                "note": c["note"],
            }
        )
    return rows


def _capacity_at_slo(target: ResolvedTarget, prices: list[dict[str, Any]]) -> tuple[float | None, str]:
    """Requests/s one instance serves at the SLO: the capacity search's, else the fastest measured
    level that met the SLO on a validated target (a lower bound), else None."""
    c = _capacity(target)
    if c is not None and c["capacity_rps"] is not None:
        return float(c["capacity_rps"]), "capacity search"
    meeting = [
        p["requests_per_s"]
        for p in prices
        if p["target_id"] == target.target_id and p["meets_slo"] and p["validation_passed"] and p["requests_per_s"]
    ]
    if meeting:
        return float(max(meeting)), "the fastest level meeting the SLO (a lower bound)"
    return None, "no level met the SLO"


def traffic_cost_rows(
    run: RunPlan, targets: list[dict[str, Any]], prices: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One row of `traffic_cost` per path and month of the run's traffic profile (none without
    one): the run's hourly targets that succeeded, with their capacity at the SLO and measured time
    to ready; its per-token targets, or the catalog's default per-token API when it has none."""
    profile = run.traffic
    if profile is None:
        return []
    hourly, per_token, capacity_of = _paths(run, profile, targets, prices)
    rows = []
    for month in range(1, profile.months + 1):
        cmp = costmodel.compare_paths(profile, hourly, per_token, month)
        cheapest_pt = min(
            (c for c in cmp.costs if c.price_basis == "per_token" and c.meets_slo), key=lambda c: c.monthly_usd or 0,
            default=None,
        )  # fmt: skip
        for c in cmp.costs:
            be = None
            if c.price_basis == "per_hour" and cheapest_pt is not None and capacity_of.get(c.path) is not None:
                path = next(h for h in hourly if h.name == c.path)
                pt = next(p for p in per_token if p.name == cheapest_pt.path)
                crossings = costmodel.break_even_daily_output_tokens(profile, path, pt, *BREAK_EVEN_RANGE)
                be = crossings[0] if crossings else None
            cheapest = cmp.cheapest is not None and c.path == cmp.cheapest.path
            rows.append(
                {
                    "run_key": run.run_key,
                    "profile": profile.name,
                    "month": month,
                    "path": c.path,
                    "backend": c.backend,
                    "price_basis": c.price_basis,
                    "capacity_rps": capacity_of.get(c.path),
                    "monthly_usd": c.monthly_usd,
                    "usd_per_m_output_paid": c.usd_per_m_output_paid,
                    "mean_utilisation": c.mean_utilisation,
                    "instance_hours": c.instance_hours,
                    "peak_instances": c.peak_instances,
                    "capacity_miss_hours": c.capacity_miss_hours,
                    "scale_up_miss_hours": c.scale_up_miss_hours,
                    "meets_slo": c.meets_slo,
                    "cheapest": cheapest,
                    "runner_up": cmp.runner_up is not None and c.path == cmp.runner_up.path,
                    "margin_usd": cmp.margin_usd if cheapest else None,
                    "break_even_daily_output_tokens": be,
                    "note": c.note,
                }
            )
    return rows


def _paths(
    run: RunPlan, profile: Any, targets: list[dict[str, Any]], prices: list[dict[str, Any]]
) -> tuple[list[costmodel.HourlyPath], list[costmodel.PerTokenPath], dict[str, float | None]]:
    """(hourly paths, per-token paths, {hourly path: its capacity at the SLO}) of the run's targets
    that succeeded; the catalog's default per-token API when the run has no per-token target."""
    status = {t["target_id"]: t for t in targets}
    hourly: list[costmodel.HourlyPath] = []
    capacity_of: dict[str, float | None] = {}
    per_token: list[costmodel.PerTokenPath] = []
    for t in run.targets:
        row = status.get(t.target_id) or {}
        if row.get("status") != "succeeded":
            continue
        if t.price.basis == "per_hour" and t.price.usd_per_hour is not None:
            cap, _why = _capacity_at_slo(t, prices)
            capacity_of[t.target_id] = cap
            ready = row.get("time_to_ready_s")
            hourly.append(
                costmodel.HourlyPath(
                    t.target_id,
                    t.price.usd_per_hour,
                    cap,
                    profile.policy_for(t.target_id),
                    time_to_ready_s=float(ready) if ready is not None and ready == ready else 0.0,
                    scale_to_zero_allowed=registry.get(t.backend_kind).scales_to_zero,
                    backend=t.backend_kind,
                )
            )
        elif t.price.basis == "per_token" and t.price.usd_per_m_input_tokens is not None:
            met = [p["meets_slo"] for p in prices if p["target_id"] == t.target_id]
            per_token.append(
                costmodel.PerTokenPath(
                    t.target_id,
                    t.price.usd_per_m_input_tokens,
                    t.price.usd_per_m_output_tokens or 0.0,
                    meets_slo=any(met) if met else None,
                    backend=t.backend_kind,
                )
            )
    if not per_token:
        name, p_in, p_out, _k = pricing.default_api()
        per_token.append(costmodel.PerTokenPath(name, p_in, p_out, None, backend="catalog"))
    return hourly, per_token, capacity_of


def traffic_headline(traffic_cost: Any) -> str | None:
    """The report's one sentence for the traffic profile (month 1): "For this traffic, X at
    $Y/month meets the SLO; Z costs $W." None without a traffic_cost table; a sentence saying so
    when no path meets the SLO."""
    if traffic_cost is None or traffic_cost.empty:
        return None
    month1 = traffic_cost[traffic_cost["month"] == 1]
    best = month1[month1["cheapest"]]
    if best.empty:
        return f"For this traffic ({month1['profile'].iloc[0]}), no measured path meets the SLO."
    b = best.iloc[0]
    sentence = f"For this traffic, {b['path']} at ${b['monthly_usd']:,.0f}/month meets the SLO"
    runner = month1[month1["runner_up"]]
    if not runner.empty:
        r = runner.iloc[0]
        sentence += f"; {r['path']} costs ${r['monthly_usd']:,.0f}"
    return sentence + "."
