"""The warehouse writer's own PostgreSQL role: it owns the `llmbench` schema and everything in it
(publish migrates: it creates tables and replaces views) and has no other right, least of all on
Airflow's metadata database. An administrator runs `grant_writer` once per warehouse database (the
compose stack's init does); the DAG then publishes as the writer (connection `llmbench_warehouse`).
"""

from __future__ import annotations

import logging

__all__ = ["SCHEMA", "grant_writer"]

log = logging.getLogger("llmbench")
SCHEMA = "llmbench"


def grant_writer(admin_dsn: str, role: str, password: str | None = None) -> None:
    """As the administrator of `admin_dsn`'s database: create (or re-key) `role`, let it connect to
    this database only as far as the database grants go, and give it the `llmbench` schema and
    every table and view in it; PUBLIC loses its default rights on the database and the `public`
    schema. Idempotent: run again, it changes nothing but the password."""
    import psycopg
    from psycopg import sql

    ident = sql.Identifier(role)
    with psycopg.connect(admin_dsn, autocommit=True) as con:
        database = con.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
        exists = con.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone()
        login = sql.SQL("LOGIN PASSWORD {}").format(sql.Literal(password)) if password else sql.SQL("LOGIN")
        verb = "ALTER" if exists else "CREATE"
        con.execute(sql.SQL(verb + " ROLE {} ").format(ident) + login)
        db = sql.Identifier(database)
        con.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(db))
        con.execute(sql.SQL("GRANT CONNECT, TEMPORARY ON DATABASE {} TO {}").format(db, ident))
        con.execute("REVOKE ALL ON SCHEMA public FROM PUBLIC")
        con.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(SCHEMA)))
        con.execute(sql.SQL("ALTER SCHEMA {} OWNER TO {}").format(sql.Identifier(SCHEMA), ident))  # new or not
        # what an earlier publisher (the administrator, before this role) created: the writer's now
        owned = con.execute(
            "SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind IN ('r', 'v', 'm', 'p')",
            [SCHEMA],
        ).fetchall()
        for name, kind in owned:
            what = {"v": "VIEW", "m": "MATERIALIZED VIEW"}.get(kind, "TABLE")
            con.execute(
                sql.SQL(f"ALTER {what} {{}}.{{}} OWNER TO {{}}").format(
                    sql.Identifier(SCHEMA), sql.Identifier(name), ident
                )
            )
    log.info("warehouse writer %s: owns %s.%s (%d objects), no other rights", role, database, SCHEMA, len(owned))
