"""The history page: per config, path and workload, the weekly trend of $/M at the SLO (and
capacity and quality when a stage wrote them), with the regressions v_week_over_week judges marked
and the weeks it could not judge shown as "not comparable", never silently compared.

Why from the warehouse and not from run folders: the warehouse is what BI dashboards read, so the
page and the dashboards cannot disagree; raw run folders may have been pruned. Built after each
publish by the dashboard DAG and on demand by `llmbench history`."""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmbench.results.report import Charts, fmt, page, pick, table

__all__ = ["HistoryWeek", "history_weeks", "load_history", "write_history"]

# The columns the page reads from price_performance, beyond those every version has: looked up by
# name so that a warehouse without them (older schema, no quality stage) still renders.
PP_SQL = "SELECT pp.*, r.config_name FROM llmbench.price_performance pp JOIN llmbench.runs r USING (run_key)"
WOW_SQL = (
    "SELECT run_key, target_id, concurrency, arrival_rate_rps, regression, comparable, not_comparable, "
    "usd_per_m_output_tokens_change, output_tokens_per_s_change FROM llmbench.v_week_over_week"
)


@dataclass(frozen=True)
class HistoryWeek:
    """One path's week: its cheapest level under the SLO and how the week compares with the one before."""

    config_name: str
    workload: str
    path: str
    week: str  # the Monday of the ISO week, YYYY-MM-DD
    run_key: str
    usd_per_m_at_slo: float | None
    quality: float | None
    capacity: float | None
    regression: bool
    not_comparable: str | None
    detail: str  # in words: what regressed, why not comparable, or "" for a plain week


def load_history(target: Path | str | None = None) -> tuple[Any, Any]:
    """(price_performance with each run's config, v_week_over_week) from the warehouse."""
    from llmbench import warehouse

    return warehouse.query(PP_SQL, target=target), warehouse.query(WOW_SQL, target=target)


def _gate_ok(v: Any) -> bool:
    import pandas as pd

    return bool(pd.isna(v)) or bool(v)  # NULL: no gate (no quality stage)


def history_weeks(pp: Any, wow: Any) -> list[HistoryWeek]:
    """Per config, workload, path and week (the latest run of the week), the figures the page draws."""
    import pandas as pd

    if pp.empty:
        return []
    pp = pp.copy()
    pp["logical_date"] = pd.to_datetime(pp["logical_date"])
    monday = pp["logical_date"] - pd.to_timedelta(pp["logical_date"].dt.day_of_week, unit="D")
    pp["week"] = monday.dt.strftime("%Y-%m-%d")
    pp["workload"] = pp["workload_label"].fillna("default") if "workload_label" in pp.columns else "default"
    instance = pp["instance_type"].fillna("").astype(str) if "instance_type" in pp.columns else None
    pp["path"] = pp["target_id"].astype(str)
    if instance is not None:  # one target id may name another instance over the weeks
        pp["path"] += (" (" + instance + ")").where(instance != "", "")
    cost = "usd_per_m_headline" if "usd_per_m_headline" in pp.columns else "usd_per_m_output_tokens"
    if cost == "usd_per_m_headline":
        pp[cost] = pp[cost].fillna(pp["usd_per_m_output_tokens"])
    quality, capacity = pick(pp, "quality"), pick(pp, "capacity")
    out = []
    for (config, workload, path, week), g in pp.groupby(["config_name", "workload", "path", "week"], sort=True):
        g = g[g["logical_date"] == g["logical_date"].max()]  # the week's latest run
        ok = g[
            g["meets_slo"].fillna(False).astype(bool)
            & g["validation_passed"].map(_gate_ok).astype(bool)
            & (g["quality_passed"].map(_gate_ok).astype(bool) if "quality_passed" in g.columns else True)
        ].dropna(subset=[cost])
        run_key, target_id = str(g["run_key"].iloc[0]), str(g["target_id"].iloc[0])
        w = wow[(wow["run_key"] == run_key) & (wow["target_id"] == target_id)] if not wow.empty else wow
        regressed = w[w["regression"].fillna(False).astype(bool)] if not w.empty else w
        unjudged = w[~w["comparable"].fillna(False).astype(bool)] if not w.empty else w
        detail, reason = "", None
        if not regressed.empty:
            worst = regressed.sort_values("usd_per_m_output_tokens_change", ascending=False).iloc[0]
            detail = (
                f"regression at concurrency {float(worst['concurrency']):g}: $/M "
                f"{fmt(worst['usd_per_m_output_tokens_change'], 'pct')}, output tok/s "
                f"{fmt(worst['output_tokens_per_s_change'], 'pct')} against the previous run"
            )
        elif not unjudged.empty:
            reason = (
                str(unjudged["not_comparable"].dropna().iloc[0]) if unjudged["not_comparable"].notna().any() else "?"
            )
            detail = f"not comparable: {reason}"
        out.append(
            HistoryWeek(
                config_name=str(config),
                workload=str(workload),
                path=str(path),
                week=str(week),
                run_key=run_key,
                usd_per_m_at_slo=float(ok[cost].min()) if not ok.empty else None,
                quality=float(g[quality].mean()) if quality and g[quality].notna().any() else None,
                capacity=float(ok[capacity].max())
                if capacity and not ok.empty and ok[capacity].notna().any()
                else None,
                regression=not regressed.empty,
                not_comparable=reason,
                detail=detail,
            )
        )
    return out


