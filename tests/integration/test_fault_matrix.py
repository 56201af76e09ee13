"""The fault matrix (README, Guarantees): break each stage on purpose, in a real DAG run, and check
what is left — cloud resources and server processes, raw records, task and run states, rows.

SageMaker path: moto's server behind a fault-injecting proxy (control plane) and the SigV4 /
event-stream server in front of the real local model (data plane). Local path: real llama-server.
Faults come from outside the pipeline wherever a real one can be caused (an AWS error, a model
error, an unreachable warehouse); a raise or a SIGKILL at an exact record comes from
LLMBENCH_CHAOS (llmbench/chaos.py), since nothing outside can hit that point reliably.
"""

import json
import sqlite3
import time
from pathlib import Path

import boto3
import duckdb
import pytest
import yaml

from llmbench.testing._serve import BackgroundServer, ServerProcess, alert_webhook

from .aws_fault_proxy import make_app as fault_proxy
from .conftest import BIN, dags_test, llama_server_pids
from .sagemaker_fixtures import ROLE

AK, SK = "AKIDLLMBENCHTEST", "llmbench-test-secret"
REGION = "us-west-2"
WORKLOAD = {"input_tokens": 64, "output_tokens": 16, "concurrency": [1, 2], "requests_per_level": 3,
            "warmup_requests": 1}


def sm_target(target_id: str) -> dict:
    return {"id": target_id, "instance_type": "ml.g7e.2xlarge", "model": "qwen3-32b", "precision": "bf16",
            "serving": {"kind": "vllm", "name": "vllm-tp1", "max_model_len": 4096}}


def sm_config(tmp_path: Path, name: str, target_ids: list[str], runtime_url: str, **sagemaker) -> Path:
    cfg = {"name": name, "backend": "sagemaker",
           "sagemaker": {"region": REGION, "role_arn": ROLE, "runtime_url": runtime_url, "endpoint_timeout_s": 10,
                         **sagemaker},
           "workload": WORKLOAD, "targets": [sm_target(t) for t in target_ids]}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def aws_env(env: dict, endpoint_url: str) -> dict:
    return {**env, "AIRFLOW_CONN_AWS_DEFAULT": json.dumps({
        "conn_type": "aws", "login": AK, "password": SK,
        "extra": {"region_name": REGION, "endpoint_url": endpoint_url}})}


def left_on_aws(moto_url: str) -> dict[str, int]:
    sm = boto3.client("sagemaker", region_name=REGION, endpoint_url=moto_url,
                      aws_access_key_id=AK, aws_secret_access_key=SK)
    return {"endpoints": len(sm.list_endpoints()["Endpoints"]),
            "endpoint_configs": len(sm.list_endpoint_configs()["EndpointConfigs"]),
            "models": len(sm.list_models()["Models"])}


NOTHING = {"endpoints": 0, "endpoint_configs": 0, "models": 0}


