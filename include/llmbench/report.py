"""The per-run HTML report: plots against concurrency and the tables, one self-contained file."""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import Any


def _plot(levels, y: str, ylabel: str, title: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=100)
    for target_id, g in levels.sort_values("concurrency").groupby("target_id"):
        ax.plot(g["concurrency"], g[y], marker="o", label=target_id)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(levels["concurrency"].unique()))
    ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.set_xlabel("concurrency (closed-loop streams)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return f'<img alt="{html.escape(title)}" src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">'


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
        f"{run['targets_failed']} failed, {run['targets_validation_failed']} failed validation; "
        f"raw results in <code>{html.escape(run['run_dir'])}</code></p>",
        "<h2>Targets</h2>",
        _table(targets, ["target_id", "label", "status", "failed_stage", "error", "validation_passed", "usd_per_hour",
                         "endpoint_seconds", "benchmark_cost_usd"]),
    ]
    if not levels.empty:
        parts += [
            "<h2>Latency and throughput against concurrency</h2>",
            _plot(levels, "output_tokens_per_s", "output tokens/s", "Output throughput"),
            _plot(levels, "ttft_ms_p50", "ms", "TTFT p50"),
            _plot(levels, "ttft_ms_p99", "ms", "TTFT p99"),
            _plot(levels, "tpot_ms_p50", "ms", "TPOT p50"),
        ]
    if not pp.empty:
        parts += [
            _plot(pp, "usd_per_m_output_tokens", "$ per million output tokens", "Price-performance"),
            "<h2>Price-performance</h2>",
            _table(pp, ["target_id", "concurrency", "usd_per_hour", "output_tokens_per_s", "usd_per_m_output_tokens",
                        "ttft_ms_p50", "ttft_ms_p90", "tpot_ms_p50", "error_rate", "meets_slo", "best_under_slo",
                        "validation_passed"]),
        ]
    if not levels.empty:
        parts += [
            "<h2>Levels</h2>",
            _table(levels, ["target_id", "concurrency", "requests_ok", "requests_failed", "error_rate",
                            "output_tokens_per_s", "requests_per_s", "ttft_ms_p50", "ttft_ms_p99", "itl_ms_mean",
                            "itl_ms_p99", "tpot_ms_p50", "e2e_ms_p50", "achieved_concurrency", "client_cpu_pct"]),
        ]
    out.write_text("\n".join(parts))
    return out
