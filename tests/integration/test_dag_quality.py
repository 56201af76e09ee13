"""The quality stage and failed targets in the whole DAG (`airflow dags test`) on the real local
backend: a target that fails the quality gate is published but never best under the SLO, one that
fails at deploy is recorded and the others publish. (The local config's score per target from real
SmolLM2 generations is asserted on test_dag_run's first run: one DAG run fewer, issue 34.)"""

import duckdb
import yaml

from llmbench import paths

from .conftest import dags_test, llama_server_pids, servers_left


def rows(env, sql, *params):
    con = duckdb.connect(env["LLMBENCH_HOME"] + "/warehouse.duckdb", read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def test_a_failed_target_and_one_failing_the_quality_gate_are_recorded_others_publish_and_run_fails(
        airflow_env, tmp_path):
    """Three targets of one model; only tool calling is graded, with a minimum of 0.5. llama-server
    without jinja templates refuses tools: that target's suite is "unsupported" (no verdict, so it
    may rank). The one with templates calls no tool (SmolLM2-135M answers in prose): it fails the
    gate, is published with its rows, is never best under the SLO, and the run's check fails
    loudly. The third is given a flag llama-server refuses: it fails at deploy, is recorded as
    failed, and the others still publish. (The failed target had a DAG run of its own in
    test_dag_run until issue 34; both runs asserted a partial run, so one run carries both.)"""
    cfg = yaml.safe_load((paths.CONFIG_DIR / "local.yaml").read_text())
    cfg["name"] = "gated"
    cfg["slo"] = {"ttft_ms": 600000, "tpot_ms": 60000}  # every level meets it: the gate alone decides
    cfg["workload"]["request_timeout_s"] = 900  # two shared cores under other load: no timeouts
    cfg["quality"] = {"suites": ["tool_call"], "runs": 1, "min_score": 0.5, "max_tokens": 48}
    one = cfg["targets"][0]
    cfg["targets"] = [
        {**one, "id": "with-tools", "serving": {**one["serving"], "name": "jinja"}},
        {**one, "id": "no-tools", "serving": {**one["serving"], "name": "no-jinja", "extra_args": ["--no-jinja"]}},
        {**one, "id": "broken-flag", "serving": {**one["serving"], "name": "bad", "extra_args": ["--no-such-flag"]}},
    ]
    path = tmp_path / "gated.yaml"
    path.write_text(yaml.safe_dump(cfg))
    before = llama_server_pids()
    r = dags_test(airflow_env, "2026-12-14", {"config": str(path), "concurrency": [1], "requests_per_level": 1})
    out = r.stdout + r.stderr
    assert r.returncode != 0, out[-3000:]
    assert "TargetFailed" in out and "with-tools" in out and "quality gate failed" in out
    assert "broken-flag" in out
    run_key = "gated-2026-12-14"
    assert servers_left(airflow_env, run_key) == []
    assert llama_server_pids() <= before  # no server of this run left (others on the machine may come and go)
    q = {t: (st, sc) for t, st, sc in rows(airflow_env, "SELECT target_id, status, score FROM llmbench.quality "
                                            "WHERE run_key = ?", run_key)}
    assert q["with-tools"] == ("scored", 0.0) and q["no-tools"] == ("unsupported", None)
    assert q["broken-flag"] == ("not_run", None)  # never served, never graded
    t = {tid: (s, v, p) for tid, s, v, p in rows(
        airflow_env, "SELECT target_id, status, validation_passed, quality_passed FROM llmbench.targets "
        "WHERE run_key = ? AND target_id <> 'broken-flag'", run_key)}
    assert t == {"with-tools": ("succeeded", True, False), "no-tools": ("succeeded", True, None)}
    (status, stage, error), = rows(airflow_env, "SELECT status, failed_stage, error FROM llmbench.targets "
                                   "WHERE run_key = ? AND target_id = 'broken-flag'", run_key)
    assert (status, stage) == ("failed", "deploy") and "exited" in error
    levels = dict(rows(airflow_env, "SELECT target_id, count(*) FROM llmbench.levels WHERE run_key = ? "
                       "GROUP BY target_id", run_key))
    assert levels == {"with-tools": 1, "no-tools": 1}  # the others published; the failed one has none
    pp = {tid: (slo, best, qp) for tid, slo, best, qp in rows(
        airflow_env, "SELECT target_id, meets_slo, best_under_slo, quality_passed FROM llmbench.price_performance "
        "WHERE run_key = ?", run_key)}
    # with-tools meets the SLO and passed validation, yet only the gate keeps it from being chosen
    assert pp == {"with-tools": (True, False, False), "no-tools": (True, True, None)}
    # the view ranks the latest of every configuration of the model (other tests' runs too): never this one
    assert rows(airflow_env, "SELECT count(*) FROM llmbench.v_best_under_slo WHERE serving_config = 'jinja'") == [(0,)]
    # with-tools fails the gate by its score; broken-flag by design too, its quality stage never ran
    # (tables.quality_verdicts): two of three fail the gate, one target failed outright
    assert rows(airflow_env, "SELECT quality_passed FROM llmbench.targets WHERE run_key = ? AND "
                "target_id = 'broken-flag'", run_key) == [(False,)]
    assert rows(airflow_env, "SELECT status, targets_failed, targets_quality_failed FROM llmbench.runs "
                "WHERE run_key = ?", run_key) == [("partial", 1, 2)]


def test_the_local_gate_fails_a_degraded_target_of_the_same_model_and_passes_the_normal_one(airflow_env, tmp_path):
    """The embedded default's gate can fail: the local config's own quality section (single-digit
    arithmetic, flexible grading, min_score 0.3) on two targets of the same SmolLM2-135M server
    settings, one asked at temperature 2.0. The normal one scores clearly above zero and passes;
    the degraded one falls below the minimum, fails the gate and is never best under the SLO."""
    cfg = yaml.safe_load((paths.CONFIG_DIR / "local.yaml").read_text())
    arithmetic = next(s for s in cfg["quality"]["suites"] if isinstance(s, dict) and s["kind"] == "arithmetic")
    cfg["name"] = "degraded"
    cfg["slo"] = {"ttft_ms": 600000, "tpot_ms": 60000}  # every level meets it: the gate alone decides
    cfg["workload"]["request_timeout_s"] = 900
    cfg["quality"] = {**cfg["quality"], "suites": [arithmetic]}  # the gated suite only: one DAG run's time
    four = next(t for t in cfg["targets"] if t["serving"]["parallel"] == 4)
    cfg["targets"] = [
        {**four, "id": "normal"},
        {**four, "id": "hot", "serving": {**four["serving"], "name": "hot"}, "quality": {"temperature": 2.0}},
    ]
    path = tmp_path / "degraded.yaml"
    path.write_text(yaml.safe_dump(cfg))
    r = dags_test(airflow_env, "2026-12-15", {"config": str(path), "concurrency": [1], "requests_per_level": 1})
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "quality gate failed" in out and "hot" in out, out[-3000:]
    run_key = "degraded-2026-12-15"
    assert servers_left(airflow_env, run_key) == []
    got = {t: rest for t, *rest in rows(
        airflow_env, "SELECT target_id, status, n, score, score_strict, score_flexible, flexible_ci_low, "
        "flexible_ci_high, min_score, detectable_drop FROM llmbench.quality WHERE run_key = ?", run_key)}
    minimum = cfg["quality"]["min_score"]["arithmetic"]
    for target_id, (status, n, score, strict, flexible, low, high, min_score, detectable) in got.items():
        print(target_id, f"strict {strict:.3f} flexible {flexible:.3f} [{low:.3f}, {high:.3f}] n={n}")
        assert status == "scored" and n == arithmetic["size"] and min_score == minimum
        assert score == flexible and low <= flexible <= high and detectable > 0
    assert got["normal"][4] >= minimum > got["hot"][4]  # flexible scores either side of the minimum
    assert got["normal"][4] > 0.2  # clearly above zero
    t = dict(rows(airflow_env, "SELECT target_id, quality_passed FROM llmbench.targets WHERE run_key = ?", run_key))
    assert t == {"normal": True, "hot": False}
    best = dict(rows(airflow_env, "SELECT target_id, bool_or(best_under_slo) FROM llmbench.price_performance "
                     "WHERE run_key = ? GROUP BY target_id", run_key))
    assert best == {"normal": True, "hot": False}
