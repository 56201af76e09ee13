"""The run's published tables, built from its raw results (plan.json and each target's folder):
runs, targets, levels, requests and price_performance (and quality, break_even, reference, traffic
and capacity beside them), written as Parquet under <run_dir>/tables/. Every figure comes from its
one definition in llmbench.analysis.metrics or llmbench.analysis.pricing.

Modules, by table: targets (targets), quality (quality), price_performance (prices), the
comparisons across targets (comparison), and the whole set built and loaded (build)."""

from __future__ import annotations

from llmbench.results.tables.build import (
    TABLE_NAMES,
    build_tables,
    load_tables,
)
from llmbench.results.tables.comparison import (
    REFERENCE_COLUMNS,
    compare_paths,
    reference_rows,
)
from llmbench.results.tables.prices import (
    HEADLINE_COLUMNS,
    SPECULATIVE_COLUMNS,
    headline_price,
    price_rows,
    roofline_basis,
    speculative_pairs,
    speculative_speedups,
)
from llmbench.results.tables.quality import (
    QUALITY_SUITES,
    quality_rows,
    quality_verdicts,
)
from llmbench.results.tables.targets import (
    cold_start,
    dataset_columns,
    per_token_cost,
    provenance,
    target_row,
    workload_columns,
)

__all__ = [
    "HEADLINE_COLUMNS",
    "QUALITY_SUITES",
    "REFERENCE_COLUMNS",
    "SPECULATIVE_COLUMNS",
    "TABLE_NAMES",
    "build",
    "build_tables",
    "cold_start",
    "compare_paths",
    "comparison",
    "dataset_columns",
    "headline_price",
    "load_tables",
    "per_token_cost",
    "price_rows",
    "prices",
    "provenance",
    "quality",
    "quality_rows",
    "quality_verdicts",
    "reference_rows",
    "roofline_basis",
    "speculative_pairs",
    "speculative_speedups",
    "target_row",
    "targets",
    "workload_columns",
]
