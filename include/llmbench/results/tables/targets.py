"""The `targets` table: one row per target, what was planned, how far it got and what it cost
(target_row), with its workload's and dataset's columns, its cold start and its provenance."""

from __future__ import annotations

import json
from typing import Any

from llmbench import __version__
from llmbench.analysis import pricing
from llmbench.analysis.metrics.types.base import TargetMetric
from llmbench.analysis.metrics.types.lifecycle import (
    FirstRequestTtftMs,
    MeasuringFraction,
    MeasuringSeconds,
    TargetLife,
    TimeToReadyS,
)
from llmbench.redaction import redact
from llmbench.results.events import read_events
from llmbench.schemas.targets import ResolvedTarget, RunPlan
from llmbench.schemas.workload import Workload, length_mean


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
    life = TargetLife(events, endpoint_seconds, first_served(target))
    price = target.price
    usd_h = price.usd_per_hour
    if price.basis == "per_token":
        benchmark_cost = per_token_cost(target)
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
        **lifecycle_figures(life, (MeasuringSeconds, MeasuringFraction)),
        "benchmark_cost_usd": benchmark_cost,
        "raw_dir": str(d),
        **provenance(target),
        **lifecycle_figures(life, (TimeToReadyS, FirstRequestTtftMs)),
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


def lifecycle_figures(life: TargetLife, figures: tuple[type[TargetMetric], ...]) -> dict[str, Any]:
    """Lifecycle columns of the target's row, each its metric class's (analysis.metrics.types.lifecycle)."""
    row: dict[str, Any] = {}
    for metric in figures:
        row.update(metric.of(life, row))
    return row


def cold_start(target: ResolvedTarget, events: list[dict[str, Any]]) -> dict[str, Any]:
    """Seed 003's cold start on the target's row: the seconds from the deploy's create call to
    ready (TimeToReadyS, from events.jsonl), and the TTFT of the first request the target served
    (FirstRequestTtftMs, over first_served)."""
    return lifecycle_figures(TargetLife(events, None, first_served(target)), (TimeToReadyS, FirstRequestTtftMs))


def first_served(target: ResolvedTarget) -> list[Any]:
    """The records of the first request the target served, for seed 003's cold start: its first
    initial warm-up request, else the first of its first level's warm-up, else of its first timed
    level (requests.jsonl)."""
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
    return first


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


def per_token_cost(target: ResolvedTarget) -> float | None:
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
