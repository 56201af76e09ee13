"""The HTML page: its stylesheet and load check (templates/, package data), Plotly inlined, and the
run's report put together from the answer, the charts and the tables (write_report)."""

from __future__ import annotations

import html
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from llmbench.analysis.columns import LEVEL_COLUMNS
from llmbench.results.report.answer import answer_html
from llmbench.results.report.cells import headline, missing, pick, table
from llmbench.results.report.charts import Charts, distributions, frontier, load_charts, roofline

# The report's size bound: plotly.min.js (about 4.8 MB) plus the run's figures (the per-request
# points are sampled: charts.REQUESTS_PER_SERIES).
REPORT_MAX_BYTES = 6_500_000


@cache
def template(name: str) -> str:
    """A file of templates/ (the page's stylesheet and script), read once."""
    return files("llmbench.results.report").joinpath("templates", name).read_text()


# After load: how many charts there are and how many drew an SVG, and any script error, on <body>
# (the browser test reads them; a person sees a blank box).
def style() -> str:
    return f"<style>\n{template('report.css')}</style>"


def load_check() -> str:
    return f"<script>\n{template('load_check.js')}</script>"


def plotly_js() -> str:
    """Plotly's JavaScript, from the plotly wheel: inlined, so the page needs no network."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def page(title: str, body: list[str], charts: bool) -> str:
    """A whole self-contained HTML page; with `charts`, Plotly inlined in <head>."""
    js = f"<script>{plotly_js()}</script>" if charts else ""
    return "\n".join(
        [
            "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
            "<meta name='viewport' content='width=device-width, initial-scale=1'>",
            f"<title>{html.escape(title)}</title>",
            style(),
            "<script>window.__errors=[];window.addEventListener('error',function(e){window.__errors.push(String(e.message));});</script>",
            js,
            "</head><body>",
            *body,
            load_check(),
            "</body></html>",
        ]
    )


def _reference(ref: Any, pp: Any) -> str:
    """What the seed articles state or imply (the config's reference: block) beside what this run
    measured for the same target, column and concurrency, with the difference (v_reference)."""
    if ref is None or ref.empty:
        return ""
    import pandas as pd

    rows = []
    closed = pp[pp["arrival_rate_rps"].fillna(0) == 0] if "arrival_rate_rps" in pp.columns else pp
    for r in ref.itertuples():
        measured = None
        if r.metric and r.target_id and r.metric in closed.columns:
            sel = closed[closed["target_id"] == r.target_id]
            if not missing(r.concurrency):
                sel = sel[sel["concurrency"] == r.concurrency]
            vals = sel[r.metric].dropna()
            measured = float(vals.mean()) if not vals.empty else None
        rows.append(
            {
                "seed": r.seed,
                "target_id": r.target_id,
                "metric": r.metric,
                "concurrency": r.concurrency,
                "article": r.value,
                "implied": r.implied,
                "measured": measured,
                "difference_pct": None if measured is None or not r.value else 100 * (measured / r.value - 1),
                "says": r.says,
            }
        )
    return (
        "<h2>Against the seed articles</h2><p>What the articles state or imply (the config's "
        "<code>reference</code> block), beside what this run measured; a blank measurement: the run has "
        "no such figure (an unpriced target, another level). Every derived number of seeds 000-002 is "
        "recomputed in <code>benchmarks/results/seed_reproduction.md</code>.</p>"
        + table(pd.DataFrame(rows), list(rows[0]))
    )


def _break_even(be: Any, pp: Any) -> str:
    """Every hourly level against every per-token path of the run (table break_even, view
    v_break_even), not only the cheapest: the output tok/s to sustain 24x7 to cost no more."""
    if be is None or be.empty:
        return ""
    level = ["target_id", "concurrency", "arrival_rate_rps"]
    have = [c for c in ("output_tokens_per_s", "usd_per_m_output_tokens_with_input") if c in pp.columns]
    rows = be.merge(pp[level + have], on=level, how="left").sort_values(
        ["per_token_target_id", "concurrency", "arrival_rate_rps", "target_id"]
    )
    n = be["per_token_target_id"].nunique()
    return f"<h3>Break-even against each per-token path ({n})</h3>" + table(
        rows,
        [
            "per_token_target_id",
            "target_id",
            "concurrency",
            "arrival_rate_rps",
            "input_tokens_per_output_token",
            "per_token_usd_per_m_output_tokens_with_input",
            "usd_per_m_output_tokens_with_input",
            "output_tokens_per_s",
            "break_even_output_tokens_per_s",
            "beats_per_token",
        ],
        summary="Per hourly level and per-token path: the output tok/s the hourly path must sustain around "
        "the clock to cost no more, at the level's input:output ratio",
    )


# Keys and bookkeeping, not figures a reader compares.
_NOT_FIGURES = {"run_key", "logical_date", "repeat", "window_s", "computed_by"}


def _other_columns(levels: Any) -> list[str]:
    """The levels' columns no table above shows (other stages add server-side metrics, dataset and
    multi-turn details): listed as recorded, so a new figure is visible before it has a label."""
    return [c for c in levels.columns if c not in LEVEL_COLUMNS and c not in _NOT_FIGURES and levels[c].notna().any()]


def write_report(frames: dict[str, Any], out: Path) -> Path:
    """Write the run's report to `out`: answer, charts, tables, in one file."""
    runs, targets, levels, pp = frames["runs"], frames["targets"], frames["levels"], frames["price_performance"]
    run = runs.iloc[0]
    charts = Charts()
    quality_failed = run.get("targets_quality_failed")
    body = [
        f"<h1>llmbench run {html.escape(str(run['run_key']))}</h1>",
        answer_html(frames),
        f"<p>Run status <b>{html.escape(str(run['status']))}</b>: {run['targets_planned']} target(s) planned, "
        f"{run['targets_failed']} failed, {run['targets_validation_failed']} failed validation, "
        f"{0 if missing(quality_failed) else int(quality_failed)} failed the quality gate. "
        f"Raw results: <code>{html.escape(str(run['run_dir']))}</code>.</p>",
    ]
    if not pp.empty:
        body += ["<h2>Price-performance</h2>", frontier(charts, pp)]
    if not levels.empty:
        body += ["<h2>Throughput and latency against load</h2>", load_charts(charts, levels)]
    body.append(distributions(charts, frames.get("requests")))
    if not pp.empty:
        body.append(roofline(charts, pp))
    body += _targets_tables(targets)
    if not pp.empty:
        body += _price_tables(frames, pp)
    if not pp.empty and "backend" in pp.columns and pp["backend"].nunique() > 1:
        body += _paths_tables(frames, pp)
    quality = frames.get("quality")
    if quality is not None and not quality.empty:
        body += _quality_tables(quality)
    if not levels.empty:
        body += _levels_tables(levels)
    out.write_text(page(f"llmbench {run['run_key']}", [b for b in body if b], charts=charts.n > 0))
    return out


