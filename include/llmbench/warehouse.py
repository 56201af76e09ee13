"""The warehouse: DDL and the idempotent publish of one run key (DuckDB, the embedded default).

publish() deletes the run key's rows and inserts the new ones in one transaction: publishing a run
key again replaces it (backfills and re-runs never double-count), and a failure half-way rolls back
to the previous state.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llmbench import paths

SQL_DIR = paths.PACKAGE_DIR.parent / "sql"
TABLES = ("runs", "targets", "levels", "requests", "price_performance")


def connect(db_path: Path | str | None = None):
    import duckdb

    path = Path(db_path) if db_path else paths.default_warehouse_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    apply_schema(con)
    return con


def apply_schema(con) -> None:
    for sql_file in sorted(SQL_DIR.glob("*.sql")):
        con.execute(sql_file.read_text())


def publish(frames: dict[str, Any], db_path: Path | str | None = None) -> dict[str, int]:
    """Replace the run key's rows in every table with `frames` (table name -> DataFrame), in one
    transaction. Returns rows written per table."""
    run_keys = set(frames["runs"]["run_key"])
    if len(run_keys) != 1:
        raise ValueError(f"publish takes exactly one run key, got {sorted(run_keys)}")
    (run_key,) = run_keys
    con = connect(db_path)
    written = {}
    try:
        con.execute("BEGIN TRANSACTION")
        for table in TABLES:
            con.execute(f"DELETE FROM llmbench.{table} WHERE run_key = ?", [run_key])
            df = frames.get(table)
            if df is None or df.empty:
                written[table] = 0
                continue
            con.register("frame", df)
            con.execute(f"INSERT INTO llmbench.{table} BY NAME SELECT * FROM frame")
            con.unregister("frame")
            written[table] = len(df)
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    finally:
        con.close()
    return written


def query(sql: str, params: list | None = None, db_path: Path | str | None = None):
    """Run a read query against the warehouse and return a DataFrame."""
    con = connect(db_path)
    try:
        return con.execute(sql, params or []).fetchdf()
    finally:
        con.close()
