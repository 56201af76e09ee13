"""The quality stage in the whole DAG (`airflow dags test`) on the real local backend: the local
config publishes a score per target from real SmolLM2 generations, and a target that fails the
quality gate is published but never best under the SLO."""

import json
from pathlib import Path

import duckdb
import yaml

from llmbench import paths, quality
from llmbench.backends.local.backend import group_members

from .conftest import dags_test


def servers_left(env, run_key):
    """Processes of the llama-servers this run key's targets started (other engineers' servers on
    the same machine are not ours to count)."""
    runs = Path(env["LLMBENCH_HOME"]) / "runs" / run_key
    return [p for h in runs.glob("*/*/handle.json") for p in group_members(json.loads(h.read_text())["pgid"])]


def rows(env, sql, *params):
    con = duckdb.connect(env["LLMBENCH_HOME"] + "/warehouse.duckdb", read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def test_local_config_publishes_a_quality_score_per_target_from_real_generations(airflow_env):
    r = dags_test(airflow_env, "2026-12-07", {"config": "local", "concurrency": [1], "requests_per_level": 2})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    run_key = "local-2026-12-07"
    assert servers_left(airflow_env, run_key) == []
    cfg = yaml.safe_load((paths.CONFIG_DIR / "local.yaml").read_text())
    ids = sorted(t["id"] for t in cfg["targets"])
    got = rows(airflow_env, "SELECT target_id, suite, status, score, n, n_passed, raw_path FROM llmbench.quality "
               "WHERE run_key = ? ORDER BY target_id, suite", run_key)
    assert [(t, s) for t, s, *_ in got] == [(t, s) for t in ids for s in ("exact", "tool_call")]
    sizes = {"exact": len(quality.EXACT_ITEMS), "tool_call": len(quality.TOOL_ITEMS)}
    for target_id, suite, status, score, n, n_passed, raw_path in got:
        assert status == "scored" and n == sizes[suite] * cfg["quality"]["runs"] and 0 <= score <= 1
        assert score == n_passed / n
        lines = [json.loads(x) for x in Path(raw_path).read_text().splitlines()]
        graded = [x for x in lines if x["suite"] == suite]
        assert len(graded) == n and sum(x["passed"] for x in graded) == n_passed
        # real generations: every answer is text or a tool call from the model, with the grader's reason
        assert all((x["text"] or x["tool_calls"]) and x["reason"] and not x["error"] for x in graded), target_id
        print(target_id, suite, f"{n_passed}/{n}", [(x["item"], x["reason"]) for x in graded[:2]])
    for target_id, score, passed in rows(airflow_env, "SELECT target_id, quality_score, quality_passed FROM "
                                         "llmbench.targets WHERE run_key = ?", run_key):
        assert score is not None and passed is True, target_id  # the local minimum is 0 (include/config/local.yaml)
    pp = rows(airflow_env, "SELECT count(*), count(quality_score) FROM llmbench.price_performance WHERE run_key = ?",
              run_key)
    assert pp[0][0] == pp[0][1] == len(ids)


def test_a_target_failing_the_quality_gate_is_published_but_not_best_under_slo(airflow_env, tmp_path):
    """Two targets of one model; only tool calling is graded, with a minimum of 0.5. llama-server
    without jinja templates refuses tools: that target's suite is "unsupported" (no verdict, so it
    may rank). The other calls no tool (SmolLM2-135M answers in prose): it fails the gate, is
    published with its rows, is never best under the SLO, and the run's check fails loudly."""
    cfg = yaml.safe_load((paths.CONFIG_DIR / "local.yaml").read_text())
    cfg["name"] = "gated"
    cfg["slo"] = {"ttft_ms": 600000, "tpot_ms": 60000}  # every level meets it: the gate alone decides
    cfg["workload"]["request_timeout_s"] = 900  # two shared cores under other load: no timeouts
    cfg["quality"] = {"suites": ["tool_call"], "runs": 1, "min_score": 0.5, "max_tokens": 48}
    one = cfg["targets"][0]
    cfg["targets"] = [
        {**one, "id": "with-tools", "serving": {**one["serving"], "name": "jinja"}},
        {**one, "id": "no-tools", "serving": {**one["serving"], "name": "no-jinja", "extra_args": ["--no-jinja"]}},
    ]
    path = tmp_path / "gated.yaml"
    path.write_text(yaml.safe_dump(cfg))
    r = dags_test(airflow_env, "2026-12-14", {"config": str(path), "concurrency": [1], "requests_per_level": 1})
    out = r.stdout + r.stderr
    assert r.returncode != 0, out[-3000:]
    assert "TargetFailed" in out and "with-tools" in out and "quality gate failed" in out
    run_key = "gated-2026-12-14"
    assert servers_left(airflow_env, run_key) == []
    q = {t: (st, sc) for t, st, sc in rows(airflow_env, "SELECT target_id, status, score FROM llmbench.quality "
                                            "WHERE run_key = ?", run_key)}
    assert q["with-tools"] == ("scored", 0.0) and q["no-tools"] == ("unsupported", None)
    t = {tid: (s, v, p) for tid, s, v, p in rows(
        airflow_env, "SELECT target_id, status, validation_passed, quality_passed FROM llmbench.targets "
        "WHERE run_key = ?", run_key)}
    assert t == {"with-tools": ("succeeded", True, False), "no-tools": ("succeeded", True, None)}
    pp = {tid: (slo, best, qp) for tid, slo, best, qp in rows(
        airflow_env, "SELECT target_id, meets_slo, best_under_slo, quality_passed FROM llmbench.price_performance "
        "WHERE run_key = ?", run_key)}
    # with-tools meets the SLO and passed validation, yet only the gate keeps it from being chosen
    assert pp == {"with-tools": (True, False, False), "no-tools": (True, True, None)}
    # the view ranks the latest of every configuration of the model (other tests' runs too): never this one
    assert rows(airflow_env, "SELECT count(*) FROM llmbench.v_best_under_slo WHERE serving_config = 'jinja'") == [(0,)]
    assert rows(airflow_env, "SELECT status, targets_quality_failed FROM llmbench.runs WHERE run_key = ?",
                run_key) == [("partial", 1)]
