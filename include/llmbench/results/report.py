"""The per-run HTML report: plots against concurrency and the tables, one self-contained file."""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import Any


def _axes():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(6, 3.6), dpi=100)


def _img(fig, title: str) -> str:
    """The figure as an inline PNG <img>, titled; the figure is closed."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return f'<img alt="{html.escape(title)}" src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">'


def _level_key(frame) -> tuple[str, str, str]:
    """What tells a run's levels apart: (column, short label, axis label). Open-loop levels (every
    level with an arrival rate) are told apart by their rate, closed-loop ones by concurrency."""
    if "arrival_rate_rps" in frame and len(frame) and (frame["arrival_rate_rps"].fillna(0) > 0).all():
        return "arrival_rate_rps", "r", "offered load (Poisson arrivals, requests/s)"
    return "concurrency", "c", "concurrency (closed-loop streams)"


def _plot(levels, y: str, ylabel: str, title: str) -> str:
    import matplotlib.ticker

    x, _, xlabel = _level_key(levels)
    fig, ax = _axes()
    for target_id, g in levels.sort_values(x).groupby("target_id"):
        ax.plot(g[x], g[y], marker="o", label=target_id)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(levels[x].unique()))
    ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return _img(fig, title)


def _frontier(levels) -> str:
    """Throughput against latency, one curve per target, each level labelled with its
    concurrency and the knee circled."""
    from llmbench.analysis.metrics import knee_concurrency

    x, short, _ = _level_key(levels)
    fig, ax = _axes()
    for target_id, g in levels.sort_values(x).groupby("target_id"):
        (line,) = ax.plot(g["e2e_ms_p50"], g["output_tokens_per_s"], marker="o", label=target_id)
        for _, row in g.iterrows():
            ax.annotate(
                f"{short}={row[x]:g}",
                (row["e2e_ms_p50"], row["output_tokens_per_s"]),
                textcoords="offset points",
                xytext=(4, 4),
                fontsize=7,
            )
        knee = knee_concurrency(g.to_dict("records")) if x == "concurrency" else None
        if knee is not None:
            k = g[g["concurrency"] == knee].iloc[0]
            ax.scatter(
                [k["e2e_ms_p50"]],
                [k["output_tokens_per_s"]],
                s=200,
                facecolors="none",
                edgecolors=line.get_color(),
                linewidths=2,
                label=f"{target_id} knee (c={knee})",
            )
    ax.set_xlabel("end-to-end latency p50 (ms)")
    ax.set_ylabel("output tokens/s")
    ax.set_title("Throughput against latency (knee circled)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return _img(fig, "Throughput against latency")


def _cost_bars(pp) -> str:
    """$ per million output tokens, one group of bars per target, one bar per concurrency: the
    cheapest tokens are the lowest bar, whichever target it belongs to."""
    import numpy as np

    column, label = headline(pp)
    fig, ax = _axes()
    data = pp.dropna(subset=[column])
    x, short, _ = _level_key(data)
    targets = sorted(data["target_id"].unique())
    levels = sorted(data[x].unique())
    width = 0.8 / max(1, len(levels))
    for i, c in enumerate(levels):
        row = data[data[x] == c].set_index("target_id")[column]
        ax.bar(
            np.arange(len(targets)) + i * width, [row.get(t, np.nan) for t in targets], width, label=f"{short}={c:g}"
        )
    ax.set_xticks(np.arange(len(targets)) + width * (len(levels) - 1) / 2)
    ax.set_xticklabels(targets, fontsize=7, rotation=10)
    ax.set_ylabel(label)
    ax.set_title("Price-performance per target and concurrency (lower is cheaper)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, title="level", title_fontsize=7)
    return _img(fig, "Price-performance per target")


HEADLINE_LABELS = {"output": "$ per million output tokens", "total": "$ per million tokens (input + output)"}


def headline(pp) -> tuple[str, str]:
    """The $/M column the run ranks by and its label (config price_basis; output before it existed)."""
    if "headline_basis" in pp.columns and pp["headline_basis"].notna().any():
        basis = str(pp["headline_basis"].dropna().iloc[0])
        return "usd_per_m_headline", HEADLINE_LABELS.get(basis, HEADLINE_LABELS["output"])
    return "usd_per_m_output_tokens", HEADLINE_LABELS["output"]


def _roofline(pp) -> str:
    """Single-stream decode speed as a fraction of the memory-bandwidth ceiling, per target and
    concurrency; targets whose instance has no bandwidth in the catalog are named instead."""
    have = pp.dropna(subset=["roofline_efficiency"]) if "roofline_efficiency" in pp.columns else pp.iloc[0:0]
    missing = sorted(set(pp["target_id"]) - set(have["target_id"]))
    note = (
        (
            f"<p>Roofline efficiency not available for {html.escape(', '.join(missing))}: the catalog has no "
            "memory bandwidth for their instance type.</p>"
        )
        if missing
        else ""
    )
    if have.empty:
        return note
    return (
        _plot(
            have.assign(roofline_efficiency_pct=100 * have["roofline_efficiency"]),
            "roofline_efficiency_pct",
            "% of the bandwidth ceiling",
            "Roofline efficiency (decode tok/s per stream / ceiling)",
        )
        + note
        + _above_ceiling(have)
    )


def _above_ceiling(have) -> str:
    """Levels faster than their bandwidth ceiling, each with its likely cause, not shown bare."""
    if "roofline_note" not in have.columns or not have["roofline_note"].notna().any():
        return ""
    above = have[have["roofline_note"].notna()]
    return "<p>Above the bandwidth ceiling (efficiency over 100 %):</p>" + _table(
        above, ["target_id", "concurrency", "weight_gb_per_token", "roofline_efficiency", "roofline_note"]
    )


def _reference(ref, pp) -> str:
    """What the seed articles state or imply (the config's reference: block) beside what this run
    measured for the same target, column and concurrency, with the difference (v_reference)."""
    if ref is None or ref.empty:
        return ""
    rows = []
    closed = pp[pp["arrival_rate_rps"].fillna(0) == 0] if "arrival_rate_rps" in pp.columns else pp
    for r in ref.itertuples():
        measured = None
        if r.metric and r.target_id and r.metric in closed.columns:
            sel = closed[closed["target_id"] == r.target_id]
            if r.concurrency == r.concurrency and r.concurrency is not None:  # not NaN
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
    import pandas as pd

    return (
        "<h2>Against the seed articles</h2><p>What the articles state or imply (the config's "
        "<code>reference</code> block), beside what this run measured; a blank measurement: the run has "
        "no such figure (an unpriced target, another level). Every derived number of seeds 000-002 is "
        "recomputed in <code>benchmarks/results/seed_reproduction.md</code>.</p>"
        + _table(pd.DataFrame(rows), list(rows[0]))
    )


def _break_even(be, pp) -> str:
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
    return (
        f"<h3>Break-even against each per-token path ({n})</h3><p>Per hourly level and per-token path: "
        "the output tok/s the hourly path must sustain around the clock to cost no more than that "
        "per-token path, at the level's input:output ratio, and what each costs per million output "
        "tokens with their input.</p>"
        + _table(
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
        )
    )


# Marks the page once it has loaded: how many images there are and how many failed to decode.
# The browser test (tests/integration/test_dag_run.py) reads these from the rendered DOM.
LOAD_CHECK = """<script>
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  document.body.setAttribute('data-images', imgs.length);
  document.body.setAttribute('data-images-broken',
    imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); }).length);
});
</script>"""


def _table(df, columns: list[str]) -> str:
    cols = [c for c in columns if c in df.columns]
    return df[cols].to_html(index=False, float_format=lambda v: f"{v:,.3f}", na_rep="-", border=0, classes="t")


def write_report(frames: dict[str, Any], out: Path) -> Path:
    runs, targets, levels, pp = frames["runs"], frames["targets"], frames["levels"], frames["price_performance"]
    run = runs.iloc[0]
    parts = [
        "<!doctype html><meta charset='utf-8'>",
        f"<title>llmbench {html.escape(run['run_key'])}</title>",
        "<style>body{font-family:sans-serif;margin:2em}table.t{border-collapse:collapse;font-size:13px}"
        "table.t td,table.t th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right}"
        "img{margin:4px}</style>",
        f"<h1>llmbench run {html.escape(run['run_key'])}</h1>",
        f"<p>status <b>{html.escape(run['status'])}</b>; {run['targets_planned']} target(s), "
        f"{run['targets_failed']} failed, {run['targets_validation_failed']} failed validation, "
        f"{run.get('targets_quality_failed') or 0} failed the quality gate; "
        f"raw results in <code>{html.escape(run['run_dir'])}</code></p>",
        "<h2>Targets</h2>",
        _table(
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
                "price_basis",
                "usd_per_hour",
                "usd_per_m_input_tokens_list",
                "usd_per_m_output_tokens_list",
                "price_note",
                "plan_warnings",
                "endpoint_seconds",
                "benchmark_cost_usd",
            ],
        ),
        "<h3>Cold start and provenance</h3><p>Time to ready: from the deploy's create call to ready (blank: "
        "nothing was deployed). First-request TTFT: the first request the target served, cold (a warm-up "
        "request, in no level). Engine version: as the ready server reported it (blank: it did not say).</p>",
        _table(
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
        ),
    ]
    if not levels.empty:
        parts += [
            "<h2>Latency and throughput against concurrency</h2>",
            _plot(levels, "output_tokens_per_s", "output tokens/s", "Output throughput"),
            _plot(levels, "ttft_ms_p50", "ms", "TTFT p50"),
            _plot(levels, "ttft_ms_p99", "ms", "TTFT p99"),
            _plot(levels, "tpot_ms_p50", "ms", "TPOT p50"),
            _frontier(levels),
        ]
    if not pp.empty:
        parts += [
            _plot(pp, *headline(pp), "Price-performance"),
            _cost_bars(pp),
            _roofline(pp),
            "<h2>Price-performance</h2>",
            _table(
                pp,
                [
                    "target_id",
                    "concurrency",
                    "arrival_rate_rps",
                    "usd_per_hour",
                    "output_tokens_per_s",
                    "usd_per_m_output_tokens",
                    "quality_score",
                    "quality_ci_low",
                    "quality_ci_high",
                    "quality_passed",
                    "usd_per_m_total_tokens",
                    "headline_basis",
                    "break_even_output_tokens_per_s",
                    "roofline_efficiency",
                    "spec_decode_acceptance_rate",
                    "ttft_ms_p50",
                    "ttft_ms_p90",
                    "tpot_ms_p50",
                    "error_rate",
                    "meets_slo",
                    "best_under_slo",
                    "validation_passed",
                ],
            ),
        ]
    if not pp.empty:
        parts.append(_reference(frames.get("reference"), pp))
    if not pp.empty and "backend" in pp.columns and pp["backend"].nunique() > 1:
        # Several ways of serving side by side: the figures computed in llmbench.results.tables.compare_paths.
        parts += [
            "<h2>Serving paths compared</h2>",
            "<p>$/M output tokens with input: what a million output tokens cost together with the input "
            "tokens that came with them, comparable between hourly and per-token paths. Break-even: the "
            "output tok/s an hourly path must sustain 24x7 to cost no more than the run's cheapest "
            "per-token path, at the level's measured input:output ratio (against every per-token path: "
            "below).</p>",
            _table(
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
            ),
            _break_even(frames.get("break_even"), pp),
        ]
    quality = frames.get("quality")
    if quality is not None and not quality.empty:
        parts += [
            "<h2>Correctness</h2>",
            "<p>Each suite's items sent to each target after warm-up, outside the timed levels, and graded "
            "without a judge model (tool_call: the tool, its JSON arguments and the filter's meaning; others: "
            "strict, the format asked for, and flexible, the last number or the answer contained; "
            "docs/quality.md). A target whose quality_passed is false is never best under the SLO. "
            "Every answer and the grader's reason: <code>quality.jsonl</code> in the target's folder.</p>",
            _table(
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
                    "baseline_target_id",
                    "baseline_score",
                    "drop_vs_baseline",
                    "drop_ci_low",
                    "drop_ci_high",
                    "reason",
                ],
            ),
        ]
    if not levels.empty:
        parts += [
            "<h2>Levels</h2>",
            _table(
                levels,
                [
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
                    "itl_ms_p99",
                    "tpot_ms_p50",
                    "e2e_ms_p50",
                    "achieved_concurrency",
                    "client_cpu_pct",
                ],
            ),
        ]
    parts.append(LOAD_CHECK)
    out.write_text("\n".join(parts))
    return out
