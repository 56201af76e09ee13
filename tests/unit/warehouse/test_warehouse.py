"""Publishing into a real DuckDB file and a real PostgreSQL server (127.0.0.1:5432): one
transaction per run key, replace on re-publish, roll back on failure. One code path, both engines."""

import os
import re
import uuid

import duckdb
import pandas as pd
import psycopg
import pytest

from llmbench import warehouse
from llmbench.warehouse import schema

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


@pytest.fixture(params=["duckdb", "postgres", "redshift-dialect"])
def db(request, tmp_path):
    """Every warehouse test runs on DuckDB, on PostgreSQL, and with the Redshift dialect (the
    rewritten schema files, no advisory lock) on PostgreSQL: no Redshift is reachable here."""
    if request.param == "duckdb":
        return tmp_path / "w.duckdb"
    dsn = request.getfixturevalue("pg_database")
    with psycopg.connect(dsn, autocommit=True) as con:
        con.execute("DROP SCHEMA IF EXISTS llmbench CASCADE")
    return dsn.replace("postgresql://", "redshift://") if request.param == "redshift-dialect" else dsn


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


def _pp_run(run_key, date, rows, cost=None, computed_by="0.1.0+code1"):
    """A run with price_performance rows: (target_id, model, instance, concurrency, tps, usd_h, meets_slo)."""
    f = frames(run_key)
    f["runs"]["logical_date"] = date
    f["runs"]["benchmark_cost_usd"] = cost
    f["runs"]["computed_by"] = computed_by
    f["price_performance"] = pd.DataFrame([{
        "run_key": run_key, "target_id": t, "concurrency": c, "logical_date": date, "instance_type": inst,
        "model": m, "serving_config": "cfg", "usd_per_hour": usd_h, "output_tokens_per_s": tps,
        "usd_per_m_output_tokens": usd_h / (tps * 3600) * 1e6, "ttft_ms_p90": 100.0, "tpot_ms_p90": 20.0,
        "meets_slo": ok, "validation_passed": True,
    } for t, m, inst, c, tps, usd_h, ok in rows])
    f["targets"] = pd.DataFrame([{
        "run_key": run_key, "target_id": t, "label": t, "backend": "sagemaker", "instance_type": inst, "model": m,
        "precision": "bf16", "serving_config": "cfg", "serving_json": "{}", "workload_json": "{}",
        "usd_per_hour": usd_h, "status": "succeeded", "raw_dir": "/r", "endpoint_seconds": 1800.0,
        "benchmark_cost_usd": usd_h / 2,
    } for t, m, inst, usd_h in sorted({(r[0], r[1], r[2], r[5]) for r in rows})])
    return f


def test_bi_views_answer_the_questions(db):
    week1 = [("g6e", "qwen", "ml.g6e.12xlarge", 1, 100.0, 13.12, True),
             ("g6e", "qwen", "ml.g6e.12xlarge", 16, 1000.0, 13.12, True),
             ("g7e", "qwen", "ml.g7e.2xlarge", 16, 500.0, 4.20, True),
             ("g7e", "qwen", "ml.g7e.2xlarge", 64, 900.0, 4.20, False)]   # cheapest, but misses the SLO
    week2 = [("g6e", "qwen", "ml.g6e.12xlarge", 1, 100.0, 13.12, True),
             ("g6e", "qwen", "ml.g6e.12xlarge", 16, 800.0, 13.12, True),   # -20 %: a regression
             ("g7e", "qwen", "ml.g7e.2xlarge", 16, 520.0, 4.20, True),
             ("g7e", "qwen", "ml.g7e.2xlarge", 64, 950.0, 4.20, False)]
    warehouse.publish(_pp_run("w1", "2026-11-23", week1), db)
    warehouse.publish(_pp_run("w2", "2026-11-30", week2), db)

    latest = warehouse.query("SELECT DISTINCT run_key FROM llmbench.v_latest_price_performance", target=db)
    assert latest["run_key"].tolist() == ["w2"]
    best = warehouse.query("SELECT model, instance_type, concurrency FROM llmbench.v_best_under_slo", target=db)
    assert best.values.tolist() == [["qwen", "ml.g7e.2xlarge", 16]]  # $2.24/M at 520 tok/s, within the SLO
    wow = warehouse.query("SELECT target_id, concurrency, regression, output_tokens_per_s_change "
                          "FROM llmbench.v_week_over_week ORDER BY target_id, concurrency", target=db)
    assert wow["regression"].tolist() == [False, True, False, False]
    assert wow["output_tokens_per_s_change"][1] == pytest.approx(-0.2)
    # what the dashboard DAG notifies: one line per regression of the run keys that landed
    assert warehouse.regressions(["w2"], db) == [
        "llmbench: regression in w2: g6e at concurrency 16 against 2026-11-23: output tok/s -20.0 %, "
        "$/M output +25.0 % (threshold 10 %)"]
    assert warehouse.regressions(["w1"], db) == [] and warehouse.regressions([], db) == []
    # The threshold is a setting, not a constant: at 25 % the -20 % week is no regression.
    with warehouse.transaction(db) as con:
        con.execute("UPDATE llmbench.settings SET value = 0.25 WHERE name = 'regression_threshold'")
    wow = warehouse.query("SELECT regression, regression_threshold FROM llmbench.v_week_over_week", target=db)
    assert not wow["regression"].any() and set(wow["regression_threshold"]) == {0.25}
    cost = warehouse.query("SELECT run_key, endpoint_hours, benchmark_cost_usd FROM llmbench.v_benchmark_cost "
                           "ORDER BY run_key", target=db)
    assert cost["endpoint_hours"].tolist() == [1.0, 1.0]  # two targets x 1800 s
    assert cost["benchmark_cost_usd"][0] == pytest.approx((13.12 + 4.20) / 2)


