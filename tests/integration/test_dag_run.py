"""The whole DAG, in-process (`airflow dags test` and `make run`), on the real local backend."""

import json
import subprocess
import uuid

import duckdb
import pytest
import yaml

from llmbench import paths, pipeline, quality
from llmbench.schemas.targets import QualitySettings

from .browser import assert_reads_well, open_page
from .conftest import ROOT, dags_test, llama_server_pids, servers_left

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"

SMALL = {"config": "local", "concurrency": [1, 2], "requests_per_level": 3}


def rows(env, sql, *params):
    con = duckdb.connect(env["LLMBENCH_HOME"] + "/warehouse.duckdb", read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


# Four whole runs, each bounded by its own 1200 s (dags_test, make_run): the 1500 s integration
# default was sized for one or two.
@pytest.mark.timeout(4 * 1200)
def test_dag_publishes_real_measurements_and_quality_and_reruns_replace(airflow_env, tmp_path):
    """One date, four attempts (issue 34: each whole run takes minutes, so the runs that asserted
    the same things share these): `airflow dags test`, `make run`, `airflow dags test` again, and
    `make run` into PostgreSQL. The first attempt carries the measurement, report and quality
    assertions (formerly test_dag_quality's local-config run), the next two the re-run ones, the
    last the PostgreSQL ones (formerly test_make_run and the postgres case of the connection test)."""
    before_pids = llama_server_pids()
    r = dags_test(airflow_env, "2026-11-23", SMALL)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert llama_server_pids() == before_pids, "a llama-server survived the DAG run"

    run_key = "local-2026-11-23"
    assert servers_left(airflow_env, run_key) == []
    (status, n_targets, failed, run_dir), = rows(
        airflow_env, "SELECT status, targets_planned, targets_failed, run_dir FROM llmbench.runs WHERE run_key = ?", run_key)
    assert (status, failed) == ("succeeded", 0) and n_targets >= 2
    levels = rows(airflow_env, "SELECT target_id, concurrency, requests_ok, output_tokens_per_s, ttft_ms_p50, "
                  "itl_ms_mean, tpot_ms_p50, e2e_ms_p99, validation_passed FROM llmbench.levels WHERE run_key = ?",
                  run_key)
    assert len(levels) == n_targets * 2
    for target_id, _c, ok, tps, ttft, itl, tpot, e2e, valid in levels:
        assert ok == 3 and tps > 0 and 0 < ttft < e2e and itl > 0 and tpot > 0 and valid, target_id
    pp = rows(airflow_env, "SELECT usd_per_hour, usd_per_m_output_tokens, output_tokens_per_s FROM "
              "llmbench.price_performance WHERE run_key = ?", run_key)
    assert len(pp) == len(levels)
    for usd_h, usd_m, tps in pp:
        assert abs(usd_m - usd_h / (tps * 3600) * 1e6) < 1e-9
    (n_req,), = rows(airflow_env, "SELECT count(*) FROM llmbench.requests WHERE run_key = ? AND ok", run_key)
    assert n_req == n_targets * 2 * 3
    (report,), = rows(airflow_env, "SELECT report_path FROM llmbench.runs WHERE run_key = ?", run_key)
    assert report == str(paths.Path(run_dir) / "report.html")
    # The report and the history page as a person sees them (issue 31): headless Chromium at
    # 1,366 px; the headline names the level the warehouse ranks first; screenshots in the run folder.
    view = open_page(paths.Path(report), paths.Path(run_dir) / "report.png", tmp_path / "chromium-report")
    assert_reads_well(view)
    assert view.charts >= 6 and (paths.Path(run_dir) / "report.png").stat().st_size > 100_000
    best = rows(airflow_env, "SELECT target_id FROM llmbench.price_performance WHERE run_key = ? AND meets_slo "
                "AND validation_passed AND coalesce(quality_passed, true) "
                "ORDER BY coalesce(usd_per_m_headline, usd_per_m_output_tokens) LIMIT 1", run_key)
    if best:
        assert view.winner == best[0][0] and view.headline.startswith(f"Cheapest path meeting the SLO: {best[0][0]} ")
    else:  # a loaded machine may miss the local SLO: then the report says so, naming no winner
        assert view.winner is None and view.headline.startswith("No path met the SLO")
    history = pipeline.history(airflow_env["LLMBENCH_HOME"] + "/warehouse.duckdb",
                               paths.Path(airflow_env["LLMBENCH_HOME"]) / "history.html")
    assert_reads_well(open_page(paths.Path(history), paths.Path(run_dir) / "history.png", tmp_path / "chromium-h"))
    teardown_s = rows(airflow_env, "SELECT endpoint_seconds FROM llmbench.targets WHERE run_key = ?", run_key)
    assert all(s > 0 for (s,) in teardown_s)
    for knee, degradation in rows(airflow_env, "SELECT knee_concurrency, e2e_ms_p50_degradation FROM llmbench.targets "
                                  "WHERE run_key = ?", run_key):
        assert knee in (1, 2) and degradation is not None and degradation > -1
    # One local target at a time, whole: no target's server lived (deploy start to teardown end)
    # while another's did, so no start or warm-up fell into another target's measurement.

    lives = []
    for events in paths.Path(run_dir).glob("*/events.jsonl"):
        ev = [json.loads(line) for line in events.read_text().splitlines()]
        start = min(e["at"] for e in ev if e["stage"] == "deploy" and e["status"] == "started")
        end = max(e["at"] for e in ev if e["stage"] == "teardown" and e["status"] == "succeeded")
        lives.append((start, end, events.parent.name))
    lives.sort()
    assert len(lives) == n_targets
    for (_, end, a), (start, _, b) in zip(lives, lives[1:], strict=False):
        assert end <= start, f"{a}'s server lived until {end}, {b}'s started at {start}"

    assert_quality_published(airflow_env, run_key, n_levels=len(levels))

    # The same date again, whole, by `make run` as a user types it: one row set, from the newest attempt.
    counts = {"runs": 1, "targets": n_targets, "levels": len(levels), "requests": n_req, "price_performance": len(pp)}
    assert counts == {"runs": 1, "targets": 2, "levels": 4, "requests": 12, "price_performance": 4}
    dirs = {run_dir}
    r = make_run(airflow_env, "2026-11-23")
    assert "llmbench run local-2026-11-23: succeeded" in r.stdout, r.stdout[-2000:]
    assert table_counts(airflow_env, run_key, counts) == counts
    (whole_dir,), = rows(airflow_env, "SELECT run_dir FROM llmbench.runs WHERE run_key = ?", run_key)
    assert whole_dir not in dirs
    dirs.add(whole_dir)

    # Issue 43: one target of that date again, at concurrency 1 only (`make run PARAMS=...` as the
    # issue's user typed it). The other target's rows stay exactly as published; the re-run one
    # has exactly its new level; the run row says where each target came from.
    kept, redone = "smollm2-q4_1-4slots", "smollm2-q4_1-1slot"
    before = published_rows(airflow_env, run_key, kept)
    r = make_run(airflow_env, "2026-11-23", params={"targets": [redone], "concurrency": [1]})
    assert "llmbench run local-2026-11-23: succeeded" in r.stdout, r.stdout[-2000:]
    assert published_rows(airflow_env, run_key, kept) == before
    assert_best_is_the_cheapest_of_the_union(airflow_env, run_key)
    assert rows(airflow_env, "SELECT target_id, concurrency FROM llmbench.levels WHERE run_key = ? ORDER BY 1, 2",
                run_key) == [(redone, 1)] + [(kept, c) for c in (1, 2)]
    (new_dir, replaced, attempts), = rows(airflow_env, "SELECT run_dir, targets_replaced, target_attempts FROM "
                                          "llmbench.runs WHERE run_key = ?", run_key)
    assert new_dir not in dirs and json.loads(replaced) == [redone]
    assert json.loads(attempts) == {redone: new_dir, kept: whole_dir}
    dirs.add(new_dir)
    partial = {"runs": 1, "targets": 2, "levels": 3, "requests": 9, "price_performance": 3}
    assert table_counts(airflow_env, run_key, partial) == partial

    # ... and through a reprocess of the date (the DAG's mode, deploying nothing): the union is
    # recomputed, each target from the attempt it came from, and stays the same rows.
    r = dags_test(airflow_env, "2026-11-23", {"config": "local", "mode": "reprocess"})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert published_rows(airflow_env, run_key, kept) == before
    assert table_counts(airflow_env, run_key, partial) == partial
    assert rows(airflow_env, "SELECT run_dir, computation, target_attempts FROM llmbench.runs WHERE run_key = ?",
                run_key) == [(new_dir, "reprocess", attempts)]
    assert all(paths.Path(d).exists() for d in dirs)  # every attempt's raw results are kept
    assert llama_server_pids() == before_pids

    # ... and once more by `make run WAREHOUSE_CONN=...` into PostgreSQL: the same row counts as
    # DuckDB's, from a fourth attempt, with PostgreSQL's own column types.
    import psycopg

    name = f"llmbench_mkrun_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}"')
    try:
        r = make_run(airflow_env, "2026-11-23", f"WAREHOUSE_CONN=postgres://postgres@127.0.0.1:5432/{name}")
        assert "llmbench run local-2026-11-23: succeeded" in r.stdout, r.stdout[-2000:]
        assert "warehouse:          postgresql://127.0.0.1:5432/" + name in r.stdout  # user redacted
        with psycopg.connect(f"postgresql://postgres@127.0.0.1:5432/{name}") as con:
            assert {t: con.execute(f"SELECT count(*) FROM llmbench.{t} WHERE run_key = %s", (run_key,)).fetchone()[0]
                    for t in counts} == counts
            (pg_dir,), = con.execute("SELECT run_dir FROM llmbench.runs WHERE run_key = %s", (run_key,)).fetchall()
            assert pg_dir not in dirs and paths.Path(pg_dir).exists()
            (tps,), = con.execute("SELECT min(output_tokens_per_s) FROM llmbench.levels").fetchall()
            assert tps > 0
            (length,), = con.execute("SELECT character_maximum_length FROM information_schema.columns WHERE "
                                     "table_schema = 'llmbench' AND table_name = 'targets' AND column_name = 'error'"
                                     ).fetchall()
            assert length is None  # PostgreSQL's dialect (text), not Redshift's varchar(65535)
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    # DuckDB still holds the partial attempt's rows: publishing elsewhere replaced nothing here
    assert rows(airflow_env, "SELECT run_dir FROM llmbench.runs WHERE run_key = ?", run_key) == [(new_dir,)]
    assert llama_server_pids() == before_pids


def make_run(airflow_env, date, *extra, params=None):
    """`make run` as a user types it, in this work tree, into the test's data folder (SMALL's
    Params, overlaid with `params`)."""
    env = {k: v for k, v in airflow_env.items() if not k.startswith("MAKE")}
    params = "PARAMS=" + json.dumps({k: v for k, v in {**SMALL, **(params or {})}.items() if k != "config"})
    r = subprocess.run(["make", "--no-print-directory", "run", f"DATE={date}", params, *extra], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r


def table_counts(env, run_key, tables) -> dict:
    return {t: rows(env, f"SELECT count(*) FROM llmbench.{t} WHERE run_key = ?", run_key)[0][0] for t in tables}


# A target's columns that compare it with the run key's other targets, recomputed over the union
# whenever one of them is re-measured (results.union): the cheapest level per model.
UNION_COLUMNS = {"price_performance": ("best_under_slo",)}


def published_rows(env, run_key, target_id) -> dict:
    """Every published row of one target, every column but those comparing it with the other
    targets (UNION_COLUMNS), in a stable order: its levels, price-performance, quality, requests
    and targets rows."""
    order = {"levels": "concurrency", "price_performance": "concurrency", "quality": "suite",
             "requests": "concurrency, request_index, repeat", "targets": "target_id"}
    cols = {t: f"* EXCLUDE ({', '.join(UNION_COLUMNS[t])})" if t in UNION_COLUMNS else "*" for t in order}
    # as printed: NaN (a level without a figure) equals itself there
    return {t: [tuple(map(str, r)) for r in rows(env, f"SELECT {cols[t]} FROM llmbench.{t} WHERE run_key = ? AND "
                                                 f"target_id = ? ORDER BY {o}", run_key, target_id)]
            for t, o in order.items()}


def assert_best_is_the_cheapest_of_the_union(env, run_key):
    """best_under_slo marks, per model, the cheapest level over every published target of the run
    key (re-measured and kept alike) that meets the SLO and passed validation and quality."""
    got = rows(env, "SELECT target_id, concurrency, model, best_under_slo, meets_slo AND validation_passed AND "
               "coalesce(quality_passed, true) AND usd_per_m_headline IS NOT NULL, usd_per_m_headline "
               "FROM llmbench.price_performance WHERE run_key = ?", run_key)
    for model in {m for _, _, m, *_ in got}:
        eligible = [(usd, t, c) for t, c, m, _, ok, usd in got if m == model and ok]
        best = {(t, c) for t, c, m, b, *_ in got if m == model and b}
        assert best == ({min(eligible)[1:]} if eligible else set()), (model, got)


def assert_quality_published(env, run_key, n_levels):
    """The local config publishes a quality score per target from real SmolLM2 generations."""
    cfg = yaml.safe_load((paths.CONFIG_DIR / "local.yaml").read_text())
    ids = sorted(t["id"] for t in cfg["targets"])
    got = rows(env, "SELECT target_id, suite, status, score, n, n_passed, raw_path FROM llmbench.quality "
               "WHERE run_key = ? ORDER BY target_id, suite", run_key)
    names = sorted(s if isinstance(s, str) else s["name"] for s in cfg["quality"]["suites"])
    assert [(t, s) for t, s, *_ in got] == [(t, s) for t in ids for s in names]
    built = {s.name: len(quality.build_suite(s)) for s in QualitySettings.model_validate(cfg["quality"]).suites}
    for target_id, suite, status, score, n, n_passed, raw_path in got:
        assert status == "scored" and n == built[suite] * cfg["quality"]["runs"] and 0 <= score <= 1
        assert score == n_passed / n
        lines = [json.loads(x) for x in paths.Path(raw_path).read_text().splitlines()]
        graded = [x for x in lines if x["suite"] == suite]
        assert len(graded) == n and sum(x["passed"] for x in graded) == n_passed
        # real generations: every answer is text or a tool call from the model, with the grader's reason
        assert all((x["text"] or x["tool_calls"] or x["truncated"]) and x["reason"] and not x["error"]
                   for x in graded), target_id
        print(target_id, suite, f"{n_passed}/{n}", [(x["item"], x["reason"]) for x in graded[:2]])
    # the gated suite: a flexible score clearly above zero, with its interval, on every target
    for target_id, flexible, low, high in rows(env, "SELECT target_id, score_flexible, flexible_ci_low, "
                                               "flexible_ci_high FROM llmbench.quality WHERE run_key = ? AND "
                                               "suite = 'arithmetic'", run_key):
        print(target_id, f"arithmetic flexible {flexible:.3f} [{low:.3f}, {high:.3f}]")
        assert 0 < low <= flexible <= high, target_id
    for target_id, score, passed in rows(env, "SELECT target_id, quality_score, quality_passed FROM "
                                         "llmbench.targets WHERE run_key = ?", run_key):
        assert score is not None and passed is True, target_id  # above the local minimum (include/llmbench/config/local.yaml)
    pp = rows(env, "SELECT count(*), count(quality_score) FROM llmbench.price_performance WHERE run_key = ?",
              run_key)
    assert pp[0][0] == pp[0][1] == n_levels  # every level's row carries its target's score


# kind postgres: `make run WAREHOUSE_CONN=...` in test_dag_publishes_real_measurements_and_quality_and_reruns_replace
@pytest.mark.parametrize("kind", ["redshift"])
def test_dag_publishes_to_postgresql_through_an_airflow_connection(airflow_env, tmp_path, kind):
    """A Redshift-type Airflow connection named by the config, published with the Redshift dialect,
    to the local PostgreSQL (no Redshift is reachable here)."""
    import psycopg

    admin = PG_ADMIN
    name = f"llmbench_dag_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}"')
    try:
        cfg = yaml.safe_load((paths.CONFIG_DIR / "local.yaml").read_text())
        cfg["name"] = "pgrun"
        cfg["warehouse"] = {"kind": kind, "conn_id": "llmbench_warehouse"}
        path = tmp_path / "pgrun.yaml"
        path.write_text(yaml.safe_dump(cfg))
        conn = (f"postgres://postgres@127.0.0.1:5432/{name}" if kind == "postgres" else json.dumps(
            {"conn_type": "redshift", "host": "127.0.0.1", "port": 5432, "login": "postgres", "schema": name}))
        env = {**airflow_env, "AIRFLOW_CONN_LLMBENCH_WAREHOUSE": conn}
        conf = {"config": str(path), "targets": [cfg["targets"][1]["id"]], "concurrency": [1, 2],
                "requests_per_level": 2}
        r = dags_test(env, "2026-11-02", conf)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        with psycopg.connect(f"postgresql://postgres@127.0.0.1:5432/{name}") as con:
            counts = {t: con.execute(f"SELECT count(*) FROM llmbench.{t} WHERE run_key = 'pgrun-2026-11-02'").fetchone()[0]
                      for t in ("runs", "targets", "levels", "requests", "price_performance")}
            assert counts == {"runs": 1, "targets": 1, "levels": 2, "requests": 4, "price_performance": 2}
            (tps,), = con.execute("SELECT min(output_tokens_per_s) FROM llmbench.levels").fetchall()
            assert tps > 0
            (length,), = con.execute("SELECT character_maximum_length FROM information_schema.columns WHERE "
                                     "table_schema = 'llmbench' AND table_name = 'targets' AND column_name = 'error'"
                                     ).fetchall()
            assert length == (65535 if kind == "redshift" else None)  # the dialect really was Redshift's
    finally:
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def test_params_that_contradict_the_config_are_refused_by_plan_before_any_deploy(airflow_env):
    before = llama_server_pids()
    r = dags_test(airflow_env, "2026-11-09", {"config": "local", "targets": ["no-such-target"]})
    out = r.stdout + r.stderr
    assert r.returncode != 0
    assert "params.targets: unknown target ids ['no-such-target']; allowed: ['smollm2-q4_1-1slot'" in out
    assert llama_server_pids() == before
    assert not (paths.Path(airflow_env["LLMBENCH_HOME"]) / "runs" / "local-2026-11-09").exists()  # nothing created
