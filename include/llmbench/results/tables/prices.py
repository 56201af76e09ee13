"""The `price_performance` table: each level's price figures (price_rows), the roofline each is
held against, speculative decoding's speedups, and the $/M column a run ranks by (headline_price)."""

from __future__ import annotations

import json
import math
from typing import Any

from llmbench.analysis import metrics, pricing
from llmbench.results.tables.targets import workload_columns
from llmbench.schemas.targets import Price, ResolvedTarget, RunPlan


def _level_prices(price: Price, out_tps: float | None, total_tps: float | None, k: float | None) -> dict[str, Any]:
    """A level's price figures on the target's price basis (None where the basis has none).
    k: the level's measured input tokens per output token."""
    if price.basis == "per_hour" and price.usd_per_hour is not None:
        usd_h = price.usd_per_hour
        per_m_out = pricing.usd_per_million_tokens(usd_h, out_tps)
        return {
            "usd_per_m_output_tokens": per_m_out,
            "usd_per_m_output_tokens_with_input": per_m_out,  # an hour's price covers the input too
            "usd_per_m_total_tokens": pricing.usd_per_million_tokens(usd_h, total_tps),
            "monthly_usd": pricing.monthly_usd(usd_h),
        }
    if price.basis == "per_token" and price.usd_per_m_input_tokens is not None:
        p_in, p_out = price.usd_per_m_input_tokens, price.usd_per_m_output_tokens or 0.0
        return {
            "usd_per_m_output_tokens": p_out,
            "usd_per_m_output_tokens_with_input": None
            if k is None
            else pricing.per_token_usd_per_m_output_with_input(p_in, p_out, k),
            "usd_per_m_total_tokens": None if k is None else pricing.per_token_usd_per_m_total(p_in, p_out, k),
            "monthly_usd": None,  # nothing runs while idle
        }
    return dict.fromkeys(
        ("usd_per_m_output_tokens", "usd_per_m_output_tokens_with_input", "usd_per_m_total_tokens", "monthly_usd")
    )


def price_rows(
    run: RunPlan, target: ResolvedTarget, level_rows: list[dict[str, Any]], validation_passed: bool | None
) -> list[dict[str, Any]]:
    """One row of `price_performance` per level: the level's figures at the target's price (per
    hour, per token, or none: then NULL with the reason in price_note)."""
    usd_h = target.price.usd_per_hour
    api_name, api_in, api_out, api_k = pricing.default_api()
    break_even = None if usd_h is None else pricing.break_even_output_tokens_per_s(usd_h, api_in, api_out, api_k)
    rows = []
    for raw in level_rows:
        # Parquet gives NaN for a metric a level could not have (no successful request): None here.
        lv = {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in raw.items()}
        out_tps: float | None = lv["output_tokens_per_s"]
        total_tps = metrics.total_tokens_per_s(lv)
        k = metrics.input_tokens_per_output_token(lv)
        decode_per_stream = metrics.decode_tokens_per_s_per_stream(lv["tpot_ms_p50"])
        rows.append(
            {
                "run_key": run.run_key,
                "target_id": target.target_id,
                "concurrency": int(lv["concurrency"] or 0),
                "arrival_rate_rps": float(lv.get("arrival_rate_rps") or 0.0),
                "load_mode": lv.get("load_mode") or "closed",
                "logical_date": run.logical_date,
                "instance_type": target.instance_type,
                "model": target.model,
                "serving_config": target.serving_config,
                "backend": target.backend_kind,
                "usd_per_hour": usd_h,
                "price_basis": target.price.basis,
                "price_source": target.price.source,
                "price_note": target.price.note,
                "output_tokens_per_s": out_tps,
                "requests_per_s": lv["requests_per_s"],
                "input_tokens_per_output_token": k,
                **workload_columns(target.workload),
                **_level_prices(target.price, out_tps, total_tps, k),
                "ttft_ms_p50": lv["ttft_ms_p50"],
                "ttft_ms_p90": lv["ttft_ms_p90"],
                "tpot_ms_p50": lv["tpot_ms_p50"],
                "tpot_ms_p90": lv["tpot_ms_p90"],
                "e2e_ms_p50": lv["e2e_ms_p50"],
                "error_rate": lv["error_rate"],
                "meets_slo": metrics.level_meets_slo(lv, target.slo, target.validation.max_error_rate),
                "slo": target.slo.label,
                "goodput_rps": lv.get("goodput_rps"),
                "goodput_output_tokens_per_s": lv.get("goodput_output_tokens_per_s"),
                "validation_passed": validation_passed,
                "total_tokens_per_s": total_tps,
                "roofline_tokens_per_s": target.roofline_tokens_per_s,
                "decode_tokens_per_s_per_stream": decode_per_stream,
                "roofline_efficiency": metrics.roofline_efficiency(decode_per_stream, target.roofline_tokens_per_s),
                "spec_decode_acceptance_rate": lv.get("spec_decode_acceptance_rate"),
                "break_even_api": api_name if break_even is not None else None,
                "break_even_output_tokens_per_s": break_even,
                "beats_api": None if break_even is None else bool(out_tps is not None and out_tps >= break_even),
            }
        )
        rows[-1]["usd_per_m_goodput_output_tokens"] = (
            pricing.usd_per_m_goodput_tokens(usd_h, rows[-1]["goodput_output_tokens_per_s"])
            if target.price.basis == "per_hour"
            else pricing.usd_per_m_goodput_paid_per_token(
                rows[-1]["usd_per_m_output_tokens_with_input"], out_tps, rows[-1]["goodput_output_tokens_per_s"]
            )
        )
        rows[-1].update(headline_price(rows[-1], run.price_basis))
        rows[-1].update(roofline_basis(target, rows[-1]["roofline_efficiency"]))
    return rows