def _targets_tables(targets: Any) -> list[str]:
    """Each target's status, prices, the benchmark's own cost, cold start and provenance."""
    return [
        "<h2>Targets</h2>",
        table(
            targets,
            [
                "target_id",
                "backend",
                "label",
                "status",
                "failed_stage",
                "error",
                "validation_passed",
                "quality_score",
                "quality_passed",
                "usd_per_hour",
                "price_basis",
            ],
        ),
        "<p>Time measuring: the share of the billed endpoint time (deploy to teardown) spent in warm-up, "
        "quality and the sweep; the rest was overhead the benchmark paid for.</p>",
        table(
            targets,
            [
                "target_id",
                "usd_per_m_input_tokens_list",
                "usd_per_m_output_tokens_list",
                "price_note",
                "plan_warnings",
                "endpoint_seconds",
                "measuring_fraction",
                "benchmark_cost_usd",
            ],
            summary="Prices and cost of the benchmark",
        ),
        "<h3>Cold start and provenance</h3><p>Time to ready: from the deploy's create call to ready (— : "
        "nothing was deployed). First-request TTFT: the first request the target served, cold (a warm-up "
        "request, in no level). Engine version: as the ready server reported it.</p>",
        table(
            targets,
            [
                "target_id",
                "time_to_ready_s",
                "first_request_ttft_ms",
                "engine",
                "engine_version",
                "model_id",
                "model_revision",
                "container_image",
                "llmbench_version",
            ],
            summary="Cold start and provenance per target",
        ),
    ]