def test_week_over_week_judges_only_weeks_computed_by_the_same_code(db):
    week1 = [("g6e", "qwen", "ml.g6e.12xlarge", 16, 1000.0, 13.12, True)]
    week2 = [("g6e", "qwen", "ml.g6e.12xlarge", 16, 800.0, 13.12, True)]  # -20 %
    warehouse.publish(_pp_run("w1", "2026-11-23", week1, computed_by="0.1.0+old"), db)
    warehouse.publish(_pp_run("w2", "2026-11-30", week2, computed_by="0.1.0+new"), db)
    sql = "SELECT regression, comparable, not_comparable, computed_by, previous_computed_by FROM llmbench.v_week_over_week"
    row = warehouse.query(sql, target=db).iloc[0]
    assert pd.isna(row["regression"]) and not row["comparable"]
    assert "different code (0.1.0+old then 0.1.0+new)" in row["not_comparable"]
    # The older week recomputed by today's code (a reprocess republishes its run key): comparable again.
    warehouse.publish(_pp_run("w1", "2026-11-23", week1, computed_by="0.1.0+new"), db)
    row = warehouse.query(sql, target=db).iloc[0]
    assert row["regression"] and row["comparable"] and pd.isna(row["not_comparable"])
    # A week published before computed_by existed: unknown code, never judged.
    warehouse.publish(_pp_run("w1", "2026-11-23", week1, computed_by=None), db)
    row = warehouse.query(sql, target=db).iloc[0]
    assert pd.isna(row["regression"]) and "unknown code" in row["not_comparable"]


def test_dashboard_summary_refresh_is_repeatable(db):
    warehouse.publish(_pp_run("w1", "2026-11-23", [("g7e", "qwen", "ml.g7e.2xlarge", 16, 500.0, 4.20, True),
                                                   ("g6e", "qwen", "ml.g6e.12xlarge", 16, 1000.0, 13.12, True)]), db)
    assert warehouse.refresh_summary(db) == 2
    assert warehouse.refresh_summary(db) == 2  # rebuilt, not appended
    best = warehouse.query("SELECT instance_type FROM llmbench.dashboard_summary WHERE best_for_model", target=db)
    assert best["instance_type"].tolist() == ["ml.g7e.2xlarge"]


def _versions(db):
    return dict(warehouse.query("SELECT version, checksum FROM llmbench.schema_migrations", target=db).values.tolist())


def test_schema_files_are_applied_once_and_recorded(db):
    warehouse.connect(db).close()
    files = sorted(p.stem for p in warehouse.SQL_DIR.glob("*.sql"))
    assert sorted(_versions(db)) == files
    con = warehouse.connect(db)
    try:
        assert warehouse.migrate(con, warehouse.is_postgres(db)) == []  # nothing left to apply
    finally:
        con.close()



