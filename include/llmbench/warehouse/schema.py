"""Versioned schema migrations: migrations/NNN_name.sql applied once each, in number order, and
the repeatable ones (the views) again whenever they change, recorded in llmbench.schema_migrations.

Each versioned file has a number of its own. A repeatable file may share the number of the
versioned file whose tables it reads (030-032: `030_traffic.sql`, then `030_traffic_views.sql`),
and sorts after it (test_warehouse checks both). Until 2026-12 eight files shared 015 (and three more 016-018) and
their order was alphabetical; they were renumbered without changing a byte, and a warehouse that
recorded the old names has them renamed in its migration table before anything is applied
(RENAMED), so nothing runs twice.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC
from functools import partial
from pathlib import Path
from typing import Any

from llmbench.errors import LlmbenchError

SQL_DIR = Path(__file__).resolve().parent / "migrations"
# Old version name -> new (the renumbering of 2026-12; same files, same checksums).
RENAMED = {
    "015_price_basis": "016_price_basis",
    "015_provenance": "017_provenance",
    "015_quality_views": "018_quality_views",
    "015_reference": "019_reference",
    "015_roofline": "020_roofline",
    "015_speculative": "021_speculative",
    "015_views": "022_views",
    "016_computation": "023_computation",
    "016_views": "024_views",
    "017_cold_start_and_server": "025_cold_start_and_server",
    "017_views": "026_views",
    "018_comparison": "027_comparison",
    "018_views": "028_views",
}


MIGRATIONS_DDL = (
    "CREATE SCHEMA IF NOT EXISTS llmbench",
    "CREATE TABLE IF NOT EXISTS llmbench.schema_migrations (version VARCHAR PRIMARY KEY, "
    "checksum VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL)",
)
REPEATABLE = "-- repeatable"  # first line of a file applied again whenever it changes (the views)


class MigrationError(LlmbenchError, RuntimeError):
    """A versioned schema file changed after it was applied somewhere."""


def _engine_block(keep: str, m: re.Match[str]) -> str:
    """An "-- only <engine>" block: its body for the engine kept, nothing for the other."""
    return m.group(2) if m.group(1) == keep else ""


def migrations(postgres: bool, redshift: bool = False) -> list[tuple[str, str, str, bool]]:
    """(version, checksum, SQL, repeatable) for include/llmbench/warehouse/migrations/*.sql in order; the version is the
    file name without .sql. DuckDB's DOUBLE is PostgreSQL's DOUBLE PRECISION; Redshift's VARCHAR
    defaults to 256 bytes (an error message is longer) and its ADD COLUMN has no IF NOT EXISTS
    (harmless: the migration table applies each file once)."""
    import hashlib

    out = []
    for sql_file in sorted(SQL_DIR.glob("*.sql")):
        text = sql_file.read_text()
        checksum = hashlib.sha256(text.encode()).hexdigest()[:16]
        # Engine-specific blocks: "-- only duckdb" / "-- only postgres" (PostgreSQL and Redshift)
        # up to "-- end"; the other engine's blocks are dropped.
        text = re.sub(
            r"^-- only (\w+)\n(.*?)^-- end\n",
            partial(_engine_block, "postgres" if postgres else "duckdb"),
            text,
            flags=re.M | re.S,
        )
        if postgres:
            text = re.sub(r"\bDOUBLE\b", "DOUBLE PRECISION", text)
        if redshift:
            text = re.sub(r"\bVARCHAR\b(?!\s*\()", "VARCHAR(65535)", text)
            text = text.replace("ADD COLUMN IF NOT EXISTS", "ADD COLUMN")
        out.append((sql_file.stem, checksum, text, text.startswith(REPEATABLE)))
    return out


def migrate(con, postgres: bool, redshift: bool = False) -> list[str]:
    """Bring the schema up to date: apply each versioned file once and each repeatable file when
    it changed, recording both in llmbench.schema_migrations, in one transaction (on PostgreSQL
    under an advisory lock, so two publishers starting at once do not race). Returns what it
    applied. A versioned file that changed after it was applied is refused: add a new file."""
    from datetime import datetime

    mark = "%s" if postgres else "?"
    with _in_transaction(con, postgres):
        if postgres and not redshift:
            con.execute("SELECT pg_advisory_xact_lock(hashtext('llmbench.migrate'))")
        # The writer role (warehouse.roles) owns the schema but may not create one in the database,
        # and PostgreSQL checks that right before IF NOT EXISTS: an existing schema is not created.
        have_schema = con.execute(
            "SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'llmbench'"
        ).fetchone()[0]
        for stmt in MIGRATIONS_DDL[1:] if have_schema else MIGRATIONS_DDL:
            con.execute(stmt.replace("VARCHAR", "VARCHAR(256)") if redshift else stmt)
        if redshift:  # no advisory locks: the migration table's own lock serialises migrators
            con.execute("LOCK TABLE llmbench.schema_migrations")
        done = dict(con.execute("SELECT version, checksum FROM llmbench.schema_migrations").fetchall())
        for old in sorted(set(done) & set(RENAMED)):  # recorded under a name of before the renumbering
            con.execute(
                f"UPDATE llmbench.schema_migrations SET version = {mark} WHERE version = {mark}", [RENAMED[old], old]
            )
            done[RENAMED[old]] = done.pop(old)
        applied = []
        for version, checksum, text, repeatable in migrations(postgres, redshift):
            if done.get(version) == checksum:
                continue
            if version in done and not repeatable:
                raise MigrationError(
                    f"schema file {version}.sql changed after it was applied (checksum "
                    f"{done[version]} -> {checksum}): put the change in a new file"
                )
            con.execute(text.replace(MIGRATIONS_DDL[0] + ";", "") if have_schema else text)  # as above
            if not postgres and "RENAME TO" in text:
                # A DuckDB table rebuilt loses its comments: put every file's back (idempotent).
                for earlier, _, other, _ in migrations(False):
                    if earlier > version:
                        break
                    for comment in re.findall(r"^COMMENT ON .*?';$", other, flags=re.M):
                        con.execute(comment)
            con.execute(f"DELETE FROM llmbench.schema_migrations WHERE version = {mark}", [version])
            con.execute(
                f"INSERT INTO llmbench.schema_migrations VALUES ({mark}, {mark}, {mark})",
                [version, checksum, datetime.now(UTC)],
            )
            applied.append(version)
    return applied


@contextmanager
def _in_transaction(con, postgres: bool) -> Iterator[Any]:
    """Commit if the block succeeds, roll back and re-raise if it fails; the same on both drivers."""
    if not postgres:
        con.execute("BEGIN TRANSACTION")
    try:
        yield con
        con.commit() if postgres else con.execute("COMMIT")
    except Exception:
        con.rollback() if postgres else con.execute("ROLLBACK")
        raise
