"""The warehouse: DDL and the idempotent publish of one run key.

Three engines, two drivers, one code path: DuckDB (the embedded default, a file), PostgreSQL (a
postgresql:// DSN) and Redshift (a redshift:// DSN: the PostgreSQL wire protocol, with the schema
files rewritten where Redshift's SQL differs: VARCHAR needs a length, ADD COLUMN takes no IF NOT
EXISTS, no advisory locks). The Redshift dialect is tested on PostgreSQL, never on Redshift itself.
publish() deletes the run key's rows and inserts the new
ones in one transaction: publishing a run key again replaces it (backfills and re-runs never
double-count), and a failure half-way rolls back to the previous state. Values are always bound
parameters, never formatted into SQL.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from llmbench import paths, redaction
from llmbench.errors import LlmbenchError
from llmbench.schemas.asset import PublishedAsset
from llmbench.settings import settings
from llmbench.warehouse.schema import _in_transaction, migrate

TABLES = (
    "runs",
    "targets",
    "levels",
    "requests",
    "price_performance",
    "break_even",
    "reference",
    "quality",
    "capacity",
    "traffic_cost",
)


def is_postgres(target: str | Path | None) -> bool:
    """True for any target reached through the PostgreSQL driver: PostgreSQL or Redshift."""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://", "redshift://"))


def is_redshift(target: str | Path | None) -> bool:
    return isinstance(target, str) and target.startswith("redshift://")


def redact(target: str | Path) -> str:
    """A warehouse reference safe for logs and XCom: a DSN loses its user and password (a
    `password=` parameter too)."""
    return redaction.redact(re.sub(r"^((?:postgres(?:ql)?|redshift)://)[^@/]*@", r"\1", str(target)))


def _dsn_passwords(dsn: str) -> list[str]:
    """A DSN's password as written and percent-decoded (either may show up in libpq's errors)."""
    m = re.match(r"^[a-z]+://[^@/]*?:([^@/]*)@", dsn)
    return [m.group(1), unquote(m.group(1))] if m else []


class WarehouseBusy(LlmbenchError, RuntimeError):
    """Another process held the DuckDB file for longer than we waited for it. One line, naming
    the holder when DuckDB says who it is."""


# How long a writer waits for a DuckDB file another process holds (a BI tool reading it, even
# read-only, holds a lock a writer cannot share): retried with backoff, then WarehouseBusy.
LOCK_WAIT_S = settings("warehouse_lock_wait_s").warehouse_lock_wait_s  # LLMBENCH_WAREHOUSE_LOCK_WAIT_S, at import


def _lock_holder(err: Exception) -> str | None:
    """'PROGRAM (PID N)' from DuckDB's "Conflicting lock is held in ..." message, or None."""
    m = re.search(r"Conflicting lock is held in (.*?\(PID \d+\))", str(err))
    return m.group(1) if m else None


def _duckdb_open(path: Path, read_only: bool, wait_s: float):
    """duckdb.connect, retried with backoff while another process holds a conflicting lock."""
    import time

    import duckdb

    deadline = time.monotonic() + wait_s
    delay = 0.1
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.IOException as e:
            if "lock" not in str(e).lower():
                raise
            if time.monotonic() + delay > deadline:
                holder = _lock_holder(e) or "another process"
                raise WarehouseBusy(
                    f"{path} is held by {holder}; waited {wait_s:g}s for it "
                    f"({'reading' if read_only else 'writing'}); close it there, or set LLMBENCH_WAREHOUSE_LOCK_WAIT_S"
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


def connect(target: Path | str | None = None, lock_wait_s: float | None = None):
    """A DB-API connection with the schema migrated. target: a DuckDB file path (default
    <data folder>/warehouse.duckdb) or a postgresql:// DSN. A DuckDB file another process holds
    is waited for (with backoff, up to lock_wait_s, default LOCK_WAIT_S), then WarehouseBusy."""
    if is_postgres(target):
        import psycopg

        dsn = re.sub(r"^(postgres|redshift)://", "postgresql://", str(target))
        try:
            con = psycopg.connect(dsn)
        except psycopg.Error as e:
            # libpq quotes what it could not take, the password included ("invalid percent-encoded
            # token: ..."): the error goes on redacted, its cause (which holds the text) dropped.
            raise type(e)(redaction.redact(f"{redact(dsn)}: {e}", _dsn_passwords(dsn))) from None
        for attempt in range(3):
            try:
                migrate(con, True, is_redshift(target))
                break
            except (
                psycopg.errors.UniqueViolation,
                psycopg.errors.DuplicateObject,
                psycopg.errors.DuplicateTable,
                psycopg.errors.SerializationFailure,
            ):
                # Without an advisory lock (Redshift), two first-time migrators can race on
                # CREATE ... IF NOT EXISTS: the loser rolls back and finds the work done.
                if attempt == 2:
                    raise
        return con
    path = Path(target) if target else paths.default_warehouse_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    duck = _duckdb_open(path, False, LOCK_WAIT_S if lock_wait_s is None else lock_wait_s)
    migrate(duck, False)
    return duck


def connect_read_only(target: Path | str | None = None, lock_wait_s: float = 10.0):
    """A connection for reading only: DuckDB opened read_only (it shares the file with other
    readers, and a writer's lock is waited for up to lock_wait_s), no migration; PostgreSQL as
    connect()."""
    if is_postgres(target):
        return connect(target)
    path = Path(target) if target else paths.default_warehouse_path()
    return _duckdb_open(path, True, lock_wait_s)


def _py(v: Any) -> Any:
    """A frame cell as a plain Python value a driver binds (NaN/NaT -> NULL, numpy -> Python)."""
    if v is None:
        return None
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):  # numpy scalars and arrays
        v = v.tolist()
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, list):
        return [_py(x) for x in v]
    if type(v).__name__ in ("Timestamp", "NaTType"):
        return None if str(v) == "NaT" else v.to_pydatetime()
    return v


