"""The report's interactive charts (Plotly figures as JSON, drawn by the inlined plotly.js): the
price-performance frontier, throughput and latency against load, per-request latency
distributions and the roofline."""

from __future__ import annotations

import html
import json
import math
from typing import Any

from llmbench.analysis.columns import COLUMNS
from llmbench.results.report.cells import headline, level_key, level_name, missing, table

# Per-request points are sampled so that a long run does not grow the file without bound.
REQUESTS_PER_SERIES = 400


def _num(v: Any) -> float | None:
    return None if missing(v) else float(v)


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
    x, _, _ = level_key(levels)
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


def frontier(charts: Charts, pp: Any) -> str:
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
                "text": [level_name(r) for r in g.to_dict("records")],
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


def distributions(charts: Charts, requests: Any) -> str:
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


def load_charts(charts: Charts, levels: Any) -> str:
    x, _, xlabel = level_key(levels)
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


def roofline(charts: Charts, pp: Any) -> str:
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
    x, _, xlabel = level_key(have)
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
