"""`llmbench history`: write the history page (per config, path and workload, the weekly trend of
$/M at the SLO, regressions and not-comparable weeks marked) from a warehouse."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from llmbench.errors import LlmbenchError, one_line


def add_parser(sub: Any) -> None:
    hi = sub.add_parser("history", help="write the weekly history page (HTML) from the warehouse")
    hi.add_argument("--warehouse", help="a DuckDB file (default .llmbench/warehouse.duckdb) or a postgresql:// DSN")
    hi.add_argument("--out", help="where to write the page (default: <data folder>/history.html)")
    hi.set_defaults(func=run)


def run(a: argparse.Namespace) -> int:
    from llmbench import paths, pipeline, warehouse

    if a.warehouse and warehouse.is_postgres(a.warehouse):
        db: str | Path = a.warehouse
    else:
        db = Path(a.warehouse) if a.warehouse else paths.default_warehouse_path()
        if not db.exists():
            raise LlmbenchError(f"no warehouse at {db}")
    try:
        out = pipeline.history(db, a.out)
    except Exception as e:  # noqa: BLE001 (a warehouse that cannot be read: one line, not a traceback)
        raise LlmbenchError(f"cannot write the history page: {type(e).__name__}: {one_line(e)}") from e
    print(f"history page written to {out}")
    return 0