def test_a_warehouse_recorded_under_the_old_file_numbers_is_renamed_and_nothing_runs_again(db):
    """The renumbering (eight files shared 015): a warehouse that applied them under their old
    names has its migration table renamed; no file is applied twice, none is refused."""
    warehouse.connect(db).close()
    before = _versions(db)
    with warehouse.transaction(db) as con:
        mark = "%s" if warehouse.is_postgres(db) else "?"
        for old, new in warehouse.RENAMED.items():
            con.execute(f"UPDATE llmbench.schema_migrations SET version = {mark} WHERE version = {mark}", [old, new])
        held = {v for (v,) in con.execute("SELECT version FROM llmbench.schema_migrations").fetchall()}
    assert set(warehouse.RENAMED) <= held  # as a warehouse of before the move holds it
    con = warehouse.connect(db)  # migrates: renames, then finds nothing to apply
    try:
        assert warehouse.migrate(con, warehouse.is_postgres(db)) == []
    finally:
        con.close()
    assert _versions(db) == before

def test_a_changed_versioned_file_is_refused_and_a_changed_view_file_reapplied(db, tmp_path, monkeypatch):
    import shutil

    sql = tmp_path / "sql"
    shutil.copytree(warehouse.SQL_DIR, sql)
    monkeypatch.setattr(warehouse.schema, "SQL_DIR", sql)
    warehouse.connect(db).close()
    views = sql / "010_views.sql"
    views.write_text(views.read_text() + "\nCREATE OR REPLACE VIEW llmbench.v_probe AS SELECT 1 AS one;\n")
    warehouse.connect(db).close()
    assert warehouse.query("SELECT one FROM llmbench.v_probe", target=db)["one"].tolist() == [1]
    schema = sql / "001_schema.sql"
    schema.write_text(schema.read_text() + "\n-- edited in place\n")
    with pytest.raises(warehouse.MigrationError, match="001_schema.sql changed after it was applied"):
        warehouse.connect(db)


def test_columns_carry_comments_for_bi_tools(db):
    warehouse.connect(db).close()
    if warehouse.is_postgres(db):
        sql = ("SELECT col_description('llmbench.price_performance'::regclass, a.attnum) AS c FROM pg_attribute a "
               "WHERE a.attrelid = 'llmbench.price_performance'::regclass AND a.attname = 'usd_per_m_output_tokens'")
    else:
        sql = ("SELECT comment AS c FROM duckdb_columns() WHERE schema_name = 'llmbench' "
               "AND table_name = 'price_performance' AND column_name = 'usd_per_m_output_tokens'")
    assert "usd_per_hour / (output_tokens_per_s x 3600) x 1e6" in warehouse.query(sql, target=db)["c"][0]


@pytest.mark.parametrize("scheme", ["postgresql", "redshift"])
def test_two_publishers_migrating_an_empty_postgres_at_once_both_succeed(pg_database, scheme):
    from concurrent.futures import ThreadPoolExecutor

    with psycopg.connect(pg_database, autocommit=True) as con:
        con.execute("DROP SCHEMA IF EXISTS llmbench CASCADE")
    with ThreadPoolExecutor(2) as pool:
        dsn = pg_database.replace("postgresql", scheme, 1)
        results = list(pool.map(lambda k: warehouse.publish(frames(k), dsn), ["race-a", "race-b"]))
    assert [r["levels"] for r in results] == [2, 2]
    assert count(pg_database, "runs", "race-a") == count(pg_database, "runs", "race-b") == 1


def test_redshift_dialect_gives_varchar_a_length_and_no_add_column_if_not_exists():
    pg = "\n".join(text for _, _, text, _ in warehouse.migrations(True))
    rs = "\n".join(text for _, _, text, _ in warehouse.migrations(True, redshift=True))
    assert "ADD COLUMN IF NOT EXISTS" in pg and "ADD COLUMN IF NOT EXISTS" not in rs
    assert re.search(r"\bVARCHAR\b(?!\()", rs) is None and "VARCHAR(65535)" in rs
    assert warehouse.redact("redshift://admin:pw@cluster:5439/dev") == "redshift://cluster:5439/dev"


