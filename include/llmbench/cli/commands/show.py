"""`llmbench show`: a published run's price-performance, and where its files are."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from llmbench.cli.output import print_frame, safe
from llmbench.errors import InputError, LlmbenchError, one_line

PRICE_COLUMNS = [
    "target_id",
    "concurrency",
    "usd_per_hour",
    "output_tokens_per_s",
    "usd_per_m_output_tokens",
    "ttft_ms_p50",
    "tpot_ms_p50",
    "error_rate",
    "meets_slo",
    "best_under_slo",
    "validation_passed",
]


def add_parser(sub: Any) -> None:
    sh = sub.add_parser("show", help="print a published run's price-performance and where its files are")
    sh.add_argument("--run-key")
    sh.add_argument("--config")
    sh.add_argument("--date", default=datetime.now(UTC).date().isoformat())
    sh.add_argument("--warehouse", help="a DuckDB file (default .llmbench/warehouse.duckdb) or a postgresql:// DSN")
    sh.set_defaults(func=run)


def run(a: argparse.Namespace) -> int:
    try:
        return _show(a)
    except Exception as e:  # noqa: BLE001 (a warehouse that cannot be read: one line, not a traceback)
        if type(e) is LlmbenchError or isinstance(e, InputError):  # said by _show itself, or bad input
            raise
        raise LlmbenchError(f"cannot read the warehouse: {type(e).__name__}: {one_line(e)}") from e


def _show(a: argparse.Namespace) -> int:
    from llmbench import paths, warehouse
    from llmbench.planning.config import load_config, make_run_key

    if a.warehouse and warehouse.is_postgres(a.warehouse):
        db = a.warehouse
    else:
        db = Path(a.warehouse) if a.warehouse else paths.default_warehouse_path()
        if not db.exists():
            raise LlmbenchError(f"no warehouse at {db}")
    if a.run_key:
        run_key = a.run_key
    elif a.config:
        try:
            run_key = make_run_key(load_config(a.config).name, a.date)  # a config path's run key: its name
        except ValueError as e:  # ConfigError, or a date or name make_run_key refuses
            raise e if isinstance(e, InputError) else InputError(one_line(e)) from None
    else:
        latest = warehouse.query("SELECT run_key FROM llmbench.runs ORDER BY published_at DESC LIMIT 1", target=db)
        if latest.empty:
            raise LlmbenchError("the warehouse holds no run yet")
        run_key = latest["run_key"].iloc[0]
    runs = warehouse.query("SELECT * FROM llmbench.runs WHERE run_key = ?", [run_key], target=db)
    if runs.empty:
        raise LlmbenchError(f"run key {run_key!r} is not in {db}")
    run = runs.iloc[0]
    pp = warehouse.query(
        "SELECT * FROM llmbench.price_performance WHERE run_key = ? ORDER BY target_id, concurrency",
        [run_key],
        target=db,
    )
    targets = warehouse.query(
        "SELECT target_id, status, failed_stage, error, validation_passed, raw_dir FROM llmbench.targets "
        "WHERE run_key = ? ORDER BY target_id",
        [run_key],
        target=db,
    )
    print(
        f"llmbench run {run_key}: {run['status']} ({run['targets_planned']} targets, "
        f"{run['targets_failed']} failed, {run['targets_validation_failed']} failed validation)\n"
    )
    print("price-performance ($ per million output tokens at each concurrency):")
    print_frame(pp, PRICE_COLUMNS)
    for t in targets.to_dict("records"):
        if t["status"] != "succeeded":
            print(f"\nFAILED {t['target_id']} at {t['failed_stage']}: {safe(t['error'])}")
    print(f"\nwarehouse:          {warehouse.redact(db)}")
    print(f"raw results:        {run['run_dir']}")
    print(
        "validation results: "
        + ", ".join(
            # a results store's objects are named as they are (a local folder's: where they exist)
            f"{d}/validation.json" if "://" in d else str(Path(d) / "validation.json")
            for d in targets["raw_dir"]
            if "://" in d or (Path(d) / "validation.json").exists()
        )
    )
    report = Path(run["run_dir"]) / "report.html"
    if report.exists():
        print(f"report:             {report}")
    return 0 if run["status"] == "succeeded" else 1
