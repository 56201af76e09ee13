"""The warehouse: versioned migrations (schema, with migrations/*.sql as package data) and
connect, publish and query (store), the writer's own PostgreSQL role (roles). DuckDB, PostgreSQL
and Redshift through one code path."""

from __future__ import annotations

from llmbench.warehouse.roles import grant_writer
from llmbench.warehouse.schema import (
    MIGRATIONS_DDL,
    RENAMED,
    REPEATABLE,
    SQL_DIR,
    MigrationError,
    migrate,
    migrations,
)
from llmbench.warehouse.store import (
    LOCK_WAIT_S,
    SUMMARY_SQL,
    TABLES,
    LandedMismatch,
    WarehouseBusy,
    check_landed,
    connect,
    connect_read_only,
    is_postgres,
    is_redshift,
    publish,
    query,
    redact,
    refresh_summary,
    regressions,
    transaction,
)

__all__ = [
    "LOCK_WAIT_S",
    "MIGRATIONS_DDL",
    "MigrationError",
    "REPEATABLE",
    "RENAMED",
    "SQL_DIR",
    "SUMMARY_SQL",
    "TABLES",
    "LandedMismatch",
    "WarehouseBusy",
    "check_landed",
    "connect",
    "connect_read_only",
    "grant_writer",
    "is_postgres",
    "is_redshift",
    "migrate",
    "migrations",
    "publish",
    "query",
    "redact",
    "refresh_summary",
    "regressions",
    "transaction",
]