def test_open_loop_migration_keeps_published_rows_and_keys_levels_by_rate(db, tmp_path, monkeypatch):
    """A warehouse that holds runs from before 009 is upgraded in place: its rows stay (as
    closed-loop levels, arrival rate 0, comments kept), and afterwards two open-loop levels with
    the same in-flight cap but different rates are two rows."""
    import shutil

    sql = tmp_path / "sql_before"
    shutil.copytree(warehouse.SQL_DIR, sql)
    for later in sql.glob("*.sql"):  # the schema as it was before 009
        if later.stem >= "009" and later.stem != "010_views":
            later.unlink()
    (sql / "010_views.sql").write_text("-- repeatable\n")  # today's views read 009's columns
    monkeypatch.setattr(warehouse.schema, "SQL_DIR", sql)
    # break_even: 012's; quality: 014's; reference: 015's; capacity, traffic_cost: 031's
    monkeypatch.setattr(warehouse.store, "TABLES", tuple(t for t in warehouse.TABLES if t not in (
        "break_even", "quality", "reference", "capacity", "traffic_cost")))
    warehouse.publish(frames("old"), db)
    monkeypatch.undo()

    open_loop = frames("new")
    open_loop["levels"] = pd.DataFrame([{
        "run_key": "new", "target_id": "t1", "concurrency": 256, "arrival_rate_rps": rate, "load_mode": "poisson",
        "requests_attempted": 4, "requests_ok": 4, "requests_failed": 0, "error_rate": 0.0,
        "output_tokens_per_s": 10.0 * rate,
    } for rate in (0.5, 2.0)])
    warehouse.publish(open_loop, db)  # migrates first
    got = warehouse.query("SELECT run_key, concurrency, arrival_rate_rps, load_mode FROM llmbench.levels "
                          "ORDER BY run_key, concurrency, arrival_rate_rps", target=db)
    assert got.values.tolist() == [["new", 256, 0.5, "poisson"], ["new", 256, 2.0, "poisson"],
                                   ["old", 1, 0.0, "closed"], ["old", 2, 0.0, "closed"]]
    # the same level twice is still refused
    dup = frames("dup")
    dup["levels"] = pd.concat([open_loop["levels"].head(1)] * 2).assign(run_key="dup")
    with pytest.raises(Exception):
        warehouse.publish(dup, db)
    test_columns_carry_comments_for_bi_tools(db)


def test_best_under_slo_view_ranks_on_the_price_basis(db):
    # seed 002's case: per output token the long-output target is cheaper, per total token the
    # long-prompt one is; a run with price_basis total ranks by usd_per_m_total_tokens.
    f = _pp_run("t1", "2026-11-30", [("a", "qwen", "ml.g6e.12xlarge", 32, 1000.0, 13.12, True),
                                     ("b", "qwen", "ml.g7e.2xlarge", 32, 300.0, 4.20, True)])
    pp = f["price_performance"]
    pp["usd_per_m_total_tokens"] = [3.0, 1.0]  # b: long prompts, so many more total tokens
    pp["headline_basis"] = "total"
    pp["usd_per_m_headline"] = pp["usd_per_m_total_tokens"]
    assert pp["usd_per_m_output_tokens"].iloc[0] < pp["usd_per_m_output_tokens"].iloc[1]  # a wins per output token
    warehouse.publish(f, db)
    best = warehouse.query("SELECT instance_type, headline_basis, usd_per_m_headline FROM llmbench.v_best_under_slo",
                           target=db)
    assert best.values.tolist() == [["ml.g7e.2xlarge", "total", 1.0]]


def test_v_reference_shows_measured_against_what_the_article_says(db, tmp_path):
    # seed 000: G6e at the catalog's $13.12/h, the article's 63 % implies $9.31/h: the gap is a row
    from llmbench.planning.plan import plan
    from llmbench.results.tables import reference_rows

    run = plan("sagemaker-seed-000", "2026-11-30", runs_root=tmp_path)
    f = _pp_run(run.run_key, "2026-11-30", [("g6e-qwen3coder-fp8", "qwen", "ml.g6e.12xlarge", 64, 1450.0, 13.12, True),
                                             ("g6e-qwen3coder-fp8", "qwen", "ml.g6e.12xlarge", 16, 900.0, 13.12, True)])
    f["price_performance"]["arrival_rate_rps"] = 0.0
    f["reference"] = pd.DataFrame(reference_rows(run))
    warehouse.publish(f, db)
    ref = warehouse.query("SELECT target_id, metric, concurrency, reference_value, measured, relative_difference, "
                          "implied FROM llmbench.v_reference ORDER BY reference_index", target=db)
    assert len(ref) == len(run.reference)
    by = {(r.target_id, r.metric): r for r in ref.itertuples()}
    g6e_price = by[("g6e-qwen3coder-fp8", "usd_per_hour")]
    assert g6e_price.reference_value == 9.31 and g6e_price.measured == pytest.approx(13.12)
    assert g6e_price.relative_difference == pytest.approx(13.12 / 9.31 - 1) and g6e_price.implied
    tps = by[("g6e-qwen3coder-fp8", "output_tokens_per_s")]
    assert tps.concurrency == 64 and tps.measured == pytest.approx(1450.0) and tps.relative_difference == 0
    g7e = by[("g7e-qwen3coder-fp4", "usd_per_hour")]  # nothing measured for it in this run
    assert g7e.reference_value == 13.97 and pd.isna(g7e.measured)


