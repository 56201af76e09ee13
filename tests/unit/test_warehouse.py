"""Publishing into a real DuckDB file and a real PostgreSQL server (127.0.0.1:5432): one
transaction per run key, replace on re-publish, roll back on failure. One code path, both engines."""

import os
import uuid

import duckdb
import pandas as pd
import psycopg
import pytest

from llmbench import warehouse

PG_ADMIN = os.environ.get("LLMBENCH_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


@pytest.fixture(scope="module")
def pg_database():
    """A throw-away database on the local PostgreSQL server, dropped afterwards."""
    name = f"llmbench_test_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    yield PG_ADMIN.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture(params=["duckdb", "postgres"])
def db(request, tmp_path):
    if request.param == "duckdb":
        return tmp_path / "w.duckdb"
    dsn = request.getfixturevalue("pg_database")
    with psycopg.connect(dsn, autocommit=True) as con:
        con.execute("DROP SCHEMA IF EXISTS llmbench CASCADE")
    return dsn


def frames(run_key, n_levels=2, tps=10.0):
    runs = pd.DataFrame([{
        "run_key": run_key, "config_name": "local", "logical_date": "2026-11-30", "run_dir": "/r",
        "planned_at": pd.Timestamp("2026-11-30T00:00:00Z"), "published_at": pd.Timestamp("2026-11-30T01:00:00Z"),
        "status": "succeeded", "targets_planned": 1, "targets_failed": 0, "targets_validation_failed": 0,
        "benchmark_cost_usd": 0.01, "llmbench_version": "test",
    }])
    levels = pd.DataFrame([{
        "run_key": run_key, "target_id": "t1", "concurrency": c, "requests_attempted": 4, "requests_ok": 4,
        "requests_failed": 0, "error_rate": 0.0, "output_tokens_per_s": tps * c, "ttft_ms_p50": 5.0,
    } for c in range(1, n_levels + 1)])
    return {"runs": runs, "levels": levels}


def count(db, table, run_key):
    return warehouse.query(f"SELECT count(*) AS n FROM llmbench.{table} WHERE run_key = ?", [run_key], db)["n"][0]


def test_publish_twice_leaves_one_copy(db):
    warehouse.publish(frames("k1"), db)
    warehouse.publish(frames("k1", tps=20.0), db)
    warehouse.publish(frames("k2"), db)
    assert count(db, "runs", "k1") == 1 and count(db, "levels", "k1") == 2
    assert count(db, "levels", "k2") == 2
    tps = warehouse.query("SELECT output_tokens_per_s FROM llmbench.levels WHERE run_key='k1' ORDER BY concurrency",
                          target=db)["output_tokens_per_s"].tolist()
    assert tps == [20.0, 40.0]  # the second publish replaced the first


def test_failed_publish_keeps_previous_state(db):
    warehouse.publish(frames("k1"), db)
    bad = frames("k1", n_levels=3, tps=99.0)
    bad["levels"]["no_such_column"] = 1
    with pytest.raises((duckdb.Error, psycopg.Error)):
        warehouse.publish(bad, db)
    assert count(db, "levels", "k1") == 2
    assert warehouse.query("SELECT max(output_tokens_per_s) AS m FROM llmbench.levels", target=db)["m"][0] == 20.0


def test_publish_refuses_mixed_run_keys(tmp_path):
    f = frames("k1")
    f["runs"] = pd.concat([f["runs"], frames("k2")["runs"]])
    with pytest.raises(ValueError, match="exactly one run key"):
        warehouse.publish(f, tmp_path / "w.duckdb")


def test_quote_and_semicolon_laden_values_round_trip(db):
    """SQL is parameterised: hostile strings are data, not statements."""
    evil = "x'); DROP TABLE llmbench.runs; --"
    f = frames(evil)
    f["levels"]["errors_by_kind"] = '{"a\'b": 1}'
    warehouse.publish(f, db)
    warehouse.publish(frames("k2"), db)
    assert count(db, "runs", evil) == 1 and count(db, "levels", evil) == 2
    assert count(db, "runs", "k2") == 1  # the runs table survived


def test_requests_with_lists_and_nulls_round_trip(db):
    f = frames("k1")
    f["requests"] = pd.DataFrame([
        {"run_key": "k1", "target_id": "t1", "concurrency": 1, "request_index": i, "ok": i == 0,
         "error_kind": None if i == 0 else "timeout", "send_ns": 10**12 + i, "end_ns": 10**12 + 5 * 10**6,
         "ttft_ms": 1.5 if i == 0 else float("nan"), "itl_ms": [1.0, 2.5] if i == 0 else [],
         "output_tokens": 3 if i == 0 else 0}
        for i in range(2)
    ])
    warehouse.publish(f, db)
    got = warehouse.query("SELECT request_index, ok, error_kind, ttft_ms, itl_ms FROM llmbench.requests "
                          "ORDER BY request_index", target=db)
    assert got["ok"].tolist() == [True, False] and got["error_kind"].tolist()[1] == "timeout"
    assert list(got["itl_ms"][0]) == [1.0, 2.5] and pd.isna(got["ttft_ms"][1])
