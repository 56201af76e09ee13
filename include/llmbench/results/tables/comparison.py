"""Comparisons across targets: serving paths side by side with break-even against per-token APIs
(compare_paths), and the seed articles' figures beside the run's (reference_rows)."""

from __future__ import annotations

from typing import Any

from llmbench.analysis import pricing
from llmbench.backends import registry
from llmbench.schemas.targets import RunPlan

REFERENCE_COLUMNS = (
    "run_key",
    "reference_index",
    "seed",
    "target_id",
    "metric",
    "concurrency",
    "value",
    "unit",
    "says",
    "implied",
)


def reference_rows(run: RunPlan) -> list[dict[str, Any]]:
    """The config's `reference:` block, one row per figure (table `reference`, view v_reference)."""
    return [
        {
            "run_key": run.run_key,
            "reference_index": i,
            "seed": ref.seed,
            "target_id": ref.target,
            "metric": ref.metric,
            "concurrency": ref.concurrency,
            "value": ref.value,
            "unit": ref.unit,
            "says": ref.says,
            "implied": ref.implied,
        }
        for i, ref in enumerate(run.reference)
    ]


def compare_paths(
    run: RunPlan,
    statuses: dict[str, str],
    prices: list[dict[str, Any]],
    quality_passed: dict[str, bool | None] | None = None,
) -> list[dict[str, Any]]:
    """The figures that put a run's serving paths side by side, from its price rows (edited in
    place) and returned as `break_even` rows:
    - every hourly level against every per-token target that succeeded in the run and did not
      fail the quality gate (`quality_passed`: target id -> the gate; False excludes it, as a
      wrong answer at a low price is no comparator): the output tok/s the hourly path must sustain
      24x7 to cost no more, at the level's measured input:output ratio (the catalog's default
      ratio where unmeasured), and what the per-token path costs per million output tokens with
      their input at that ratio: one `break_even` row each;
    - on each price row, the same against the per-token target that is cheapest at that ratio
      (`per_token_target_id`, `break_even_output_tokens_per_s_vs_per_token`, `beats_per_token`);
    - on a row of a managed backend, what the managed path adds over the same hardware run unmanaged
      (BackendSpec.unmanaged_twin: the kind and instance type it compares with), same model and
      level: `managed_overhead_ttft_ms_p50`, `..._e2e_ms_p50`."""
    default_k = pricing.default_api()[3]
    apis = [
        t
        for t in run.targets
        if t.price.basis == "per_token"
        and statuses.get(t.target_id) == "succeeded"
        and _gate_open((quality_passed or {}).get(t.target_id))
        and t.price.usd_per_m_input_tokens is not None
        and t.price.usd_per_m_output_tokens is not None
    ]
    by_level = {(r["instance_type"], r["model"], r["concurrency"], r["arrival_rate_rps"]): r for r in prices}
    break_even = []
    for row in prices:
        row.update(
            per_token_target_id=None,
            break_even_output_tokens_per_s_vs_per_token=None,
            beats_per_token=None,
            managed_overhead_ttft_ms_p50=None,
            managed_overhead_e2e_ms_p50=None,
        )
        usd_h, out_tps = row["usd_per_hour"], row["output_tokens_per_s"]
        k = row["input_tokens_per_output_token"] or default_k
        cheapest: tuple[float, str, float] | None = None
        for api in apis if usd_h is not None else []:
            p_in, p_out = api.price.usd_per_m_input_tokens or 0.0, api.price.usd_per_m_output_tokens or 0.0
            tps = pricing.break_even_output_tokens_per_s(usd_h, p_in, p_out, k)
            beats = bool(out_tps is not None and out_tps >= tps)
            api_usd = pricing.per_token_usd_per_m_output_with_input(p_in, p_out, k)
            break_even.append(
                {
                    "run_key": run.run_key,
                    "target_id": row["target_id"],
                    "concurrency": row["concurrency"],
                    "arrival_rate_rps": row["arrival_rate_rps"],
                    "per_token_target_id": api.target_id,
                    "input_tokens_per_output_token": k,
                    "break_even_output_tokens_per_s": tps,
                    "beats_per_token": beats,
                    "per_token_usd_per_m_output_tokens_with_input": api_usd,
                }
            )
            if cheapest is None or api_usd < cheapest[0]:
                cheapest = (api_usd, api.target_id, tps)
        if cheapest is not None:
            row.update(
                per_token_target_id=cheapest[1],
                break_even_output_tokens_per_s_vs_per_token=cheapest[2],
                beats_per_token=bool(out_tps is not None and out_tps >= cheapest[2]),
            )
        twin_of = registry.get(row["backend"]).unmanaged_twin
        twin = twin_of(row["instance_type"]) if twin_of else None
        unmanaged = by_level.get((twin, row["model"], row["concurrency"], row["arrival_rate_rps"])) if twin else None
        if unmanaged is not None and unmanaged["backend"] != row["backend"]:
            row["managed_overhead_ttft_ms_p50"] = _minus(row["ttft_ms_p50"], unmanaged["ttft_ms_p50"])
            row["managed_overhead_e2e_ms_p50"] = _minus(row["e2e_ms_p50"], unmanaged["e2e_ms_p50"])
    return break_even


def _gate_open(passed: bool | None) -> bool:
    """The quality gate lets a target through: it passed, or had no quality stage (None)."""
    return passed is None or bool(passed)


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b
