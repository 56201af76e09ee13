"""The whole DAG, in-process (`airflow dags test`), on the real local backend."""

import duckdb
import pytest
import yaml

from llmbench import paths

from .conftest import dags_test, llama_server_pids, render_in_chromium

SMALL = {"config": "local", "concurrency": [1, 2], "requests_per_level": 3}


def rows(env, sql, *params):
    con = duckdb.connect(env["LLMBENCH_HOME"] + "/warehouse.duckdb", read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def test_dag_publishes_real_measurements_and_reruns_replace(airflow_env, tmp_path):
    before = llama_server_pids()
    r = dags_test(airflow_env, "2026-11-23", SMALL)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert llama_server_pids() == before, "a llama-server survived the DAG run"

    run_key = "local-2026-11-23"
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
    # The report, opened in a real browser: every plot decodes as an image.
    dom, png = render_in_chromium(paths.Path(report), tmp_path)
    import re

    (n_images, n_broken), = re.findall(r'data-images="(\d+)" data-images-broken="(\d+)"', dom)
    assert int(n_images) >= 7 and n_broken == "0", (n_images, n_broken)
    assert png.stat().st_size > 50_000  # a rendered page of plots, not a blank one
    teardown_s = rows(airflow_env, "SELECT endpoint_seconds FROM llmbench.targets WHERE run_key = ?", run_key)
    assert all(s > 0 for (s,) in teardown_s)
    for knee, degradation in rows(airflow_env, "SELECT knee_concurrency, e2e_ms_p50_degradation FROM llmbench.targets "
                                  "WHERE run_key = ?", run_key):
        assert knee in (1, 2) and degradation is not None and degradation > -1
    # One local target at a time, whole: no target's server lived (deploy start to teardown end)
    # while another's did, so no start or warm-up fell into another target's measurement.
    import json

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

    # The same date twice more: one row set, from the newest attempt.
    dirs = {run_dir}
    for _ in range(2):
        r = dags_test(airflow_env, "2026-11-23", SMALL)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        for table, n in (("runs", 1), ("targets", n_targets), ("levels", len(levels)), ("requests", n_req),
                         ("price_performance", len(pp))):
            assert rows(airflow_env, f"SELECT count(*) FROM llmbench.{table} WHERE run_key = ?", run_key) == [(n,)]
        (new_dir,), = rows(airflow_env, "SELECT run_dir FROM llmbench.runs WHERE run_key = ?", run_key)
        assert new_dir not in dirs
        dirs.add(new_dir)
    assert all(paths.Path(d).exists() for d in dirs)  # every attempt's raw results are kept
    assert llama_server_pids() == before


def test_failed_target_is_recorded_others_publish_and_run_fails(airflow_env, tmp_path):
    cfg = yaml.safe_load((paths.CONFIG_DIR / "local.yaml").read_text())
    cfg["name"] = "faulty"
    good = cfg["targets"][1]
    bad = {**good, "id": "broken-flag", "serving": {**good["serving"], "name": "bad", "extra_args": ["--no-such-flag"]}}
    cfg["targets"] = [good, bad]
    path = tmp_path / "faulty.yaml"
    path.write_text(yaml.safe_dump(cfg))
    before = llama_server_pids()

    r = dags_test(airflow_env, "2026-11-16", {"config": str(path), "concurrency": [1], "requests_per_level": 2})
    out = r.stdout + r.stderr
    assert r.returncode != 0, out[-3000:]
    assert "TargetFailed" in out and "broken-flag" in out
    assert llama_server_pids() == before

    targets = dict(
        (t, (s, st, e)) for t, s, st, e in rows(
            airflow_env, "SELECT target_id, status, failed_stage, error FROM llmbench.targets WHERE run_key = ?",
            "faulty-2026-11-16")
    )
    assert targets["broken-flag"][0:2] == ("failed", "deploy") and "exited" in targets["broken-flag"][2]
    assert targets[good["id"]][0] == "succeeded"
    assert rows(airflow_env, "SELECT count(*) FROM llmbench.levels WHERE run_key = ? AND target_id = ?",
                "faulty-2026-11-16", good["id"]) == [(1,)]
    assert rows(airflow_env, "SELECT status FROM llmbench.runs WHERE run_key = ?", "faulty-2026-11-16") == [("partial",)]


@pytest.mark.parametrize("kind", ["postgres", "redshift"])
def test_dag_publishes_to_postgresql_through_an_airflow_connection(airflow_env, tmp_path, kind):
    """kind redshift: a Redshift-type Airflow connection, published with the Redshift dialect, to
    the local PostgreSQL (no Redshift is reachable here)."""
    import json
    import uuid

    import psycopg

    admin = "postgresql://postgres@127.0.0.1:5432/postgres"
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
