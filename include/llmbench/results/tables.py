"""The run's published tables, built from its raw results (plan.json and each target's folder):
runs, targets, levels, requests and price_performance, written as Parquet under <run_dir>/tables/.
Every figure comes from its one definition in llmbench.analysis.metrics or llmbench.analysis.pricing."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from llmbench import __version__
from llmbench.analysis import metrics, pricing
from llmbench.redaction import redact
from llmbench.results import traffic
from llmbench.results.codeversion import Computation
from llmbench.results.events import read_events
from llmbench.results.union import union_plan
from llmbench.schemas import registry
from llmbench.schemas.targets import Price, ResolvedTarget, RunPlan
from llmbench.schemas.workload import Workload, length_mean
from llmbench.warehouse.store import TABLES

TABLE_NAMES = TABLES  # the warehouse's tables, in publish order (one list: warehouse.store)
QUALITY_SUITES = ("tool_call", "exact")  # each has a targets column quality_score_<suite>


def target_row(run: RunPlan, target: ResolvedTarget) -> dict[str, Any]:
    """One row of `targets`: what was planned, how far it got, what it cost."""
    events = read_events(target)
    # A stage's failure counts only if no retry of it succeeded later (tasks that can fail
    # transiently are retried: a failed warm-up followed by a good one is a good warm-up).
    outcome = {e["stage"]: e for e in events if e["status"] in ("failed", "succeeded")}
    failed = next((e for e in events if e["status"] == "failed" and outcome[e["stage"]] is e), None)
    finished = {e["stage"] for e in events if e["status"] == "succeeded"}
    d = target.dir
    validation_passed = None
    if (d / "validation.json").exists():
        validation_passed = bool(json.loads((d / "validation.json").read_text())["validation_passed"])
    endpoint_seconds = None
    if (d / "teardown.json").exists():
        endpoint_seconds = json.loads((d / "teardown.json").read_text()).get("endpoint_seconds")
    if failed is None and not {"sweep", "validate"} <= finished:
        status, failed_stage, error = "failed", None, "did not run to the end (an upstream task failed or was skipped)"
    elif failed is not None:
        # redacted again: events.jsonl written before redaction existed may hold a key
        status, failed_stage, error = "failed", failed["stage"], redact(failed["error"])
    else:
        status, failed_stage, error = "succeeded", None, None
    price = target.price
    usd_h = price.usd_per_hour
    if price.basis == "per_token":
        benchmark_cost = _per_token_cost(target)
    else:
        benchmark_cost = pricing.benchmark_cost_usd(usd_h, endpoint_seconds)
    return {
        "run_key": run.run_key,
        "target_id": target.target_id,
        "label": target.label,
        "backend": target.backend_kind,
        "instance_type": target.instance_type,
        "model": target.model,
        "precision": target.precision,
        "serving_config": target.serving_config,
        "serving_json": json.dumps(target.serving.model_dump(mode="json"), sort_keys=True),
        "workload_json": json.dumps(target.workload.model_dump(mode="json"), sort_keys=True),
        "usd_per_hour": usd_h,
        "price_basis": price.basis,
        "usd_per_m_input_tokens_list": price.usd_per_m_input_tokens,
        "usd_per_m_output_tokens_list": price.usd_per_m_output_tokens,
        "price_source": price.source,
        "price_date": price.date,
        "price_note": price.note,
        "plan_warnings": "; ".join(target.warnings) or None,
        "status": status,
        "failed_stage": failed_stage,
        "error": error,
        "validation_passed": validation_passed,
        "endpoint_seconds": endpoint_seconds,
        "measuring_seconds": (measuring := metrics.measuring_seconds(events)),
        "measuring_fraction": metrics.measuring_fraction(measuring, endpoint_seconds),
        "benchmark_cost_usd": benchmark_cost,
        "raw_dir": str(d),
        **provenance(target),
        **cold_start(target, events),
        **dataset_columns(target),
    }


def dataset_columns(target: ResolvedTarget) -> dict[str, Any]:
    """What the target's prompts came from (the dataset as the plan scanned it) and, for multi-turn
    sessions, which history their turns carried; NULLs for generated prompts."""
    d = target.dataset
    return {
        "dataset_sha256": d.sha256 if d else None,
        "dataset_format": d.format if d else None,
        "dataset_path": d.path if d else None,
        "dataset_rows_total": d.rows_total if d else None,
        "dataset_rows_used": d.rows_used if d else None,
        "dataset_filter": d.filter if d else None,
        "dataset_sample": d.sample if d else None,
        "dataset_output": d.output if d else None,
        # multi-turn sessions' history: the row's assistant turns (data) or the model's answers (model)
        "multi_turn_history": target.workload.multi_turn.history if target.workload.multi_turn else None,
    }


def cold_start(target: ResolvedTarget, events: list[dict[str, Any]]) -> dict[str, Any]:
    """Seed 003's cold start on the target's row: the seconds from the deploy's create call to
    ready (metrics.time_to_ready_s, from events.jsonl), and the TTFT of the first request the
    target served (metrics.first_request_ttft_ms): its first initial warm-up request, else the
    first of its first level's warm-up, else of its first timed level (requests.jsonl)."""
    from llmbench.loadgen.sweep import read_jsonl_records, read_warmup

    warm = read_warmup(target.dir)
    first: list[Any] = warm.get("initial") or []
    if not first and warm.get("level"):
        c = warm["level"][0].concurrency
        first = [r for r in warm["level"] if r.concurrency == c]
    if not first and (target.dir / "requests.jsonl").exists():
        records = read_jsonl_records(target.dir / "requests.jsonl")[0]
        lowest = min(records, key=lambda r: r.request_index, default=None)
        first = [r for r in records if lowest is not None and r.concurrency == lowest.concurrency]
    return {
        "time_to_ready_s": metrics.time_to_ready_s(events),
        "first_request_ttft_ms": metrics.first_request_ttft_ms(first),
    }


