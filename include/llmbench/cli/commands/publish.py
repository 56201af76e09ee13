"""`llmbench publish`: publish a run folder's tables (written by price_performance) to the
warehouse again: what an operator does after the publish task failed because the warehouse was
down. Replaces the run key's rows, like the task."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from llmbench.errors import InputError, LlmbenchError


def add_parser(sub: Any) -> None:
    pb = sub.add_parser("publish", help="publish a run folder's tables again (after a failed publish task)")
    pb.add_argument("run_dir")
    pb.add_argument("--warehouse", help="a DuckDB file or a postgresql:// DSN (default: the run's config)")
    pb.set_defaults(func=run)


def run(a: argparse.Namespace) -> int:
    from llmbench import warehouse
    from llmbench.pipeline import ensure_report, load_tables, publish
    from llmbench.results.union import mark_published

    run_dir = Path(a.run_dir)
    if not (run_dir / "tables" / "runs.parquet").exists():
        raise InputError(f"{run_dir} holds no tables/ (did price_performance run?)")
    try:
        if a.warehouse:
            frames = load_tables(str(run_dir))
            ensure_report(str(run_dir), frames)  # runs.report_path names it
            written = warehouse.publish(frames, a.warehouse)
            mark_published(run_dir, frames)
            where = warehouse.redact(a.warehouse)
        else:
            out = publish(str(run_dir))
            written, where = out["rows"], out["warehouse"]
    except Exception as e:  # noqa: BLE001 (one clear line for the operator, not a traceback)
        raise LlmbenchError(f"failed, the warehouse is unchanged: {type(e).__name__}: {e}") from e
    print(f"published {run_dir} to {where}: {written}")
    return 0
