"""One class per metric (after aiperf's metrics/types): each says its column, header, unit, cell
format, one-line definition, how it is computed and the bounds validation holds it to. The classes
are the single source for the level table's columns (metrics.summarize_level), the targets table's
lifecycle columns (results.tables.targets), the report's
headers and cell formats (analysis.columns.COLUMNS), the Great Expectations suites' bounds
(results.validation) and the table in docs/metrics.md (markdown_table, checked by a test). Modules:
base (Metric, Level, the registry), latency (per-request distributions), counts (requests, errors,
tokens), throughput (the window, its rates and the steady state), slo (goodput), client (the load
generator's health) and lifecycle (a target's: time to ready, the first request's TTFT, the time
spent measuring)."""

from __future__ import annotations

from llmbench.analysis.metrics.types import base, client, counts, latency, lifecycle, slo, throughput
from llmbench.analysis.metrics.types.base import (
    REGISTRY,
    STATS,
    Level,
    LevelBased,
    LevelFigures,
    LevelMetric,
    Metric,
    RequestMetric,
    TargetMetric,
    register,
)

__all__ = [
    "REGISTRY",
    "STATS",
    "Level",
    "LevelBased",
    "LevelFigures",
    "LevelMetric",
    "Metric",
    "RequestMetric",
    "TargetMetric",
    "base",
    "client",
    "column_labels",
    "counts",
    "latency",
    "lifecycle",
    "markdown_table",
    "register",
    "slo",
    "throughput",
]


def column_labels() -> dict[str, tuple[str, str]]:
    """Every column a metric class fills: {column: (label, cell format)}."""
    return {c: (m.label(c), m.kind_of(c)) for m in REGISTRY.values() for c in m.columns()}


# The docs' table reads in this order of modules (each module's classes in the order they are defined).
_SECTIONS = ("counts", "throughput", "latency", "client", "slo", "lifecycle")


def markdown_table() -> str:
    """The docs' table of every metric class (docs/metrics.md holds it; a test checks it is this)."""
    lines = ["| column | unit | class | definition | validation |", "|---|---|---|---|---|"]
    for m in sorted(REGISTRY.values(), key=lambda m: _SECTIONS.index(m.__module__.rsplit(".", 1)[1])):
        if issubclass(m, RequestMetric):
            name = f"`{m.tag}_*`" if m.stats else f"`{m.tag}` (per request)"
            over = "successful requests" if m.over == "ok" else "every attempted request"
            what = f"{m.definition}; {'a distribution over ' + over if m.stats else 'per request only'}"
            rows = "successful" if m.checked == "ok" else "every"
            checks = [f"{rows} request: {m.bounds()}"] if m.bounds() and m.in_table else []
            if m.level_checked:
                checks.append("level: p50 not null, p50 <= p90 <= p99")
            check = "; ".join(checks)
        else:
            name, what, check = ", ".join(f"`{c}`" for c in m.columns()), m.definition, m.bounds()
            if issubclass(m, TargetMetric):
                name += " (per target)"
        lines.append(f"| {name} | {m.unit} | `{m.__name__}` | {what} | {check} |")
    return "\n".join(lines) + "\n"
