"""Every column a person reads, once: its human name and unit (COLUMNS, the report's and the
history page's headers and cell formats) and the one list of a level's columns every level table
shows (LEVEL_COLUMNS: the CLI's sweep summary and the report's Levels table). A metric's column
takes its header and format from its class (analysis.metrics.types); the others are named here. A
column renamed by another stage is fixed here, not in every table."""

from __future__ import annotations

from dataclasses import dataclass

from llmbench.analysis.metrics import types

__all__ = ["COLUMNS", "LEVEL_COLUMNS", "Col"]


@dataclass(frozen=True)
class Col:
    label: str
    kind: str  # how fmt() writes it: usd, usd_h, usd_month, ms, s, tps, rps, int, pct, frac, num, bool, text


# Every column the report or the history page shows that no metric class fills, with a human name
# and unit; the metric classes' columns are added below.
COLUMNS: dict[str, Col] = {
    "target_id": Col("Target", "text"),
    "label": Col("Label", "text"),
    "backend": Col("Backend", "text"),
    "instance_type": Col("Instance", "text"),
    "model": Col("Model", "text"),
    "workload_label": Col("Workload", "text"),
    "status": Col("Status", "text"),
    "failed_stage": Col("Failed at", "text"),
    "error": Col("Error", "text"),
    "validation_passed": Col("Validation passed", "bool"),
    "quality_score": Col("Quality score", "frac"),
    "quality_passed": Col("Quality gate passed", "bool"),
    "price_basis": Col("Price basis", "text"),
    "price_note": Col("Price note", "text"),
    "plan_warnings": Col("Plan warnings", "text"),
    "usd_per_hour": Col("$/hour", "usd_h"),
    "usd_per_m_input_tokens_list": Col("List $/M input tokens", "usd"),
    "usd_per_m_output_tokens_list": Col("List $/M output tokens", "usd"),
    "endpoint_seconds": Col("Endpoint time (s)", "s"),
    "measuring_fraction": Col("Time measuring", "pct"),
    "benchmark_cost_usd": Col("Benchmark cost", "usd"),
    "time_to_ready_s": Col("Time to ready (s)", "s"),
    "first_request_ttft_ms": Col("First-request TTFT (ms)", "ms"),
    "engine": Col("Engine", "text"),
    "engine_version": Col("Engine version", "text"),
    "model_id": Col("Model id", "text"),
    "model_revision": Col("Model revision", "text"),
    "container_image": Col("Container image", "text"),
    "llmbench_version": Col("llmbench version", "text"),
    "concurrency": Col("Concurrency", "num"),
    "arrival_rate_rps": Col("Arrival rate (req/s)", "num"),
    "level": Col("Level", "text"),
    "rank": Col("Rank", "text"),
    "usd_per_m_output_tokens": Col("$/M output tokens", "usd"),
    "usd_per_m_total_tokens": Col("$/M tokens (in + out)", "usd"),
    "usd_per_m_headline": Col("$/M (the run's price basis)", "usd"),
    "usd_per_m_output_tokens_with_input": Col("$/M output tokens with input", "usd"),
    "headline_basis": Col("Ranked by", "text"),
    "monthly_usd": Col("$/month (24x7)", "usd_month"),
    "break_even_output_tokens_per_s": Col("Break-even output tok/s", "tps"),
    "roofline_efficiency": Col("Roofline efficiency", "pct"),
    "weight_gb_per_token": Col("Weights read per token (GB)", "num"),
    "roofline_note": Col("Why above the ceiling", "text"),
    "roofline_pct": Col("Roofline efficiency (%)", "num"),
    "spec_decode_acceptance_rate": Col("Spec. decode acceptance", "pct"),
    "meets_slo": Col("Meets SLO", "bool"),
    "best_under_slo": Col("Best under SLO", "bool"),
    "per_token_target_id": Col("Per-token path", "text"),
    "per_token_usd_per_m_output_tokens_with_input": Col("Per-token $/M output with input", "usd"),
    "input_tokens_per_output_token": Col("Input per output token", "num"),
    "break_even_output_tokens_per_s_vs_per_token": Col("Break-even tok/s vs per-token", "tps"),
    "beats_per_token": Col("Beats per-token", "bool"),
    "managed_overhead_ttft_ms_p50": Col("Managed overhead TTFT p50 (ms)", "ms"),
    "managed_overhead_e2e_ms_p50": Col("Managed overhead e2e p50 (ms)", "ms"),
    "suite": Col("Suite", "text"),
    "score": Col("Score", "frac"),
    "n_passed": Col("Items passed", "int"),
    "n": Col("Items", "int"),
    "min_score": Col("Minimum score", "frac"),
    "baseline_target_id": Col("Baseline target", "text"),
    "baseline_score": Col("Baseline score", "frac"),
    "drop_vs_baseline": Col("Drop vs baseline", "frac"),
    "reason": Col("Reason", "text"),
    "seed": Col("Seed", "text"),
    "metric": Col("Figure", "text"),
    "article": Col("Article", "num"),
    "implied": Col("Implied", "bool"),
    "measured": Col("Measured", "num"),
    "difference_pct": Col("Difference (%)", "num"),
    "says": Col("The article says", "text"),
    # Other stages' figures (quality intervals, goodput, capacity): shown when a frame has them.
    "quality_score_flexible": Col("Quality (flexible)", "frac"),
    "quality_score_strict": Col("Quality (strict)", "frac"),
    "quality_ci_low": Col("Quality 95 % CI low", "frac"),
    "quality_ci_high": Col("Quality 95 % CI high", "frac"),
    "slo_met": Col("SLO met", "bool"),
    # The history page.
    "week": Col("Week of", "text"),
    "path": Col("Path", "text"),
    "config_name": Col("Config", "text"),
    "change_pct": Col("Change vs previous week (%)", "num"),
    "history_status": Col("Week-over-week", "text"),
    "capacity_rps": Col("Capacity at SLO (req/s)", "rps"),
}

COLUMNS.update({column: Col(label, kind) for column, (label, kind) in types.column_labels().items()})


# A level's figures as every level table shows them, in this order (a frame's missing ones are
# skipped: a sweep's levels have no target_id).
LEVEL_COLUMNS = [
    "target_id",
    "concurrency",
    "arrival_rate_rps",
    "requests_ok",
    "requests_failed",
    "error_rate",
    "output_tokens_per_s",
    "requests_per_s",
    "ttft_ms_p50",
    "ttft_ms_p99",
    "itl_ms_mean",
    "itl_ms_p50",
    "itl_ms_p99",
    "tpot_ms_p50",
    "e2e_ms_p50",
    "achieved_concurrency",
    "client_cpu_pct",
]
