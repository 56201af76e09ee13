"""The per-run HTML report: the answer first (which path is cheapest at the SLO, by how much, what
was excluded and why), then interactive charts and readable tables, in ONE self-contained file.

Why one file with the charting library inlined: the report is opened from a run folder, a mail or
an artifact store, often offline; a CDN link would leave it blank. Plotly ships its minified
JavaScript in the Python wheel (plotly.offline.get_plotlyjs), which bounds the file's size
(REPORT_MAX_BYTES). Figures arriving from other stages (quality intervals, capacity, traffic cost)
are looked up by column name in one place (COLUMNS, OPTIONAL) and simply absent when missing."""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "COLUMNS",
    "REPORT_MAX_BYTES",
    "Answer",
    "Charts",
    "answer",
    "fmt",
    "headline",
    "page",
    "pareto",
    "pick",
    "table",
    "write_report",
]

# The report's size bound: plotly.min.js (about 4.8 MB) plus the run's figures. Per-request points
# are sampled (REQUESTS_PER_SERIES) so that a long run does not grow the file without bound.
REPORT_MAX_BYTES = 6_500_000
REQUESTS_PER_SERIES = 400


@dataclass(frozen=True)
class Col:
    label: str
    kind: str  # how fmt() writes it: usd, usd_h, usd_month, ms, s, tps, rps, int, pct, frac, num, bool, text


# Every column the report or the history page shows, with a human name and unit. One place: a
# column renamed by another stage is fixed here, not in every table.
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
    "output_tokens_per_s": Col("Output tok/s", "tps"),
    "requests_per_s": Col("Requests/s", "rps"),
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
    "ttft_ms_p50": Col("TTFT p50 (ms)", "ms"),
    "ttft_ms_p90": Col("TTFT p90 (ms)", "ms"),
    "ttft_ms_p99": Col("TTFT p99 (ms)", "ms"),
    "tpot_ms_p50": Col("TPOT p50 (ms)", "ms"),
    "tpot_ms_p90": Col("TPOT p90 (ms)", "ms"),
    "itl_ms_mean": Col("ITL mean (ms)", "ms"),
    "itl_ms_p99": Col("ITL p99 (ms)", "ms"),
    "e2e_ms_p50": Col("End-to-end p50 (ms)", "ms"),
    "error_rate": Col("Error rate", "pct"),
    "meets_slo": Col("Meets SLO", "bool"),
    "best_under_slo": Col("Best under SLO", "bool"),
    "requests_ok": Col("Requests OK", "int"),
    "requests_failed": Col("Requests failed", "int"),
    "achieved_concurrency": Col("Achieved concurrency", "num"),
    "client_cpu_pct": Col("Client CPU (%)", "num"),
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
    "goodput_rps": Col("Goodput (req/s)", "rps"),
    "slo_met": Col("SLO met", "bool"),
    # The history page.
    "week": Col("Week of", "text"),
    "path": Col("Path", "text"),
    "config_name": Col("Config", "text"),
    "change_pct": Col("Change vs previous week (%)", "num"),
    "history_status": Col("Week-over-week", "text"),
    "capacity_rps": Col("Capacity at SLO (req/s)", "rps"),
}

# Where the report looks for figures other stages add: the first column present wins. Quality
# with an interval (Wilson 95 %) and capacity land here without touching the rest of the report.
OPTIONAL = {
    "quality": ("quality_score_flexible", "quality_score"),
    "quality_low": ("quality_ci_low",),
    "quality_high": ("quality_ci_high",),
    "capacity": ("capacity_rps", "goodput_rps"),
}

EMPTY = "—"


def pick(frame: Any, role: str) -> str | None:
    """The column of `frame` that plays `role` (OPTIONAL), or None when no stage wrote it."""
    return next((c for c in OPTIONAL[role] if c in frame.columns and frame[c].notna().any()), None)