def _rows(df) -> tuple[list[str], list[tuple]]:
    cols = list(df.columns)
    return cols, [tuple(_py(v) for v in row) for row in df.itertuples(index=False, name=None)]


@contextmanager
def transaction(target: Path | str | None = None) -> Iterator[Any]:
    """A connection inside one transaction: committed if the block succeeds, rolled back (and
    re-raised) if it fails; closed either way. The same on DuckDB and PostgreSQL."""
    con = connect(target)
    try:
        with _in_transaction(con, is_postgres(target)):
            yield con
    finally:
        con.close()


def publish(frames: dict[str, Any], target: Path | str | None = None) -> dict[str, int]:
    """Replace the run key's rows in every table with `frames` (table name -> DataFrame), in one
    transaction. Returns rows written per table."""
    run_keys = set(frames["runs"]["run_key"])
    if len(run_keys) != 1:
        raise ValueError(f"publish takes exactly one run key, got {sorted(run_keys)}")
    (run_key,) = run_keys
    pg = is_postgres(target)
    mark = "%s" if pg else "?"
    written = {}
    with transaction(target) as con:
        cur = con.cursor() if pg else con
        for table in TABLES:
            cur.execute(f"DELETE FROM llmbench.{table} WHERE run_key = {mark}", [run_key])
            df = frames.get(table)
            if df is None or df.empty:
                written[table] = 0
                continue
            if pg:
                cols, rows = _rows(df)
                names = ", ".join(f'"{c}"' for c in cols)  # column names come from our own frames
                cur.executemany(
                    f"INSERT INTO llmbench.{table} ({names}) VALUES ({', '.join(['%s'] * len(cols))})", rows
                )
            else:  # DuckDB reads the frame itself (columnar, fast); BY NAME matches columns
                con.register("frame", df)
                con.execute(f"INSERT INTO llmbench.{table} BY NAME SELECT * FROM frame")
                con.unregister("frame")
            written[table] = len(df)
    return written


class LandedMismatch(LlmbenchError, RuntimeError):
    """The warehouse does not hold what an Asset event says landed. One line."""


def check_landed(asset: PublishedAsset, target: Path | str | None = None) -> str:
    """Hold the warehouse to an Asset event's contract (llmbench.schemas.asset): the run key's
    row with the same status and targets, and the rows per table it says were written. A later
    publish of the same run key changes what is there: then the newer event describes it, so
    only the newest event of a run key is checked. Returns one line; LandedMismatch otherwise."""
    runs = query("SELECT status FROM llmbench.runs WHERE run_key = ?", [asset.run_key], target)
    if runs.empty:
        raise LandedMismatch(f"{asset.run_key}: the Asset says it landed, the warehouse has no run row")
    if runs["status"].iloc[0] != asset.status:
        raise LandedMismatch(
            f"{asset.run_key}: status {runs['status'].iloc[0]} in the warehouse, {asset.status} in the Asset"
        )
    have = {}
    for table in asset.rows:
        if table not in TABLES:
            raise LandedMismatch(f"{asset.run_key}: the Asset names a table {table!r} the warehouse does not have")
        have[table] = int(
            query(f"SELECT count(*) AS n FROM llmbench.{table} WHERE run_key = ?", [asset.run_key], target)["n"].iloc[0]
        )
    wrong = {t: (have[t], n) for t, n in asset.rows.items() if have[t] != n}
    if wrong:
        raise LandedMismatch(f"{asset.run_key}: rows (warehouse, Asset) differ: {wrong}")
    ids = set(query("SELECT target_id FROM llmbench.targets WHERE run_key = ?", [asset.run_key], target)["target_id"])
    if ids != set(asset.targets):
        raise LandedMismatch(
            f"{asset.run_key}: targets {sorted(ids)} in the warehouse, {sorted(asset.targets)} in the Asset"
        )
    return (
        f"{asset.run_key}: {asset.status}, {len(asset.targets)} target(s) ({len(asset.targets_replaced)} replaced), "
        f"{asset.rows.get('levels', 0)} level(s), as the Asset says"
    )


