"""Airflow as production runs it, on this machine: api-server, scheduler, dag-processor and a Celery
worker (CeleryExecutor), metadata on the local PostgreSQL, broker on the local Redis. The test
triggers llm_benchmark through the REST API, waits for it, checks the warehouse rows and that the
tasks went through Celery, and stops every process it started."""

import json
import os
import secrets
import signal
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

import psycopg
import pytest
import redis
import yaml

from llmbench.backends.local import free_port

from .conftest import BIN, ROOT, llama_server_pids

ADMIN_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
REDIS_DB = 7  # the test's own Redis database, flushed before use


class Stack:
    """The Airflow services as processes of their own, each in its own process group."""

    def __init__(self, env: dict, logs: Path):
        self.env, self.logs, self.procs = env, logs, {}

    def airflow(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        r = subprocess.run([str(BIN / "airflow"), *args], env=self.env, capture_output=True, text=True,
                           timeout=timeout)
        assert r.returncode == 0, (args, r.stdout[-2000:], r.stderr[-2000:])
        return r

    def start(self, name: str, *args: str) -> None:
        log = (self.logs / f"{name}.log").open("wb")
        self.procs[name] = subprocess.Popen([str(BIN / "airflow"), *args], env=self.env, stdout=log,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)

    def alive(self) -> None:
        dead = {n: p.returncode for n, p in self.procs.items() if p.poll() is not None}
        assert not dead, f"Airflow services exited: {dead}; logs in {self.logs}: " + self.tail(*dead)

    def tail(self, *names: str) -> str:
        return " | ".join(f"{n}: " + (self.logs / f"{n}.log").read_text(errors="replace")[-1500:] for n in names)

    def stop(self) -> None:
        for p in self.procs.values():
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 60
        for p in self.procs.values():
            try:
                p.wait(max(1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(p.pid, signal.SIGKILL)  # the group: Celery's pool and task processes too
            except ProcessLookupError:
                pass
            p.wait(30)


def api(base: str, method: str, path: str, token: str | None = None, body: dict | None = None) -> dict:
    req = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode() if body else None,
                                 headers={"Content-Type": "application/json",
                                          **({"Authorization": f"Bearer {token}"} if token else {})})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read() or b"{}")


def wait_for(what: str, fn, timeout_s: float, stack: Stack, every_s: float = 2.0):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        stack.alive()
        try:
            value = fn()
            if value:
                return value
        except Exception as e:  # noqa: BLE001 (not up yet: keep asking until the deadline)
            last = e
        time.sleep(every_s)
    pytest.fail(f"{what}: not within {timeout_s}s (last error: {last}); " + stack.tail(*stack.procs))


@pytest.fixture
def databases():
    names = {k: f"llmbench_{k}_{uuid.uuid4().hex[:8]}" for k in ("airflow", "warehouse")}
    with psycopg.connect(ADMIN_DSN, autocommit=True) as con:
        for n in names.values():
            con.execute(f'CREATE DATABASE "{n}"')
    try:
        yield names
    finally:
        with psycopg.connect(ADMIN_DSN, autocommit=True) as con:
            for n in names.values():
                con.execute(f'DROP DATABASE IF EXISTS "{n}" WITH (FORCE)')


def test_celery_deployment_runs_the_benchmark_triggered_through_the_rest_api(databases, tmp_path):
    redis.Redis(host="127.0.0.1", port=6379, db=REDIS_DB).flushdb()
    home = tmp_path / "home"
    (home / "airflow").mkdir(parents=True)
    port = free_port()
    metadata = f"postgresql+psycopg://postgres@127.0.0.1:5432/{databases['airflow']}"
    warehouse = f"postgresql://postgres@127.0.0.1:5432/{databases['warehouse']}"
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps({"admin": "llmbench-admin"}))
    env = {
        **os.environ,
        "LLMBENCH_HOME": str(home),
        "LLMBENCH_SCHEDULE": "none",  # only the run this test triggers
        "AIRFLOW_HOME": str(home / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": metadata,
        "AIRFLOW__CELERY__BROKER_URL": f"redis://127.0.0.1:6379/{REDIS_DB}",
        "AIRFLOW__CELERY__RESULT_BACKEND": "db+" + metadata,
        "AIRFLOW__CELERY__WORKER_CONCURRENCY": "2",
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
        "AIRFLOW__CORE__FERNET_KEY": "",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__CORE__AUTH_MANAGER":
            "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "10",
        "AIRFLOW_CONN_LLMBENCH_WAREHOUSE": warehouse.replace("postgresql://", "postgres://"),
    }
    cfg = yaml.safe_load((ROOT / "include/config/local.yaml").read_text())
    cfg["name"] = "celery"
    cfg["warehouse"] = {"kind": "postgres", "conn_id": "llmbench_warehouse"}
    config_path = tmp_path / "celery.yaml"
    config_path.write_text(yaml.safe_dump(cfg))

    stack = Stack(env, tmp_path)
    before = llama_server_pids()
    stack.airflow("db", "migrate")
    stack.airflow("pools", "import", str(ROOT / "deploy" / "pools.json"))
    base = f"http://127.0.0.1:{port}"
    try:
        stack.start("api-server", "api-server", "--port", str(port))
        stack.start("scheduler", "scheduler")
        stack.start("dag-processor", "dag-processor")
        stack.start("worker", "celery", "worker", "--concurrency", "2")
        wait_for("api-server", lambda: api(base, "GET", "/api/v2/version"), 180, stack)
        token = api(base, "POST", "/auth/token", body={"username": "admin", "password": "llmbench-admin"})[
            "access_token"]
        wait_for("llm_benchmark parsed", lambda: api(base, "GET", "/api/v2/dags/llm_benchmark", token), 240, stack)
        api(base, "PATCH", "/api/v2/dags/llm_benchmark", token, {"is_paused": False})
        t0 = time.monotonic()
        run = api(base, "POST", "/api/v2/dags/llm_benchmark/dagRuns", token, {
            "dag_run_id": "celery-test", "logical_date": "2026-09-07T00:00:00Z",
            "conf": {"config": str(config_path), "concurrency": [1, 2], "requests_per_level": 3}})
        assert run["state"] == "queued"
        done = wait_for("the DAG run to finish", lambda: (lambda r: r if r["state"] in ("success", "failed") else None)(
            api(base, "GET", "/api/v2/dags/llm_benchmark/dagRuns/celery-test", token)), 900, stack, every_s=5)
        wall_s = time.monotonic() - t0
        tis = api(base, "GET", "/api/v2/dags/llm_benchmark/dagRuns/celery-test/taskInstances?limit=100",
                  token)["task_instances"]
        states = {(t["task_id"], t["map_index"]): t["state"] for t in tis}
        assert done["state"] == "success", (states, stack.tail("worker", "scheduler"))
        print(f"\ndistributed run (CeleryExecutor, 1 worker x 2 slots): {wall_s:.0f}s from trigger to success")
        (home / "distributed_wall_s.txt").write_text(f"{wall_s:.1f}\n")
    finally:
        stack.stop()
    assert all(p.poll() is not None for p in stack.procs.values())
    assert llama_server_pids() == before

    # Every task ran through Celery: one result per task instance in the result backend, and the
    # worker's log shows the benchmark's own tasks.
    ran = [t for t in tis if t["state"] == "success"]
    assert {t["task_id"] for t in ran} >= {"plan", "local.deploy", "local.sweep", "local.teardown_target",
                                          "publish", "check"}
    with psycopg.connect(metadata.replace("+psycopg", "")) as con:
        (n_celery,), = con.execute("SELECT count(*) FROM celery_taskmeta WHERE status = 'SUCCESS'").fetchall()
    assert n_celery >= len(ran)
    assert all(t["hostname"] for t in ran)
    worker_log = (tmp_path / "worker.log").read_text(errors="replace")
    assert "local.sweep" in worker_log or "llmbench" in worker_log

    with psycopg.connect(warehouse) as con:
        counts = {t: con.execute(f"SELECT count(*) FROM llmbench.{t} WHERE run_key = 'celery-2026-09-07'").fetchone()[0]
                  for t in ("runs", "targets", "levels", "requests", "price_performance")}
        assert counts == {"runs": 1, "targets": 2, "levels": 4, "requests": 12, "price_performance": 4}
        assert con.execute("SELECT status FROM llmbench.runs").fetchone() == ("succeeded",)
        assert con.execute("SELECT min(output_tokens_per_s) FROM llmbench.levels").fetchone()[0] > 0