def provenance(target: ResolvedTarget) -> dict[str, Any]:
    """What a row measured: the container image deployed (as the backend's deploy recorded it in
    <target dir>/server.json: a URI in the target's region, or the llama-server build; else as
    planned; images are named by tag, so no digest), the engine, the model id and revision (the
    catalog's `hf_revision`, where the backend serves it pinned; else NULL) and the llmbench that
    measured it; as the ready server reported it, the engine version (server.json, written by
    pipeline.record_engine_version; NULL where it did not say)."""
    b = target.backend
    image = None
    container = getattr(b, "container", None)
    if container is not None:
        settings = getattr(b, "settings", None)
        account = getattr(settings, "account_id", None) or ""
        image = container.image_uri(target.region, account)
    model_id = getattr(b, "model_id", None) or target.hf_id
    server = target.dir / "server.json"
    said = json.loads(server.read_text()) if server.exists() else {}
    return {
        "container_image": said.get("container_image") or image,
        "engine": target.serving.kind,
        "model_id": model_id,
        "llmbench_version": __version__,
        "engine_version": said.get("engine_version"),
        "engine_version_source": said.get("engine_version_source"),
        "model_revision": target.model_revision,
    }


def _quality_summary(target: ResolvedTarget) -> dict[str, Any] | None:
    p = target.dir / "quality.json"
    return json.loads(p.read_text()) if p.exists() else None


def _quality_answers(target: ResolvedTarget) -> dict[tuple[str, str, int], bool]:
    """(suite, item, run) -> passed (the gate's grading), from the target's quality.jsonl."""
    p = target.dir / "quality.jsonl"
    if not p.exists():
        return {}
    out = {}
    for line in p.read_text().splitlines():
        a = json.loads(line)
        if "item" in a:
            out[(a["suite"], str(a["item"]), int(a["run"]))] = bool(a["passed"])
    return out


_SCORE_FIELDS = (
    "score_strict",
    "strict_ci_low",
    "strict_ci_high",
    "score_flexible",
    "flexible_ci_low",
    "flexible_ci_high",
    "detectable_drop",
)