SUMMARY_SQL = """
SELECT v.model, v.instance_type, v.serving_config, v.concurrency, v.logical_date, v.run_key,
       v.output_tokens_per_s, v.usd_per_m_output_tokens, v.ttft_ms_p90, v.tpot_ms_p90, v.meets_slo,
       v.validation_passed, b.model IS NOT NULL AS best_for_model
FROM llmbench.v_latest_price_performance v
LEFT JOIN llmbench.v_best_under_slo b
  ON b.model = v.model AND b.instance_type = v.instance_type AND b.serving_config = v.serving_config
 AND b.concurrency = v.concurrency AND b.arrival_rate_rps = v.arrival_rate_rps
"""


def refresh_summary(target: Path | str | None = None) -> int:
    """Rebuild llmbench.dashboard_summary (the latest price-performance of every configuration,
    the best-under-SLO one flagged) in one transaction, for dashboards that want a plain table.
    Returns its row count."""
    with transaction(target) as con:
        con.execute(f"CREATE TABLE IF NOT EXISTS llmbench.dashboard_summary AS {SUMMARY_SQL} LIMIT 0")
        con.execute("DELETE FROM llmbench.dashboard_summary")
        con.execute(f"INSERT INTO llmbench.dashboard_summary {SUMMARY_SQL}")
        return int(con.execute("SELECT count(*) FROM llmbench.dashboard_summary").fetchone()[0])


def regressions(run_keys: list[str], target: Path | str | None = None) -> list[str]:
    """One line per regression llmbench.v_week_over_week judges in these run keys (throughput down,
    or $/M up, by more than the regression_threshold setting, against the target's previous run
    computed by the same code): what the dashboard DAG notifies. [] without any."""
    if not run_keys:
        return []
    marks = ", ".join("?" * len(run_keys))
    wow = query(
        "SELECT run_key, target_id, concurrency, arrival_rate_rps, previous_logical_date, "
        "output_tokens_per_s_change, usd_per_m_output_tokens_change, regression_threshold "
        f"FROM llmbench.v_week_over_week WHERE regression AND run_key IN ({marks}) "
        "ORDER BY run_key, target_id, concurrency, arrival_rate_rps",
        list(run_keys),
        target,
    )

    def pct(x: Any) -> str:
        return "n/a" if x is None or x != x else f"{100 * x:+.1f} %"

    out = []
    for r in wow.to_dict("records"):
        level = f"{r['arrival_rate_rps']:g} req/s" if r["arrival_rate_rps"] else f"concurrency {r['concurrency']:g}"
        out.append(
            f"llmbench: regression in {r['run_key']}: {r['target_id']} at {level} against "
            f"{str(r['previous_logical_date'])[:10]}: output tok/s {pct(r['output_tokens_per_s_change'])}, "
            f"$/M output {pct(r['usd_per_m_output_tokens_change'])} "
            f"(threshold {100 * r['regression_threshold']:g} %)"
        )
    return out


def query(sql: str, params: list | None = None, target: Path | str | None = None):
    """Run a read query against the warehouse and return a DataFrame. Placeholders are `?` on
    both engines. A DuckDB file is opened read-only and not migrated: a BI tool holding it open
    does not stop it."""
    import pandas as pd

    con = connect_read_only(target)
    try:
        if is_postgres(target):
            cur = con.execute(sql.replace("?", "%s"), params or [])
            return pd.DataFrame(cur.fetchall(), columns=[d.name for d in cur.description])
        return con.execute(sql, params or []).fetchdf()
    finally:
        con.close()