def warehouse(env: dict, sql: str, *params):
    con = duckdb.connect(env["LLMBENCH_HOME"] + "/warehouse.duckdb", read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def task_states(env: dict, date: str, keep_group: bool = False) -> tuple[str, dict[tuple[str, int], str]]:
    """The newest llm_benchmark DAG run for a logical date: its state and {(task_id, map_index): state};
    task ids without their group ("deploy"), or with it ("ec2.deploy") when a run has several groups
    (map indexes count within a group)."""
    con = sqlite3.connect(Path(env["AIRFLOW_HOME"]) / "airflow.db")
    try:
        run_id, state = con.execute(
            "SELECT run_id, state FROM dag_run WHERE dag_id = 'llm_benchmark' AND logical_date LIKE ? "
            "ORDER BY id DESC LIMIT 1", (f"{date}%",)).fetchone()
        tis = con.execute("SELECT task_id, map_index, state FROM task_instance WHERE dag_id = 'llm_benchmark' "
                          "AND run_id = ?", (run_id,)).fetchall()
    finally:
        con.close()
    return state, {(t if keep_group else t.split(".")[-1], m): s for t, m, s in tis}


def attempt_dirs(env: dict, run_key: str) -> list[Path]:
    return sorted((Path(env["LLMBENCH_HOME"]) / "runs" / run_key).iterdir())


# target id -> (status, failed_stage, a fragment of the error, levels kept, the stage whose task failed)
MATRIX = {
    "healthy": ("succeeded", None, None, 2, None),
    "mk-fail": ("failed", "deploy", "create model failed", 0, "deploy"),
    "cfg-fail": ("failed", "deploy", "create endpoint_config failed", 0, "deploy"),
    "epc-fail": ("failed", "deploy", "create endpoint failed", 0, "deploy"),
    "ep-failed": ("failed", "wait_ready", "CUDA out of memory", 0, "wait_ready"),
    "ep-slow": ("failed", "wait_ready", "status Creating after 10s", 0, "wait_ready"),
    "warm-fail": ("failed", "warm_up", "every warm-up request failed", 0, "warm_up"),
    "sweep-raise": ("failed", "sweep", "InjectedFault", 1, "sweep"),
    "val-fail": ("succeeded", None, None, 2, None),  # measured, published, flagged: validation_passed false
    "td-flaky": ("succeeded", None, None, 2, None),
}
RULES = [
    {"action": "CreateModel", "match": "mk-fail", "error": "ValidationException", "message": "injected: model"},
    {"action": "CreateEndpointConfig", "match": "cfg-fail", "error": "ResourceLimitExceeded",
     "message": "injected: account-level service limit"},
    {"action": "CreateEndpoint", "match": "epc-fail", "error": "ResourceLimitExceeded",
     "message": "injected: instance quota"},
    {"action": "DescribeEndpoint", "match": "ep-failed",
     "rewrite": {"EndpointStatus": "Failed", "FailureReason": "CUDA out of memory (injected)"}},
    {"action": "DescribeEndpoint", "match": "ep-slow", "rewrite": {"EndpointStatus": "Creating"}},
    {"action": "DeleteEndpoint", "match": "td-flaky", "error": "ValidationException",
     "message": "injected: transient control-plane error", "times": 1},
]


def test_sagemaker_fault_matrix_leaves_nothing_keeps_records_and_fails_the_run(airflow_env, local_server, tmp_path):
    date, run_key = "2026-10-05", "sm-matrix-2026-10-05"
    chaos = [{"target": "sweep-raise", "stage": "sweep", "action": "raise", "after_records": 4}]
    rules = json.loads(json.dumps(RULES))
    with ServerProcess("tests.integration.moto_server") as moto, \
            BackgroundServer(fault_proxy(moto.url, rules)) as proxy, \
            ServerProcess("llmbench.testing.sagemaker_runtime", "--upstream", local_server["base_url"],
                          "--access-key", AK, "--secret-key", SK, "--fresh-upstream-connections",
                          "--region", REGION, "--fail-endpoint", "warm-fail:1",
                          "--fail-endpoint", "val-fail:2") as runtime:
        path = sm_config(tmp_path, "sm-matrix", list(MATRIX), runtime.url)
        env = {**aws_env(airflow_env, proxy.url), "LLMBENCH_CHAOS": json.dumps(chaos)}
        r = dags_test(env, date, {"config": str(path)})
        out = r.stdout + r.stderr
        assert r.returncode != 0 and "TargetFailed" in out, out[-4000:]
        assert left_on_aws(moto.url) == NOTHING
    assert all(rule.get("fired") for rule in rules), [r for r in rules if not r.get("fired")]
    assert rules[-1]["fired"] == 1  # the flaky delete failed once, and the retry removed the endpoint

    rows = {t: rest for t, *rest in warehouse(
        airflow_env, "SELECT target_id, status, failed_stage, error, validation_passed, endpoint_seconds "
                     "FROM llmbench.targets WHERE run_key = ?", run_key)}
    levels = dict(warehouse(airflow_env, "SELECT target_id, count(*) FROM llmbench.levels WHERE run_key = ? "
                                         "GROUP BY target_id", run_key))
    plan = json.loads((attempt_dirs(airflow_env, run_key)[-1] / "plan.json").read_text())
    index = {t["target_id"]: i for i, t in enumerate(plan["targets"])}
    run_state, tis = task_states(airflow_env, date)
    assert run_state == "failed"
    for target_id, (status, stage, fragment, n_levels, failed_task) in MATRIX.items():
        got_status, got_stage, error, valid, seconds = rows[target_id]
        assert (got_status, got_stage) == (status, stage), (target_id, rows[target_id])
        assert fragment is None or fragment in error, (target_id, error)
        assert levels.get(target_id, 0) == n_levels, target_id
        i = index[target_id]
        states = {task: tis[(task, i)] for task in ("deploy", "wait_ready", "warm_up", "sweep", "validate",
                                                      "teardown_target")}
        if failed_task:
            assert states[failed_task] == "failed", (target_id, states)
        else:
            assert set(states.values()) == {"success"}, (target_id, states)
        # Teardown runs whenever deploy returned; a deploy that failed cleaned up itself.
        assert states["teardown_target"] == ("upstream_failed" if failed_task == "deploy" else "success"), states
        assert (seconds is None) == (failed_task == "deploy"), (target_id, seconds)
    assert rows["val-fail"][3] is False and rows["healthy"][3] is True
    for task in ("price_performance", "publish", "report"):
        assert tis[(task, -1)] == "success", task
    assert tis[("check", -1)] == "failed"

    # Raw records of everything measured before the fault: the sweep died during its second level,
    # after 4 records; the first level (3) is in the warehouse, all 4 are in requests.jsonl (and
    # a 5th when the other stream of level 2 finished in the same event-loop turn, before its
    # cancellation landed: measured, so kept).
    raw = Path(dict((t, d) for t, d in warehouse(airflow_env, "SELECT target_id, raw_dir FROM llmbench.targets "
                                                 "WHERE run_key = ?", run_key))["sweep-raise"])
    assert len((raw / "requests.jsonl").read_text().splitlines()) in (4, 5)
    assert warehouse(airflow_env, "SELECT count(*) FROM llmbench.requests WHERE run_key = ? AND target_id = ?",
                     run_key, "sweep-raise") == [(3,)]
    (ok, failed), = warehouse(airflow_env, "SELECT sum(requests_ok), sum(requests_failed) FROM llmbench.levels "
                                           "WHERE run_key = ? AND target_id = 'val-fail'", run_key)
    assert (ok, failed) == (3, 3)  # every second request failed: error rate exactly 0.5 over 6


def test_sigkilled_worker_leaves_an_endpoint_the_janitor_removes_and_a_rerun_replaces(
        airflow_env, local_server, tmp_path):
    date, run_key = "2026-10-12", "sm-killed-2026-10-12"
    with ServerProcess("tests.integration.moto_server") as moto, \
            ServerProcess("llmbench.testing.sagemaker_runtime", "--upstream", local_server["base_url"],
                          "--access-key", AK, "--secret-key", SK, "--fresh-upstream-connections",
                          "--region", REGION) as runtime:
        # Resources expire 2 s after deploy, so the janitor may take them within this test.
        path = sm_config(tmp_path, "sm-killed", ["killed"], runtime.url, expiry_hours=0.0006)
        env = aws_env(airflow_env, moto.url)
        chaos = [{"target": "killed", "stage": "sweep", "action": "kill", "after_records": 4}]
        r = dags_test({**env, "LLMBENCH_CHAOS": json.dumps(chaos)}, date, {"config": str(path)})
        assert r.returncode == -9, (r.returncode, (r.stdout + r.stderr)[-3000:])
        assert left_on_aws(moto.url) == {"endpoints": 1, "endpoint_configs": 1, "models": 1}
        killed_dir = attempt_dirs(airflow_env, run_key)[-1] / "killed"
        assert len((killed_dir / "requests.jsonl").read_text().splitlines()) == 4  # nothing measured is lost
        assert not (killed_dir / "teardown.json").exists()

        time.sleep(2.5)
        import subprocess

        j = subprocess.run([str(BIN / "airflow"), "dags", "test", "llmbench_janitor", date, "-c",
                            json.dumps({"regions": [REGION]})], env=env, capture_output=True, text=True, timeout=600)
        assert j.returncode == 0, (j.stdout + j.stderr)[-3000:]
        assert left_on_aws(moto.url) == NOTHING

        r = dags_test(env, date, {"config": str(path)})
        assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
        assert left_on_aws(moto.url) == NOTHING
    assert warehouse(airflow_env, "SELECT count(*), min(status) FROM llmbench.runs WHERE run_key = ?",
                     run_key) == [(1, "succeeded")]
    assert warehouse(airflow_env, "SELECT count(*) FROM llmbench.levels WHERE run_key = ?", run_key) == [(2,)]
    assert (killed_dir / "teardown.json").exists()  # the re-run settled the killed attempt's handle too


def local_without_quality(tmp_path: Path) -> Path:
    """The local config, named "local" still, without its quality stage: quality is graded in
    test_dag_run and test_dag_quality; in a fault test it only adds minutes per target (issue 34)."""
    cfg = yaml.safe_load((Path(__file__).parents[2] / "include/llmbench/config/local.yaml").read_text())
    cfg.pop("quality")
    path = tmp_path / "local.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_sigkilled_local_run_leaves_a_bounded_server_the_rerun_removes(airflow_env, tmp_path):
    date, conf = "2026-10-19", {"config": str(local_without_quality(tmp_path)), "targets": ["smollm2-q4_1-4slots"],
                                "concurrency": [1, 2], "requests_per_level": 3}
    before = llama_server_pids()
    chaos = [{"target": "4slots", "stage": "sweep", "action": "kill", "after_records": 4}]
    r = dags_test({**airflow_env, "LLMBENCH_CHAOS": json.dumps(chaos)}, date, conf)
    assert r.returncode == -9, (r.returncode, (r.stdout + r.stderr)[-3000:])
    left = llama_server_pids() - before
    assert len(left) == 1  # the teardown never ran; the server's own guard bounds its life ...
    killed_dir = attempt_dirs(airflow_env, "local-2026-10-19")[-1] / conf["targets"][0]
    handle = json.loads((killed_dir / "handle.json").read_text())
    assert handle["command"][:4] == ["timeout", "--signal=TERM", "--kill-after=10", "7200"]
    assert len((killed_dir / "requests.jsonl").read_text().splitlines()) == 4

    r = dags_test(airflow_env, date, conf)  # ... and the re-run of the date stops it first
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert llama_server_pids() == before
    assert json.loads((killed_dir / "teardown.json").read_text())["reaped_by"]
    assert warehouse(airflow_env, "SELECT count(*) FROM llmbench.runs WHERE run_key = 'local-2026-10-19'") == [(1,)]


def test_publish_failure_keeps_tables_and_the_cli_publishes_them_later(airflow_env, tmp_path):
    import subprocess
    import uuid

    import psycopg

    admin = "postgresql://postgres@127.0.0.1:5432/postgres"
    name = f"llmbench_pub_{uuid.uuid4().hex[:8]}"
    cfg = yaml.safe_load((Path(__file__).parents[2] / "include/llmbench/config/local.yaml").read_text())
    cfg["name"] = "pubfail"
    cfg["warehouse"] = {"kind": "postgres", "conn_id": "llmbench_warehouse"}
    cfg.pop("quality")  # graded in test_dag_run and test_dag_quality; here only minutes more (issue 34)
    path = tmp_path / "pubfail.yaml"
    path.write_text(yaml.safe_dump(cfg))
    # The connection names a database that does not exist yet: the warehouse is "down".
    with alert_webhook() as (conn, alerts):
        env = {**airflow_env, "AIRFLOW_CONN_LLMBENCH_WAREHOUSE": f"postgres://postgres@127.0.0.1:5432/{name}",
               "AIRFLOW_CONN_LLMBENCH_ALERTS": conn}
        conf = {"config": str(path), "targets": [cfg["targets"][0]["id"]], "concurrency": [1],
                "requests_per_level": 2}
        r = dags_test(env, "2026-10-26", conf)
    assert [a["task_id"] for a in alerts] == ["publish"]  # the on-failure alert reached the webhook
    assert name in alerts[0]["text"] and alerts[0]["run_id"]
    assert r.returncode != 0 and name in (r.stdout + r.stderr)
    run_state, tis = task_states(airflow_env, "2026-10-26")
    assert run_state == "failed" and tis[("publish", -1)] == "failed"
    assert tis[("report", -1)] == tis[("check", -1)] == "upstream_failed"
    run_dir = attempt_dirs(airflow_env, "pubfail-2026-10-26")[-1]
    assert (run_dir / "tables" / "levels.parquet").exists()

    with psycopg.connect(admin, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}"')
    try:
        dsn = f"postgresql://postgres@127.0.0.1:5432/{name}"
        p = subprocess.run([str(BIN / "llmbench"), "publish", str(run_dir), "--warehouse", dsn],
                           env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        with psycopg.connect(dsn) as con:
            assert con.execute("SELECT count(*), min(status) FROM llmbench.runs").fetchone() == (1, "succeeded")
            assert con.execute("SELECT count(*) FROM llmbench.levels").fetchone() == (1,)
    finally:
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(autouse=True)
def _no_chaos_leaks(monkeypatch):
    monkeypatch.delenv("LLMBENCH_CHAOS", raising=False)