def quality_rows(run: RunPlan) -> list[dict[str, Any]]:
    """One `quality` row per target and suite of the config's quality section: what the target
    scored (llmbench.quality: strict and flexible, with Wilson 95 % bounds), the minimum, and the
    drop below its baseline target measured on the same items (metrics.paired_drop) with its 95 %
    interval. A target whose quality stage never ran (it failed earlier) has rows with status
    "not_run"."""
    rows = []
    summaries = {t.target_id: _quality_summary(t) for t in run.targets}
    by_id = {t.target_id: t for t in run.targets}
    answers: dict[str, dict[tuple[str, str, int], bool]] = {}
    for target in run.targets:
        q = target.quality
        if q is None:
            continue
        summary = summaries[target.target_id] or {"suites": {}}
        judged = q.baseline is not None and q.baseline != target.target_id and q.baseline in by_id
        base = (summaries.get(q.baseline or "") or {"suites": {}}) if judged else {"suites": {}}
        if judged:
            for tid in (target.target_id, q.baseline):
                assert tid is not None
                answers.setdefault(tid, _quality_answers(by_id[tid]))
        for suite in q.suite_names:
            s = summary["suites"].get(suite) or {"status": "not_run", "score": None, "n": 0, "passed": 0}
            b = base["suites"].get(suite) or {}
            baseline_score = b.get("score") if judged else None
            drop, drop_low, drop_high = metrics.score_drop(baseline_score, s["score"]), None, None
            if judged and baseline_score is not None and s["score"] is not None:
                mine = {k: v for k, v in answers[target.target_id].items() if k[0] == suite}
                theirs = answers[q.baseline or ""]
                common = sorted(set(mine) & {k for k in theirs if k[0] == suite})
                paired = metrics.paired_drop([theirs[k] for k in common], [mine[k] for k in common])
                if paired is not None:
                    drop, drop_low, drop_high = paired
            rows.append(
                {
                    "run_key": run.run_key,
                    "target_id": target.target_id,
                    "suite": suite,
                    "status": s["status"],
                    "score": s["score"],
                    "n": int(s["n"]),
                    "n_passed": int(s["passed"]),
                    "runs": q.runs,
                    "min_score": q.min_score_of(suite),
                    "baseline_target_id": q.baseline,
                    "baseline_score": baseline_score,
                    "drop_vs_baseline": drop,
                    "reason": s.get("reason"),
                    "raw_path": str(target.dir / "quality.jsonl"),
                    "grade_on": q.grade_on,
                    **{k: s.get(k) for k in _SCORE_FIELDS},
                    "drop_ci_low": drop_low,
                    "drop_ci_high": drop_high,
                    "n_truncated": int(s.get("n_truncated") or 0),
                    "reasoning_tokens": s.get("reasoning_tokens"),
                }
            )
    return rows


def quality_verdicts(run: RunPlan, rows: list[dict[str, Any]]) -> dict[str, bool | None]:
    """Per target with a quality section: the gate (llmbench.results.validation.validate_quality, written
    to <target dir>/quality_validation.json). False when its quality stage never ran."""
    if not rows:
        return {}
    from llmbench.results.validation import validate_quality

    verdicts: dict[str, bool | None] = {}
    for target in run.targets:
        if target.quality is None:
            continue
        mine = [r for r in rows if r["target_id"] == target.target_id]
        if all(r["status"] == "not_run" for r in mine):
            verdicts[target.target_id] = False
            continue
        outcome = validate_quality(mine, target.quality.max_drop_vs_baseline, target.dir / "quality_validation.json")
        verdicts[target.target_id] = outcome["quality_passed"]
    return verdicts


def _quality_columns(target: ResolvedTarget, rows: list[dict[str, Any]], passed: bool | None) -> dict[str, Any]:
    """A target's quality figures on its `targets` row (NULL without a quality section)."""
    mine = {r["suite"]: r["score"] for r in rows if r["target_id"] == target.target_id}
    scored = [r for r in rows if r["target_id"] == target.target_id and r["score"] is not None]
    # The interval of all the target's graded answers pooled (its suites' own are on `quality`).
    ci = metrics.wilson_interval(sum(r["n_passed"] for r in scored), sum(r["n"] for r in scored))
    return {
        "quality_score": metrics.quality_score([v for v in mine.values() if v is not None]),
        "quality_ci_low": ci[0] if ci else None,
        "quality_ci_high": ci[1] if ci else None,
        **{f"quality_score_{s}": mine.get(s) for s in QUALITY_SUITES},
        "quality_passed": passed,
    }