def _missing(v: Any) -> bool:
    import pandas as pd

    try:
        return bool(pd.isna(v))  # None, NaN, pandas.NA, NaT
    except (TypeError, ValueError):  # a list or array: not one missing value
        return False


def fmt(v: Any, kind: str) -> str:
    """One value as a person reads it: $ signs, thousands separators, sensible decimals, — for empty."""
    if _missing(v) or (isinstance(v, str) and not v.strip()):
        return EMPTY
    if kind == "bool":
        return "yes" if bool(v) else "no"
    if kind == "text":
        return str(v)
    x = float(v)
    if kind == "usd":  # $/M figures span $0.0123 to $123: keep 3 significant digits below $1
        return f"${x:,.2f}" if abs(x) >= 1 else f"${x:.3g}" if x else "$0"
    if kind in ("usd_h", "usd_month"):
        return f"${x:,.2f}" if kind == "usd_h" else f"${x:,.0f}"
    if kind == "pct":
        return f"{100 * x:,.1f} %"
    if kind == "frac":
        return f"{x:.3f}"
    if kind == "int":
        return f"{x:,.0f}"
    if kind in ("ms", "s", "tps", "rps"):
        return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.1f}" if abs(x) >= 10 else f"{x:,.2f}"
    return f"{x:,.0f}" if x == int(x) and abs(x) < 1e15 else f"{x:,.3g}" if abs(x) < 1000 else f"{x:,.1f}"