def test_v_speculative_speedup_lists_the_speculative_levels(db):
    f = _pp_run("s1", "2026-11-30", [("eagle", "qwen", "ml.g7e.2xlarge", 32, 34.6, 4.20, True),
                                     ("plain", "qwen", "ml.g7e.2xlarge", 32, 18.5, 4.20, True)])
    pp = f["price_performance"]
    pp["arrival_rate_rps"] = 0.0
    pp["speculative_baseline_target_id"] = ["plain", None]
    pp["speculative_speedup"] = [34.6 / 18.5, None]
    warehouse.publish(f, db)
    got = warehouse.query("SELECT target_id, speculative_baseline_target_id, concurrency, speculative_speedup "
                          "FROM llmbench.v_speculative_speedup", target=db)
    assert got.values.tolist() == [["eagle", "plain", 32, pytest.approx(1.8703, abs=1e-4)]]


OLD_PATH_COMPARISON = """-- repeatable
CREATE OR REPLACE VIEW llmbench.v_latest_price_performance AS SELECT * FROM llmbench.price_performance;
CREATE OR REPLACE VIEW llmbench.v_path_comparison AS
SELECT run_key, logical_date, model, backend, instance_type, serving_config, target_id,
       concurrency, arrival_rate_rps, load_mode, price_basis, usd_per_hour,
       output_tokens_per_s, ttft_ms_p50, ttft_ms_p90, tpot_ms_p50, e2e_ms_p50, error_rate,
       meets_slo, validation_passed,
       usd_per_m_output_tokens, usd_per_m_output_tokens_with_input, usd_per_m_total_tokens,
       monthly_usd, price_note, per_token_target_id, break_even_output_tokens_per_s_vs_per_token, beats_per_token,
       quality_score, quality_passed
FROM llmbench.price_performance;
"""


def test_a_warehouse_with_the_old_path_comparison_view_is_upgraded(db, tmp_path, monkeypatch):
    """v_path_comparison as 018_quality_views.sql defined it (no workload) is replaced by
    028_views.sql's, with the workload columns in the middle: PostgreSQL's CREATE OR REPLACE
    VIEW would refuse that, so 028 drops it first; rows published before stay."""
    import shutil

    sql = tmp_path / "sql_before"
    shutil.copytree(warehouse.SQL_DIR, sql)
    for later in (*sql.glob("027_*.sql"), *sql.glob("028_*.sql")):
        later.unlink()
    (sql / "018_quality_views.sql").write_text(OLD_PATH_COMPARISON)
    monkeypatch.setattr(warehouse.schema, "SQL_DIR", sql)
    old = _pp_run("old", "2026-11-23", [("g6", "qwen", "g6.xlarge", 1, 100.0, 0.8, True)])
    warehouse.publish(old, db)
    monkeypatch.undo()

    warehouse.publish(_pp_run("new", "2026-11-30", [("g6", "qwen", "g6.xlarge", 1, 100.0, 0.8, True)]), db)
    got = warehouse.query("SELECT run_key, workload_label, target_id FROM llmbench.v_path_comparison "
                          "ORDER BY run_key", target=db)
    assert got["run_key"].tolist() == ["new", "old"] and got["workload_label"].isna().all()
    at_slo = warehouse.query("SELECT run_key, levels, levels_meeting_slo, concurrency FROM llmbench.v_path_at_slo "
                             "ORDER BY run_key", target=db)
    assert at_slo.values.tolist() == [["new", 1, 1, 1], ["old", 1, 1, 1]]


def test_each_versioned_migration_has_its_own_number_and_a_shared_one_is_its_views_after_it():
    rows = schema.migrations(postgres=False)
    numbers = [version.split("_", 1)[0] for version, _, _, repeatable in rows if not repeatable]
    assert len(numbers) == len(set(numbers)) > 30
    by_number: dict[str, list[int]] = {}
    for i, (version, _, _, _) in enumerate(rows):
        by_number.setdefault(version.split("_", 1)[0], []).append(i)
    shared = [at for at in by_number.values() if len(at) > 1]
    assert shared  # 030-032
    for at in shared:  # a versioned file, then right after it the repeatable (views) file reading it
        assert len(at) == 2 and at[1] == at[0] + 1 and not rows[at[0]][3] and rows[at[1]][3], rows[at[0]][0]