def roofline_basis(target: ResolvedTarget, efficiency: float | None) -> dict[str, Any]:
    """What the roofline divided by (GB of weights read per token) and, where a level beat it,
    the likely cause (metrics.roofline_note) from the target's serving config and the catalog."""
    s = target.serving
    return {
        "weight_gb_per_token": target.weight_gb_per_token,
        "roofline_note": metrics.roofline_note(
            efficiency,
            speculative=bool(getattr(s, "speculative_config", None)),
            prefix_caching=bool(getattr(s, "enable_prefix_caching", False)),
            weights_not_read=target.weights_not_read,
        ),
    }


SPECULATIVE_COLUMNS = (
    "speculative_baseline_target_id",
    "speculative_speedup",
    "speculative_ttft_change",
    "speculative_tpot_change",
)


def speculative_pairs(run: RunPlan) -> dict[str, str]:
    """{target with speculative decoding: the target of the run that differs from it only in
    having none} (same backend, instance type, model, precision; serving equal but for its name
    and speculative_config): seed 002's EAGLE3 on/off pairs."""

    def key(t: ResolvedTarget) -> str:
        serving = t.serving.model_dump(exclude={"name", "speculative_config"})
        return json.dumps([t.backend_kind, t.instance_type, t.model, t.precision, serving], sort_keys=True)

    plain = {key(t): t.target_id for t in run.targets if not getattr(t.serving, "speculative_config", None)}
    return {
        t.target_id: plain[key(t)]
        for t in run.targets
        if getattr(t.serving, "speculative_config", None) and key(t) in plain
    }


def speculative_speedups(run: RunPlan, prices: list[dict[str, Any]]) -> None:
    """On each price row of a speculative target with a baseline in the run, at the same level:
    the output tok/s speed-up (metrics.speculative_speedup) and the relative TTFT and TPOT p50
    change (seed 002's table: +X % tok/s, TTFT and TPOT change). NULL elsewhere. Edits in place."""
    pairs = speculative_pairs(run)
    by_level = {(r["target_id"], r["concurrency"], r["arrival_rate_rps"]): r for r in prices}

    def change(a: float | None, b: float | None) -> float | None:
        return None if a is None or not b else a / b - 1

    for row in prices:
        row.update(dict.fromkeys(SPECULATIVE_COLUMNS))
        base = by_level.get((pairs.get(row["target_id"]), row["concurrency"], row["arrival_rate_rps"]))
        if base is None:
            continue
        row["speculative_baseline_target_id"] = base["target_id"]
        row["speculative_speedup"] = metrics.speculative_speedup(
            row["output_tokens_per_s"], base["output_tokens_per_s"]
        )
        row["speculative_ttft_change"] = change(row["ttft_ms_p50"], base["ttft_ms_p50"])
        row["speculative_tpot_change"] = change(row["tpot_ms_p50"], base["tpot_ms_p50"])


HEADLINE_COLUMNS = {"output": "usd_per_m_output_tokens", "total": "usd_per_m_total_tokens"}


def headline_price(row: dict[str, Any], basis: str) -> dict[str, Any]:
    """The $/M a run ranks and labels by (config `price_basis`): per output token or per total
    (input + output) token; both figures stay on the row."""
    return {"headline_basis": basis, "usd_per_m_headline": row.get(HEADLINE_COLUMNS[basis])}