def table(df: Any, columns: list[str], summary: str | None = None) -> str:
    """An HTML table of the columns `df` has, with human headers (the raw column in the title) and
    formatted cells, in a box that scrolls sideways rather than widening the page. With `summary`,
    collapsed behind <details> (a detail table a reader opens when they want it)."""
    cols = [c for c in columns if c in df.columns]
    if not cols or df.empty:
        return ""
    head = "".join(
        f'<th title="{c}"{" class=l" if c in COLUMNS and COLUMNS[c].kind == "text" else ""}>'
        f"{html.escape(COLUMNS[c].label if c in COLUMNS else c)}</th>"
        for c in cols
    )
    rows = []
    for rec in df[cols].itertuples(index=False):
        cells = []
        for c, v in zip(cols, rec, strict=True):
            kind = COLUMNS[c].kind if c in COLUMNS else "num" if isinstance(v, float) else "text"
            cls = ' class="l"' if kind == "text" else ""
            cells.append(f"<td{cls}>{html.escape(fmt(v, kind))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    out = f'<div class="scroll"><table class="t"><tr>{head}</tr>{"".join(rows)}</table></div>'
    if summary:
        return f"<details><summary>{html.escape(summary)}</summary>{out}</details>"
    return out


HEADLINE_LABELS = {"output": "$ per million output tokens", "total": "$ per million tokens (input + output)"}


def headline(pp: Any) -> tuple[str, str]:
    """The $/M column the run ranks by and its label (config price_basis; output before it existed)."""
    if "headline_basis" in pp.columns and pp["headline_basis"].notna().any():
        basis = str(pp["headline_basis"].dropna().iloc[0])
        return "usd_per_m_headline", HEADLINE_LABELS.get(basis, HEADLINE_LABELS["output"])
    return "usd_per_m_output_tokens", HEADLINE_LABELS["output"]


def _level_key(frame: Any) -> tuple[str, str, str]:
    """What tells a run's levels apart: (column, short label, axis label). Open-loop levels (every
    level with an arrival rate) are told apart by their rate, closed-loop ones by concurrency."""
    if "arrival_rate_rps" in frame and len(frame) and (frame["arrival_rate_rps"].fillna(0) > 0).all():
        return "arrival_rate_rps", "r", "offered load (Poisson arrivals, requests/s)"
    return "concurrency", "c", "concurrency (closed-loop streams)"


def _level_name(row: Any) -> str:
    rate = row.get("arrival_rate_rps")
    if not _missing(rate) and float(rate) > 0:
        return f"{float(rate):g} req/s"
    c = row.get("concurrency")
    return EMPTY if _missing(c) else f"concurrency {float(c):g}"


# --- the answer --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """What the top of the report says: the winner, the runner-up (another target) and why others
    are not in the running. `sentence` is plain text (the browser test reads it)."""

    sentence: str
    winner: str | None
    rows: Any  # the small table: winner and runner-up
    excluded: list[str]


def _quality_text(row: Any, frame: Any, quality: Any = None) -> str:
    """The level's quality in words: the score, its interval when a stage computed one, and the
    gate it passed (a score of 0 that passed a gate of 0 is said, not left to a reader to puzzle)."""
    q = pick(frame, "quality")
    if q is None or _missing(row.get(q)):
        return ""
    lo, hi = pick(frame, "quality_low"), pick(frame, "quality_high")
    text = f"quality {float(row[q]):.2f}"
    if lo and hi and not _missing(row.get(lo)) and not _missing(row.get(hi)):
        text += f" (95 % CI {float(row[lo]):.2f}–{float(row[hi]):.2f})"
    if quality is not None and not quality.empty and {"target_id", "min_score"} <= set(quality.columns):
        gate = quality[quality["target_id"] == row.get("target_id")]["min_score"].dropna()
        if not gate.empty:
            text += f", passing its gate of {float(gate.max()):.2f}"
    return text


def _eligible(pp: Any, cost: str) -> Any:
    """Levels that may win: meet the SLO, passed validation and the quality gate, have a price."""
    ok = pp[cost].notna()
    if "meets_slo" in pp.columns:
        ok &= pp["meets_slo"].fillna(False).astype(bool)
    for gate in ("validation_passed", "quality_passed"):
        if gate in pp.columns:
            ok &= pp[gate].map(lambda v: _missing(v) or bool(v)).astype(bool)
    return pp[ok]


def _excluded(targets: Any, pp: Any, cost: str) -> list[str]:
    """Each target not in the running, with the reason in words."""
    out = []
    for t in targets.to_dict("records"):
        tid = str(t["target_id"])
        if t.get("status") not in (None, "succeeded"):
            stage = f" at {t['failed_stage']}" if not _missing(t.get("failed_stage")) else ""
            err = f": {t['error']}" if not _missing(t.get("error")) else ""
            out.append(f"{tid} failed{stage}{err}")
        elif not _missing(t.get("validation_passed")) and not bool(t["validation_passed"]):
            out.append(f"{tid} failed validation (its results do not add up; see validation.json)")
        elif not _missing(t.get("quality_passed")) and not bool(t["quality_passed"]):
            score = "" if _missing(t.get("quality_score")) else f" (score {float(t['quality_score']):.2f})"
            out.append(f"{tid} failed the quality gate{score}: fast but wrong cannot win")
        else:
            mine = pp[pp["target_id"] == tid] if "target_id" in pp.columns else pp.iloc[0:0]
            if mine.empty:
                out.append(f"{tid} has no price-performance rows")
            elif mine[cost].isna().all():
                note = (
                    ""
                    if "price_note" not in mine or mine["price_note"].isna().all()
                    else mine["price_note"].dropna().iloc[0]
                )
                out.append(f"{tid} has no price{': ' + str(note) if note else ''}")
            elif "meets_slo" in mine.columns and not mine["meets_slo"].fillna(False).astype(bool).any():
                best = mine["ttft_ms_p90"].min() if "ttft_ms_p90" in mine else None
                lat = "" if _missing(best) else f" (its best TTFT p90 was {fmt(best, 'ms')} ms)"
                out.append(f"{tid} met the SLO at no level{lat}")
    return out


def answer(frames: dict[str, Any]) -> Answer:
    """The answer to the question a reader comes with: which path is cheapest at the SLO, with what
    latency and quality, the runner-up (the cheapest level of another target) and the margin."""
    import pandas as pd

    pp, targets = frames["price_performance"], frames["targets"]
    if pp.empty:
        return Answer(
            "No level was measured: there is no price-performance to compare.",
            None,
            pp,
            _excluded(targets, pp, "usd_per_m_output_tokens"),
        )
    cost, label = headline(pp)
    excluded = _excluded(targets, pp, cost)
    ok = _eligible(pp, cost).sort_values(cost, kind="stable")
    if ok.empty:
        return Answer(
            "No path met the SLO: no level met it, passed validation and the quality gate, and had a price; "
            "why each target is out: below.",
            None,
            ok,
            excluded,
        )
    win = ok.iloc[0]
    others = ok[ok["target_id"] != win["target_id"]]
    run = others.iloc[0] if not others.empty else None
    lat = f"TTFT p90 {fmt(win.get('ttft_ms_p90'), 'ms')} ms, TPOT p90 {fmt(win.get('tpot_ms_p90'), 'ms')} ms"
    q = _quality_text(win, pp, frames.get("quality"))
    s = (
        f"Cheapest path meeting the SLO: {win['target_id']} at {_level_name(win)}, "
        f"{fmt(win[cost], 'usd')} {label.replace('$ per million', 'per million')} ({lat}{', ' + q if q else ''})."
    )
    if run is not None:
        margin = float(run[cost]) / float(win[cost]) - 1 if float(win[cost]) else float("nan")
        s += (
            f" Runner-up: {run['target_id']} at {fmt(run[cost], 'usd')}, "
            f"{fmt(margin, 'pct')} more ({fmt(float(run[cost]) - float(win[cost]), 'usd')} per million)."
        )
    else:
        s += " No other target met the SLO."
    rows = pd.DataFrame([r for r in (win, run) if r is not None]).assign(
        rank=["winner", "runner-up"][: 1 + (run is not None)],
        level=lambda d: [_level_name(r) for r in d.to_dict("records")],
    )
    return Answer(s, str(win["target_id"]), rows, excluded)


def _traffic(frames: dict[str, Any]) -> str:
    """The traffic-profile sentence (results.traffic.traffic_headline: one definition), when the run
    has a traffic_cost table: the cheapest path meeting the SLO for the stated traffic, and what the
    runner-up costs."""
    from llmbench.results.traffic import traffic_headline

    sentence = traffic_headline(frames.get("traffic_cost"))
    return f"<p class='answer' id='traffic'>{html.escape(sentence)}</p>" if sentence else ""


def _answer_html(frames: dict[str, Any]) -> str:
    a = answer(frames)
    pp = frames["price_performance"]
    cost = headline(pp)[0] if not pp.empty else "usd_per_m_output_tokens"
    cols = ["rank", "target_id", "level", cost, "ttft_ms_p90", "tpot_ms_p90", "output_tokens_per_s"]
    for role in ("quality", "quality_low", "quality_high", "capacity"):
        c = pick(pp, role) if not pp.empty else None
        if c:
            cols.append(c)
    small = table(a.rows, cols) if a.winner else ""
    why = (
        "<p><b>Not in the running:</b></p><ul>" + "".join(f"<li>{html.escape(e)}</li>" for e in a.excluded) + "</ul>"
        if a.excluded
        else "<p>Every target measured, validated and passed its gates.</p>"
    )
    win = f' data-winner="{html.escape(a.winner)}"' if a.winner else ""
    return (
        f'<section class="answer"><p class="headline" id="headline"{win}>{html.escape(a.sentence)}</p>'
        f"{_traffic(frames)}{small}{why}</section>"
    )


# --- charts ------------------------------------------------------------------------------------


def _num(v: Any) -> float | None:
    return None if _missing(v) else float(v)


class Charts:
    """Collects Plotly figures as JSON; each is a <div> plus one Plotly.newPlot call."""

    def __init__(self) -> None:
        self.n = 0

    def add(self, title: str, traces: list[dict[str, Any]], xaxis: dict[str, Any], yaxis: dict[str, Any]) -> str:
        if not traces:
            return ""
        self.n += 1
        div = f"chart{self.n}"
        layout = {
            "title": {"text": title, "font": {"size": 15}},
            "xaxis": xaxis,
            "yaxis": yaxis,
            "height": 380,
            "margin": {"l": 60, "r": 10, "t": 40, "b": 50},
            "legend": {"title": {"text": "click to hide/show"}},
            "hovermode": "closest",
        }
        spec = json.dumps({"data": traces, "layout": layout}, allow_nan=False)
        return (
            f'<div class="chart" id="{div}" data-title="{html.escape(title)}"></div>'
            f"<script>Plotly.newPlot('{div}', {spec}.data, {spec}.layout, "
            "{responsive: true, displaylogo: false});</script>"
        )


def _series(levels: Any, y: str, name_suffix: str = "", dash: str = "solid") -> list[dict[str, Any]]:
    x, _, _ = _level_key(levels)
    label = COLUMNS[y].label if y in COLUMNS else y
    out = []
    for target_id, g in levels.sort_values(x).groupby("target_id"):
        g = g.dropna(subset=[y])
        if g.empty:
            continue
        out.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"{target_id}{name_suffix}",
                "x": [_num(v) for v in g[x]],
                "y": [_num(v) for v in g[y]],
                "line": {"dash": dash},
                "hovertemplate": f"{target_id}<br>{COLUMNS[x].label}: %{{x:,}}<br>{label}: %{{y:,.1f}}<extra></extra>",
            }
        )
    return out


def pareto(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats on both axes (lower cost and lower latency)."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))
    front, best = [], math.inf
    for i in order:
        if points[i][1] < best:
            front.append(i)
            best = points[i][1]
    return front


def _frontier(charts: Charts, pp: Any) -> str:
    """$/M against the SLO's latency percentile, one point per target and level; the Pareto front
    (no other level cheaper AND faster) drawn as a line."""
    cost, label = headline(pp)
    lat = "ttft_ms_p90" if "ttft_ms_p90" in pp.columns and pp["ttft_ms_p90"].notna().any() else "ttft_ms_p50"
    data = pp.dropna(subset=[cost, lat]) if lat in pp.columns else pp.iloc[0:0]
    if data.empty:
        return ""
    traces = []
    for target_id, g in data.groupby("target_id"):
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": str(target_id),
                "x": [_num(v) for v in g[lat]],
                "y": [_num(v) for v in g[cost]],
                "text": [_level_name(r) for r in g.to_dict("records")],
                "marker": {"size": 10},
                "hovertemplate": f"{target_id}, %{{text}}<br>{COLUMNS[lat].label}: %{{x:,.0f}} ms"
                f"<br>{label}: $%{{y:,.4f}}<extra></extra>",
            }
        )
    pts = list(zip(data[cost].astype(float), data[lat].astype(float), strict=True))
    front = sorted((pts[i] for i in pareto(pts)), key=lambda p: p[1])
    traces.append(
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "Pareto front",
            "x": [p[1] for p in front],
            "y": [p[0] for p in front],
            "line": {"color": "black", "dash": "dot", "shape": "hv"},
            "marker": {"symbol": "diamond-open", "size": 16, "color": "black"},
            "hovertemplate": f"Pareto front<br>{COLUMNS[lat].label}: %{{x:,.0f}} ms"
            f"<br>{label}: $%{{y:,.4f}}<extra></extra>",
        }
    )
    return charts.add(
        "Price-performance frontier (lower-left is better)",
        traces,
        {"title": {"text": COLUMNS[lat].label}},
        {"title": {"text": label}, "type": "log"},
    )


def _distributions(charts: Charts, requests: Any) -> str:
    """Per-request latency, one box per target and level (a sample of at most REQUESTS_PER_SERIES
    requests each, the file's size bound): the spread a percentile hides."""
    if requests is None or requests.empty or "e2e_ms" not in requests.columns:
        return ""
    ok = requests[requests["ok"].fillna(False).astype(bool)] if "ok" in requests.columns else requests
    out = []
    for metric, title in (("ttft_ms", "Per-request TTFT (ms)"), ("e2e_ms", "Per-request end-to-end latency (ms)")):
        if metric not in ok.columns:
            continue
        traces = []
        for (target_id, c), g in ok.dropna(subset=[metric]).groupby(["target_id", "concurrency"]):
            vals = g[metric]
            if len(vals) > REQUESTS_PER_SERIES:
                vals = vals.sample(REQUESTS_PER_SERIES, random_state=0)
            traces.append(
                {
                    "type": "box",
                    "name": f"{target_id} c={float(c):g}",
                    "y": [round(float(v), 1) for v in vals],
                    "boxpoints": "outliers",
                    "hovertemplate": f"{target_id} c={float(c):g}<br>%{{y:,.1f}} ms<extra></extra>",
                }
            )
        out.append(charts.add(title, traces, {"title": {"text": "target and level"}}, {"title": {"text": "ms"}}))
    return "".join(out)


def _load_charts(charts: Charts, levels: Any) -> str:
    x, _, xlabel = _level_key(levels)
    ticks = sorted(float(v) for v in levels[x].dropna().unique())  # the measured levels, not decades
    xaxis = {"title": {"text": xlabel}, "type": "log", "tickvals": ticks, "ticktext": [f"{v:g}" for v in ticks]}
    return "".join(
        [
            charts.add(
                "Output throughput against load",
                _series(levels, "output_tokens_per_s"),
                xaxis,
                {"title": {"text": "output tokens/s"}},
            ),
            charts.add(
                "TTFT against load (p50 solid, p99 dashed)",
                _series(levels, "ttft_ms_p50", " p50") + _series(levels, "ttft_ms_p99", " p99", "dash"),
                xaxis,
                {"title": {"text": "time to first token (ms)"}},
            ),
            charts.add(
                "TPOT against load (p50)",
                _series(levels, "tpot_ms_p50", " p50"),
                xaxis,
                {"title": {"text": "time per output token (ms)"}},
            ),
        ]
    )


def _roofline(charts: Charts, pp: Any) -> str:
    """Single-stream decode speed as a fraction of the memory-bandwidth ceiling; targets whose
    instance has no bandwidth in the catalog are named instead."""
    have = pp.dropna(subset=["roofline_efficiency"]) if "roofline_efficiency" in pp.columns else pp.iloc[0:0]
    missing = sorted(set(pp["target_id"]) - set(have["target_id"]))
    note = (
        f"<p>Roofline efficiency not available for {html.escape(', '.join(missing))}: the catalog has no "
        "memory bandwidth for their instance type.</p>"
        if missing
        else ""
    )
    if have.empty:
        return note
    x, _, xlabel = _level_key(have)
    ticks = sorted(float(v) for v in have[x].dropna().unique())
    chart = charts.add(
        "Roofline efficiency (decode tok/s per stream / bandwidth ceiling)",
        _series(have.assign(roofline_pct=100 * have["roofline_efficiency"]), "roofline_pct"),
        {"title": {"text": xlabel}, "type": "log", "tickvals": ticks, "ticktext": [f"{v:g}" for v in ticks]},
        {"title": {"text": "% of the bandwidth ceiling"}},
    )
    above = ""
    if "roofline_note" in have.columns and have["roofline_note"].notna().any():
        above = "<p>Above the bandwidth ceiling (efficiency over 100 %):</p>" + table(
            have[have["roofline_note"].notna()],
            ["target_id", "concurrency", "weight_gb_per_token", "roofline_efficiency", "roofline_note"],
        )
    return chart + note + above


# --- page --------------------------------------------------------------------------------------

STYLE = """<style>
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1280px;padding:0 16px;color:#222;
 box-sizing:border-box}
h1{font-size:1.5em}h2{margin-top:1.6em;border-bottom:1px solid #ccc}
.scroll{overflow-x:auto;max-width:100%}
table.t{border-collapse:collapse;font-size:13px}
table.t td,table.t th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right;vertical-align:top}
table.t th{background:#f4f4f4;position:sticky;top:0}table.t td{white-space:nowrap}table.t th.l{text-align:left}
table.t td.l{text-align:left;white-space:normal;min-width:7em;max-width:32em;overflow-wrap:break-word}
section.answer{background:#f3f8ff;border:1px solid #bcd;padding:10px 16px;border-radius:6px}
p.headline{font-size:1.2em;font-weight:600}
.chart{width:100%;max-width:1240px;margin:8px 0}
details{margin:8px 0}summary{cursor:pointer;font-weight:600}
.regression{color:#b00;font-weight:600}.notcomparable{color:#777;font-style:italic}
</style>"""

# After load: how many charts there are and how many drew an SVG, and any script error, on <body>
# (the browser test reads them; a person sees a blank box).
LOAD_CHECK = """<script>
window.__errors = window.__errors || [];
window.addEventListener('error', function (e) { window.__errors.push(String(e.message)); });
window.addEventListener('load', function () {
  var charts = document.querySelectorAll('div.chart');
  var drawn = Array.prototype.filter.call(charts, function (c) { return c.querySelector('svg.main-svg'); });
  document.body.setAttribute('data-charts', charts.length);
  document.body.setAttribute('data-charts-drawn', drawn.length);
  document.body.setAttribute('data-errors', window.__errors.length);
});
</script>"""


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
            STYLE,
            "<script>window.__errors=[];window.addEventListener('error',function(e){window.__errors.push(String(e.message));});</script>",
            js,
            "</head><body>",
            *body,
            LOAD_CHECK,
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
            if not _missing(r.concurrency):
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
    "itl_ms_p99",
    "tpot_ms_p50",
    "e2e_ms_p50",
    "achieved_concurrency",
    "client_cpu_pct",
]
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
        _answer_html(frames),
        f"<p>Run status <b>{html.escape(str(run['status']))}</b>: {run['targets_planned']} target(s) planned, "
        f"{run['targets_failed']} failed, {run['targets_validation_failed']} failed validation, "
        f"{0 if _missing(quality_failed) else int(quality_failed)} failed the quality gate. "
        f"Raw results: <code>{html.escape(str(run['run_dir']))}</code>.</p>",
    ]
    if not pp.empty:
        body += ["<h2>Price-performance</h2>", _frontier(charts, pp)]
    if not levels.empty:
        body += ["<h2>Throughput and latency against load</h2>", _load_charts(charts, levels)]
    body.append(_distributions(charts, frames.get("requests")))
    if not pp.empty:
        body.append(_roofline(charts, pp))
    body += [
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
    if not pp.empty:
        cost = headline(pp)[0]
        q = [c for c in (pick(pp, "quality"), pick(pp, "quality_low"), pick(pp, "quality_high")) if c]
        body += [
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
    if not pp.empty and "backend" in pp.columns and pp["backend"].nunique() > 1:
        # Several ways of serving side by side: the figures computed in llmbench.results.tables.compare_paths.
        body += [
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
    quality = frames.get("quality")
    if quality is not None and not quality.empty:
        body += [
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
    if not levels.empty:
        body += [
            "<h2>Levels</h2>",
            table(levels, LEVEL_COLUMNS, summary="Every level's measurements"),
            table(
                levels,
                ["target_id", "concurrency", "arrival_rate_rps", *_other_columns(levels)],
                summary="Other per-level figures (server-side metrics, workload details: as the run recorded them)",
            ),
        ]
    out.write_text(page(f"llmbench {run['run_key']}", [b for b in body if b], charts=charts.n > 0))
    return out
