"""A value as a person reads it (fmt), an HTML table of a frame's columns (table), and the lookups
the report's parts share: a figure another stage may have written (pick, OPTIONAL), the $/M
column a run ranks by (headline), and what tells a run's levels apart (level_key, level_name)."""

from __future__ import annotations

import html
from typing import Any

from llmbench.analysis.columns import COLUMNS

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


def missing(v: Any) -> bool:
    import pandas as pd

    try:
        return bool(pd.isna(v))  # None, NaN, pandas.NA, NaT
    except (TypeError, ValueError):  # a list or array: not one missing value
        return False


def fmt(v: Any, kind: str) -> str:
    """One value as a person reads it: $ signs, thousands separators, sensible decimals, — for empty."""
    if missing(v) or (isinstance(v, str) and not v.strip()):
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


def level_key(frame: Any) -> tuple[str, str, str]:
    """What tells a run's levels apart: (column, short label, axis label). Open-loop levels (every
    level with an arrival rate) are told apart by their rate, closed-loop ones by concurrency."""
    if "arrival_rate_rps" in frame and len(frame) and (frame["arrival_rate_rps"].fillna(0) > 0).all():
        return "arrival_rate_rps", "r", "offered load (Poisson arrivals, requests/s)"
    return "concurrency", "c", "concurrency (closed-loop streams)"


def level_name(row: Any) -> str:
    rate = row.get("arrival_rate_rps")
    if not missing(rate) and float(rate) > 0:
        return f"{float(rate):g} req/s"
    c = row.get("concurrency")
    return EMPTY if missing(c) else f"concurrency {float(c):g}"