def _per_token_cost(target: ResolvedTarget) -> float | None:
    """What a per-token target's requests cost (warm-up and sweep), from their recorded tokens."""
    import pandas as pd

    p = target.price
    path = target.dir / "requests.parquet"
    if not path.exists() or p.usd_per_m_input_tokens is None or p.usd_per_m_output_tokens is None:
        return None
    rq = pd.read_parquet(path, columns=["input_tokens", "output_tokens"])
    return pricing.per_token_benchmark_cost_usd(
        p.usd_per_m_input_tokens,
        p.usd_per_m_output_tokens,
        int(rq["input_tokens"].fillna(0).sum()),
        int(rq["output_tokens"].fillna(0).sum()),
    )


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


def workload_columns(w: Workload) -> dict[str, Any]:
    """What a price row was measured with, to filter the comparison per model and workload: the
    planned mean input tokens per request (the shared prefix included: the whole prompt) and mean
    output tokens, and a label naming them (and the preset, if the workload has one)."""
    tokens_in = length_mean(w.input_tokens) + w.shared_prefix_tokens
    tokens_out = length_mean(w.output_tokens)
    label = f"{tokens_in:g} in / {tokens_out:g} out"
    return {
        "workload_label": f"{w.preset} ({label})" if w.preset else label,
        "workload_input_tokens": tokens_in,
        "workload_output_tokens": tokens_out,
    }


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


HEADLINE_COLUMNS = {"output": "usd_per_m_output_tokens", "total": "usd_per_m_total_tokens"}


def headline_price(row: dict[str, Any], basis: str) -> dict[str, Any]:
    """The $/M a run ranks and labels by (config `price_basis`): per output token or per total
    (input + output) token; both figures stay on the row."""
    return {"headline_basis": basis, "usd_per_m_headline": row.get(HEADLINE_COLUMNS[basis])}


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