def _price_tables(frames: dict[str, Any], pp: Any) -> list[str]:
    """Price-performance per level: the figures the answer ranks by, then all of them, then the
    seed articles' figures beside this run's."""
    cost = headline(pp)[0]
    q = [c for c in (pick(pp, "quality"), pick(pp, "quality_low"), pick(pp, "quality_high")) if c]
    return [
        "<h2>Price-performance per level</h2>",
        table(
            pp,
            [
                "target_id",
                "concurrency",
                "arrival_rate_rps",
                cost,
                "output_tokens_per_s",
                "ttft_ms_p90",
                "tpot_ms_p90",
                *q,
                "meets_slo",
                "best_under_slo",
            ],
        ),
        table(
            pp,
            [
                "target_id",
                "concurrency",
                "arrival_rate_rps",
                "usd_per_hour",
                "usd_per_m_output_tokens",
                "usd_per_m_total_tokens",
                "headline_basis",
                "quality_score",
                "quality_ci_low",
                "quality_ci_high",
                "quality_passed",
                "break_even_output_tokens_per_s",
                "roofline_efficiency",
                "spec_decode_acceptance_rate",
                "ttft_ms_p50",
                "tpot_ms_p50",
                "error_rate",
                "validation_passed",
            ],
            summary="All price-performance figures per level",
        ),
        _reference(frames.get("reference"), pp),
    ]


def _paths_tables(frames: dict[str, Any], pp: Any) -> list[str]:
    """Several ways of serving side by side (the figures of llmbench.results.tables.compare_paths)."""
    return [
        "<h2>Serving paths compared</h2>",
        "<p>$/M output tokens with input: what a million output tokens cost together with the input "
        "tokens that came with them, comparable between hourly and per-token paths. Break-even: the "
        "output tok/s an hourly path must sustain 24x7 to cost no more than the run's cheapest "
        "per-token path, at the level's measured input:output ratio (against every per-token path: "
        "below).</p>",
        table(
            pp.sort_values(["concurrency", "usd_per_m_output_tokens_with_input"], na_position="last"),
            [
                "concurrency",
                "target_id",
                "backend",
                "instance_type",
                "model",
                "workload_label",
                "price_basis",
                "usd_per_m_output_tokens_with_input",
                "usd_per_m_output_tokens",
                "quality_score",
                "monthly_usd",
                "output_tokens_per_s",
                "ttft_ms_p50",
                "e2e_ms_p50",
                "meets_slo",
                "per_token_target_id",
                "break_even_output_tokens_per_s_vs_per_token",
                "managed_overhead_ttft_ms_p50",
                "managed_overhead_e2e_ms_p50",
                "price_note",
            ],
            summary="Every path and level, side by side",
        ),
        _break_even(frames.get("break_even"), pp),
    ]


def _quality_tables(quality: Any) -> list[str]:
    """Each suite's score per target, with its interval, gate and baseline."""
    return [
        "<h2>Correctness</h2>",
        "<p>Each suite's items sent to each target after warm-up, outside the timed levels, and graded "
        "without a judge model (tool_call: the tool, its JSON arguments and the filter's meaning; others: "
        "strict, the format asked for, and flexible, the last number or the answer contained; "
        "docs/quality.md). A target whose quality_passed is false is never best under the SLO. "
        "Every answer and the grader's reason: <code>quality.jsonl</code> in the target's folder.</p>",
        table(
            quality,
            [
                "target_id",
                "suite",
                "status",
                "score",
                "score_strict",
                "score_flexible",
                "flexible_ci_low",
                "flexible_ci_high",
                "n_passed",
                "n",
                "n_truncated",
                "detectable_drop",
                "min_score",
                "quality_ci_low",
                "quality_ci_high",
                "baseline_target_id",
                "baseline_score",
                "drop_vs_baseline",
                "drop_ci_low",
                "drop_ci_high",
                "reason",
            ],
        ),
    ]


def _levels_tables(levels: Any) -> list[str]:
    """Every level's measurements (analysis.columns.LEVEL_COLUMNS), then the figures no table shows."""
    return [
        "<h2>Levels</h2>",
        table(levels, LEVEL_COLUMNS, summary="Every level's measurements"),
        table(
            levels,
            ["target_id", "concurrency", "arrival_rate_rps", *_other_columns(levels)],
            summary="Other per-level figures (server-side metrics, workload details: as the run recorded them)",
        ),
    ]
