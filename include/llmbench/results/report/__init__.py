"""The per-run HTML report: the answer first (which path is cheapest at the SLO, by how much, what
was excluded and why), then interactive charts and readable tables, in ONE self-contained file.

Why one file with the charting library inlined: the report is opened from a run folder, a mail or
an artifact store, often offline; a CDN link would leave it blank. Plotly ships its minified
JavaScript in the Python wheel (plotly.offline.get_plotlyjs), which bounds the file's size
(REPORT_MAX_BYTES). Figures arriving from other stages (quality intervals, capacity, traffic cost)
are looked up by column name in one place (analysis.columns.COLUMNS, cells.OPTIONAL) and simply
absent when missing.

Modules: the answer (answer), the charts (charts), the cells and tables the parts share (cells),
and the page with its templates and the whole report (document: templates/report.css,
templates/load_check.js)."""

from __future__ import annotations

from llmbench.analysis.columns import COLUMNS
from llmbench.results.report.answer import Answer, answer
from llmbench.results.report.cells import fmt, headline, pick, table
from llmbench.results.report.charts import Charts, pareto
from llmbench.results.report.document import REPORT_MAX_BYTES, page, write_report

__all__ = [
    "COLUMNS",
    "REPORT_MAX_BYTES",
    "Answer",
    "Charts",
    "answer",
    "cells",
    "charts",
    "document",
    "fmt",
    "headline",
    "page",
    "pareto",
    "pick",
    "table",
    "write_report",
]