def _marker(w: HistoryWeek) -> dict[str, Any]:
    if w.regression:
        return {"symbol": "x", "size": 14, "color": "#c00"}
    if w.not_comparable:
        return {"symbol": "circle-open", "size": 12, "color": "#888"}
    return {"symbol": "circle", "size": 8}


def _group_html(charts: Charts, config: str, workload: str, weeks: list[HistoryWeek]) -> str:
    import pandas as pd

    traces = []
    for path in sorted({w.path for w in weeks}):
        mine = [w for w in weeks if w.path == path]
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": path,
                "x": [w.week for w in mine],
                "y": [w.usd_per_m_at_slo for w in mine],
                "connectgaps": False,
                "marker": {k: [_marker(w)[k] for w in mine] for k in ("symbol", "size")},
                "text": [w.detail or "as before" for w in mine],
                "hovertemplate": f"{path}<br>week of %{{x}}<br>$/M at the SLO: $%{{y:,.4f}}"
                "<br>%{text}<extra></extra>",
            }
        )
    chart = charts.add(
        f"$/M at the SLO by week: {config}, {workload} (x: regression, open circle: not comparable)",
        traces,
        {"title": {"text": "week"}, "type": "category"},
        {"title": {"text": "$/M at the SLO"}, "rangemode": "tozero"},
    )
    frame = pd.DataFrame(
        [
            {
                "week": w.week,
                "path": w.path,
                "usd_per_m_headline": w.usd_per_m_at_slo,
                "quality_score": w.quality,
                "capacity_rps": w.capacity,
                "history_status": ("▲ REGRESSION: " + w.detail)
                if w.regression
                else ("not comparable: " + (w.not_comparable or ""))
                if w.not_comparable
                else "",
            }
            for w in sorted(weeks, key=lambda w: (w.week, w.path), reverse=True)
        ]
    )
    frame = frame.dropna(axis=1, how="all")  # no capacity or quality stage: no empty column
    cols = [
        c
        for c in ("week", "path", "usd_per_m_headline", "quality_score", "capacity_rps", "history_status")
        if c in frame
    ]
    n_reg = sum(w.regression for w in weeks)
    n_nc = sum(bool(w.not_comparable) for w in weeks)
    return (
        f"<h2>{html.escape(config)} · {html.escape(workload)}</h2>"
        f"<p>{len({w.week for w in weeks})} week(s), {len({w.path for w in weeks})} path(s); "
        f"<span class='regression'>{n_reg} regression(s)</span>, "
        f"<span class='notcomparable'>{n_nc} week(s) not comparable</span>.</p>"
        + chart
        + "<p>Every week, newest first ($/M: the cheapest level that met the SLO; — : none did):</p>"
        + table(frame, cols)
    )


def write_history(out: Path, target: Path | str | None = None) -> Path:
    """Write the history page of the warehouse `target` to `out`."""
    pp, wow = load_history(target)
    weeks = history_weeks(pp, wow)
    charts = Charts()
    body = [
        "<h1>llmbench history</h1>",
        "<p>Per config, serving path and workload: each week's cheapest $/M among the levels that met the "
        "SLO and passed validation and the quality gate (the week's latest run). A regression is "
        "v_week_over_week's: throughput down or $/M up by more than the regression_threshold setting; "
        "weeks computed by different code are <i>not comparable</i> and are never judged.</p>",
    ]
    if not weeks:
        body.append("<p>No run is published in this warehouse yet.</p>")
    groups: dict[tuple[str, str], list[HistoryWeek]] = {}
    for w in weeks:
        groups.setdefault((w.config_name, w.workload), []).append(w)
    for (config, workload), ws in sorted(groups.items()):
        body.append(_group_html(charts, config, workload, ws))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page("llmbench history", body, charts=charts.n > 0))
    return out
