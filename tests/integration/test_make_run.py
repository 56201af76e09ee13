"""`make run` as a user types it, into the default DuckDB file and, with WAREHOUSE_CONN, into
PostgreSQL: the same run publishes the same number of rows in every table."""

import subprocess
import uuid

import duckdb
import psycopg

from .conftest import ROOT

TABLES = ("runs", "targets", "levels", "requests", "price_performance")


def test_make_run_publishes_identical_row_counts_to_duckdb_and_postgresql(airflow_env):
    admin = "postgresql://postgres@127.0.0.1:5432/postgres"
    name = f"llmbench_mkrun_{uuid.uuid4().hex[:8]}"
    params = 'PARAMS={"concurrency": [1, 2], "requests_per_level": 2}'
    env = {k: v for k, v in airflow_env.items() if not k.startswith("MAKE")}
    with psycopg.connect(admin, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}"')
    try:
        counts = {}
        for where, extra in (("duckdb", []), ("postgres", [f"WAREHOUSE_CONN=postgres://postgres@127.0.0.1:5432/{name}"])):
            r = subprocess.run(["make", "--no-print-directory", "run", "DATE=2026-08-31", params, *extra], cwd=ROOT,
                               env=env, capture_output=True, text=True, timeout=1200)
            assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
            assert "llmbench run local-2026-08-31: succeeded" in r.stdout, r.stdout[-2000:]
            if where == "duckdb":
                con = duckdb.connect(airflow_env["LLMBENCH_HOME"] + "/warehouse.duckdb", read_only=True)
                counts[where] = {t: con.execute(f"SELECT count(*) FROM llmbench.{t} WHERE run_key = "
                                                "'local-2026-08-31'").fetchone()[0] for t in TABLES}
                con.close()
            else:
                assert "warehouse:          postgresql://127.0.0.1:5432/" + name in r.stdout  # user redacted
                with psycopg.connect(f"postgresql://postgres@127.0.0.1:5432/{name}") as con:
                    counts[where] = {t: con.execute(f"SELECT count(*) FROM llmbench.{t} WHERE run_key = "
                                                    "'local-2026-08-31'").fetchone()[0] for t in TABLES}
        assert counts["duckdb"] == counts["postgres"]
        assert counts["duckdb"] == {"runs": 1, "targets": 2, "levels": 4, "requests": 8, "price_performance": 4}
    finally:
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
