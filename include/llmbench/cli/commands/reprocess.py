"""`llmbench reprocess`: recompute published runs from their stored raw results with today's code
and config, and publish them again under the same run keys (llmbench.results.reprocess). Nothing
is deployed."""

from __future__ import annotations

import argparse
import time
from datetime import date
from pathlib import Path
from typing import Any

from llmbench.cli.output import say
from llmbench.errors import InputError, LlmbenchError, one_line


def add_parser(sub: Any) -> None:
    rp = sub.add_parser(
        "reprocess",
        help="recompute published runs from their raw results with today's code and config, and publish them again",
    )
    rp.add_argument("--from", dest="date_from", required=True, help="first logical date (YYYY-MM-DD)")
    rp.add_argument("--to", dest="date_to", required=True, help="last logical date (YYYY-MM-DD)")
    rp.add_argument("--config", help="only this config's runs, with its settings today (default: each run's own)")
    rp.add_argument(
        "--prices",
        choices=["frozen", "current"],
        default="frozen",
        help="frozen: the prices each run was measured at (default); current: today's",
    )
    rp.add_argument(
        "--warehouse", help="a DuckDB file or a postgresql:// DSN (default: the config's, else the default file)"
    )
    rp.set_defaults(func=run)


def _warehouse_of(a: argparse.Namespace) -> Path | str:
    """--warehouse, else the config's DuckDB file, else the default one. A PostgreSQL warehouse is
    reached through an Airflow connection in the DAG; from the CLI, name its DSN with --warehouse."""
    from llmbench import paths, warehouse
    from llmbench.planning.config import load_config

    if a.warehouse:
        return a.warehouse if warehouse.is_postgres(a.warehouse) else Path(a.warehouse)
    settings = load_config(a.config).warehouse if a.config else None  # ConfigError: exit 2
    if settings is not None and settings.kind != "duckdb":
        raise InputError(f"config {a.config}: its warehouse is {settings.kind}; name its DSN with --warehouse")
    return Path(settings.path) if settings is not None and settings.path else paths.default_warehouse_path()


def run(a: argparse.Namespace) -> int:
    from llmbench.results.reprocess import reprocess_range

    try:
        date_from, date_to = (date.fromisoformat(d).isoformat() for d in (a.date_from, a.date_to))
    except ValueError as e:
        raise InputError(str(e)) from None
    try:
        target = _warehouse_of(a)
    except ValueError as e:  # ConfigError, or a config the loader refuses otherwise
        raise e if isinstance(e, InputError) else InputError(one_line(e)) from None
    if date_from > date_to:
        raise InputError(f"--from {date_from} is after --to {date_to}")
    if isinstance(target, Path) and not target.exists():
        raise LlmbenchError(f"no warehouse at {target}")
    t0 = time.monotonic()
    try:
        outcomes = reprocess_range(target, date_from, date_to, a.config, a.prices, progress=say)
    except Exception as e:  # noqa: BLE001 (the warehouse or a run failed: one line; published runs stay)
        raise LlmbenchError(f"failed: {type(e).__name__}: {one_line(e) if str(e).strip() else ''}") from e
    done = sum(o.status == "reprocessed" for o in outcomes)
    say(f"reprocessed {done} run(s), skipped {len(outcomes) - done}, in {time.monotonic() - t0:.1f}s")
    return 0 if done == len(outcomes) else 1