def build_tables(run_dir: str, locate: Callable[[str], str] | None = None) -> dict[str, Any]:
    """Every table of the run key's published result, from the raw results and prices; written
    under <run_dir>/tables/ and returned as frames. The run's own targets, and every other target
    of its run key from the attempt it was last published from (llmbench.results.union): a partial
    run replaces only the targets it ran, and the run-level tables are over the union."""
    import pandas as pd

    own = RunPlan.load(run_dir)
    run, attempts = union_plan(own)
    at = locate or (lambda p: p)  # a task's local copy of an object store: rows name the objects
    targets, levels, requests = [], [], []
    prices: list[dict[str, Any]] = []
    quality = quality_rows(run)
    verdicts = quality_verdicts(run, quality)
    for target in run.targets:
        row = target_row(run, target)
        row.update(_quality_columns(target, quality, verdicts.get(target.target_id)))
        targets.append(row)
        d = target.dir
        if not (d / "levels.parquet").exists():
            continue
        lv = pd.read_parquet(d / "levels.parquet")
        rq = pd.read_parquet(d / "requests.parquet")
        for frame in (lv, rq):
            frame.insert(0, "target_id", target.target_id)
            frame.insert(0, "run_key", run.run_key)
            frame["validation_passed"] = row["validation_passed"]
        levels.append(lv)
        requests.append(rq)
        # Per target, over its closed-loop levels: the knee and how much latency the highest
        # level costs (an open-loop curve is over arrival rates, not concurrency).
        level_rows = [r for r in lv.to_dict("records") if not r.get("arrival_rate_rps")]
        row["knee_concurrency"] = metrics.knee_concurrency(level_rows)
        row["e2e_ms_p50_degradation"] = metrics.latency_degradation(level_rows)
        row["latency_knee_concurrency"] = metrics.latency_knee_concurrency(level_rows)
        prices.extend(
            {
                **r,
                "quality_score": row["quality_score"],
                "quality_ci_low": row["quality_ci_low"],
                "quality_ci_high": row["quality_ci_high"],
                "quality_passed": row["quality_passed"],
            }
            for r in price_rows(run, target, lv.to_dict("records"), row["validation_passed"])
        )

    break_even = compare_paths(run, {t["target_id"]: t["status"] for t in targets}, prices, verdicts)
    speculative_speedups(run, prices)
    pp = pd.DataFrame(prices)
    if not pp.empty:
        # Best configuration per model: the cheapest tokens, on the run's price basis (per output
        # or per total token: usd_per_m_headline), among levels that meet the SLO, of targets that
        # passed the quality gate or had none (fast but wrong must not win) and passed validation
        # (as v_best_under_slo asks: a level of a target whose errors failed it is no answer).
        passed_quality = pp["quality_passed"].map(lambda v: v is None or v != v or bool(v))
        validated = pp["validation_passed"].map(lambda v: v is not None and v == v and bool(v))
        ok = pp[pp["meets_slo"] & pp["usd_per_m_headline"].notna() & passed_quality & validated]
        best = ok.loc[ok.groupby("model")["usd_per_m_headline"].idxmin()] if not ok.empty else ok
        pp["best_under_slo"] = pp.index.isin(best.index)
    tdf = pd.DataFrame(targets)
    failed = int((tdf["status"] == "failed").sum())
    invalid = int((tdf["validation_passed"] == False).sum())  # noqa: E712 (None is not False)
    wrong = int((tdf["quality_passed"] == False).sum())  # noqa: E712
    costs = [c for c in tdf["benchmark_cost_usd"] if c is not None and c == c]
    computed = Computation.of_run(run_dir)
    runs = pd.DataFrame(
        [
            {
                "run_key": run.run_key,
                "config_name": run.config_name,
                "logical_date": run.logical_date,
                "run_dir": at(run_dir),
                "report_path": at(str(Path(run_dir) / "report.html")),
                "planned_at": run.planned_at,
                "published_at": datetime.now(UTC).isoformat(),
                "status": "succeeded"
                if failed == 0 and invalid == 0 and wrong == 0
                else ("failed" if failed == len(tdf) else "partial"),
                "targets_planned": len(tdf),
                # which targets this attempt ran (it replaced their rows), and the attempt folder
                # each published target's raw results come from (the others were inherited)
                "targets_replaced": json.dumps([t.target_id for t in own.targets]),
                "target_attempts": json.dumps({k: at(v) for k, v in attempts.items()}, sort_keys=True),
                "targets_failed": failed,
                "targets_validation_failed": invalid,
                "targets_quality_failed": wrong,
                "benchmark_cost_usd": sum(costs) if costs else None,
                "llmbench_version": __version__,
                # which code computed these tables, when, and whether from a reprocess of the raw results
                "computed_by": computed.computed_by,
                "computed_at": computed.computed_at,
                "computation": computed.computation,
                "reprocess_prices": computed.prices,
            }
        ]
    )
    for col in ("planned_at", "published_at", "computed_at"):
        runs[col] = pd.to_datetime(runs[col], utc=True)
    if locate is not None:
        tdf["raw_dir"] = tdf["raw_dir"].map(at)
        for row in quality:
            row["raw_path"] = at(row["raw_path"])
    tables = Path(run_dir) / "tables"
    tables.mkdir(exist_ok=True)
    frames = {
        "runs": runs,
        "targets": tdf,
        "levels": pd.concat(levels, ignore_index=True) if levels else pd.DataFrame(),
        "requests": pd.concat(requests, ignore_index=True) if requests else pd.DataFrame(),
        "price_performance": pp,
        "break_even": pd.DataFrame(break_even),
        "reference": pd.DataFrame(reference_rows(run), columns=list(REFERENCE_COLUMNS)),
        "quality": pd.DataFrame(quality),
        "capacity": pd.DataFrame(traffic.capacity_rows(run)),
        "traffic_cost": pd.DataFrame(traffic.traffic_cost_rows(run, targets, prices)),
    }
    for name, frame in frames.items():
        frame.to_parquet(tables / f"{name}.parquet", index=False)
    return frames


def load_tables(run_dir: str) -> dict[str, Any]:
    """The tables build_tables wrote for this run, as frames."""
    import pandas as pd

    # a run built before a table existed (capacity, traffic_cost) has none: an empty frame
    files = {t: Path(run_dir) / "tables" / f"{t}.parquet" for t in TABLE_NAMES}
    return {t: pd.read_parquet(f) if f.exists() else pd.DataFrame() for t, f in files.items()}
