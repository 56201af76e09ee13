"""Airflow as production runs it, on this machine: api-server, scheduler, dag-processor, triggerer
and a Celery worker (CeleryExecutor), metadata on the local PostgreSQL, broker on the local Redis. The test
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

from llmbench.backends.local.backend import free_port

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


def failure_report(states: dict, logs: Path, stack: Stack) -> str:
    """The failed tasks first, each with the end of its own log: a CI summary keeps only the
    beginning of an assertion message."""
    failed = sorted(f"{t}[{i}]: {s}" for (t, i), s in states.items() if s not in ("success", "skipped"))
    parts = [f"not successful: {failed}"]
    for (task_id, _), state in sorted(states.items()):
        if state in ("success", "skipped"):
            continue
        for f in sorted(logs.glob(f"dag_id=llm_benchmark/run_id=*/task_id={task_id}/**/*.log")):
            parts.append(f"--- {f.relative_to(logs)}: " + f.read_text(errors="replace")[-2500:])
    parts.append(stack.tail("worker", "scheduler"))
    return "\n".join(parts)


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


class Deployment:
    """The stack's environment (its own Airflow home, metadata database, Redis database, warehouse
    database and data folder) and the config a test runs, before any service starts."""

    def __init__(self, databases: dict, tmp_path: Path, name: str, **extra_env: str):
        redis.Redis(host="127.0.0.1", port=6379, db=REDIS_DB).flushdb()
        self.home = tmp_path / "home"
        (self.home / "airflow").mkdir(parents=True)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.metadata = f"postgresql+psycopg://postgres@127.0.0.1:5432/{databases['airflow']}"
        self.warehouse = f"postgresql://postgres@127.0.0.1:5432/{databases['warehouse']}"
        passwords = self.home / "passwords.json"
        passwords.write_text(json.dumps({"admin": "llmbench-admin"}))
        env = {
            **os.environ,
            "LLMBENCH_HOME": str(self.home),
            "LLMBENCH_SCHEDULE": "none",  # only the runs the test asks for
            # Celery workers on this one host: they all see this data folder (the two-host case,
            # results in an object store, is make compose-test's)
            "LLMBENCH_SHARED_DISK": "1",
            "AIRFLOW_HOME": str(self.home / "airflow"),
            "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": self.metadata,
            "AIRFLOW__CELERY__BROKER_URL": f"redis://127.0.0.1:6379/{REDIS_DB}",
            "AIRFLOW__CELERY__RESULT_BACKEND": "db+" + self.metadata,
            "AIRFLOW__CELERY__WORKER_CONCURRENCY": "2",
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
            "AIRFLOW__CORE__FERNET_KEY": "",
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{self.port}/execution/",
            "AIRFLOW__CORE__AUTH_MANAGER":
                "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "10",
            "AIRFLOW_CONN_LLMBENCH_WAREHOUSE": self.warehouse.replace("postgresql://", "postgres://"),
            **extra_env,
        }
        cfg = yaml.safe_load((ROOT / "include/llmbench/config/local.yaml").read_text())
        cfg["name"] = name
        cfg["warehouse"] = {"kind": "postgres", "conn_id": "llmbench_warehouse"}
        self.cfg, self.config_path = cfg, tmp_path / f"{name}.yaml"
        self.write_config()
        self.stack = Stack(env, tmp_path)

    def write_config(self) -> None:
        self.config_path.write_text(yaml.safe_dump(self.cfg))

    def up(self) -> str:
        """Migrate, import the pools, start every service, wait for the DAG, unpause it: a token."""
        stack = self.stack
        stack.airflow("db", "migrate")
        stack.airflow("pools", "import", str(ROOT / "deploy" / "pools.json"))
        stack.start("api-server", "api-server", "--port", str(self.port))
        stack.start("scheduler", "scheduler")
        stack.start("dag-processor", "dag-processor")
        # waits defer to it (issue 45): the second local target's deploy waits there for the first's server
        stack.start("triggerer", "triggerer")
        stack.start("worker", "celery", "worker", "--concurrency", "2")
        wait_for("api-server", lambda: api(self.base, "GET", "/api/v2/version"), 180, stack)
        token = api(self.base, "POST", "/auth/token", body={"username": "admin", "password": "llmbench-admin"})[
            "access_token"]
        wait_for("llm_benchmark parsed", lambda: api(self.base, "GET", "/api/v2/dags/llm_benchmark", token), 240, stack)
        api(self.base, "PATCH", "/api/v2/dags/llm_benchmark", token, {"is_paused": False})
        return token


def test_celery_deployment_runs_the_benchmark_triggered_through_the_rest_api(databases, tmp_path):
    d = Deployment(databases, tmp_path, "celery")
    # No quality stage, as in the backfill test: graded in test_dag_run and test_dag_quality, here it
    # would add minutes of generation per target and prove nothing more about Celery (issue 34).
    d.cfg.pop("quality")
    d.write_config()
    home, base, metadata, warehouse, config_path = d.home, d.base, d.metadata, d.warehouse, d.config_path
    stack = d.stack
    before = servers_of(home)
    try:
        token = d.up()
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
        assert done["state"] == "success", failure_report(states, home / "airflow" / "logs", stack)
        print(f"\ndistributed run (CeleryExecutor, 1 worker x 2 slots): {wall_s:.0f}s from trigger to success")
        (home / "distributed_wall_s.txt").write_text(f"{wall_s:.1f}\n")
    finally:
        stack.stop()
    assert all(p.poll() is not None for p in stack.procs.values())
    assert servers_of(home) == before == set()

    # Every task ran through Celery: one result per task instance in the result backend, and the
    # worker's log shows the benchmark's own tasks.
    # (an EmptyOperator, the budget gate's within_budget, is marked done by the scheduler: no worker runs it)
    ran = [t for t in tis if t["state"] == "success" and t["operator"] != "EmptyOperator"]
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


def _target_rows(warehouse: str, run_key: str, target_id: str) -> dict:
    """Every published row of one target, every column (as printed: NaN equals itself) but those
    comparing it with the run key's other targets (test_dag_run.UNION_COLUMNS: recomputed over the
    union when another target is measured)."""
    from tests.integration.test_dag_run import UNION_COLUMNS

    order = {"levels": "concurrency", "price_performance": "concurrency", "requests": "concurrency, request_index",
             "targets": "target_id"}
    out = {}
    with psycopg.connect(warehouse) as con:
        for t, o in order.items():
            cur = con.execute(f"SELECT * FROM llmbench.{t} WHERE run_key = %s AND target_id = %s ORDER BY {o}",
                              (run_key, target_id))
            keep = [i for i, d in enumerate(cur.description) if d.name not in UNION_COLUMNS.get(t, ())]
            out[t] = [tuple(str(r[i]) for i in keep) for r in cur.fetchall()]
    return out


BACKFILL_DATES = ("2026-09-06", "2026-09-13", "2026-09-20")  # three Sundays: @weekly's logical dates


def servers_of(home: Path) -> set[int]:
    """The live llama-servers this deployment started: those whose environment names its data
    folder (a test elsewhere on the machine may run servers of its own meanwhile)."""
    mine = f"LLMBENCH_HOME={home}".encode()
    found = set()
    for pid in llama_server_pids():
        try:
            if mine in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                found.add(pid)
        except OSError:
            pass
    return found


def _backfill(d: Deployment, token: str, conf: dict, behavior: str, on_progress=None,
              dates: tuple[str, str] = (BACKFILL_DATES[0], BACKFILL_DATES[-1])) -> tuple[dict, float]:
    """`airflow backfill create` over `dates` (default: BACKFILL_DATES), one run at a time, and
    wait until the scheduler marks it complete: (its DAG runs by logical date, wall seconds).
    on_progress(runs) is called on every look while it runs."""
    t0 = time.monotonic()
    d.stack.airflow("backfill", "create", "--dag-id", "llm_benchmark", "--from-date", dates[0],
                    "--to-date", dates[1], "--max-active-runs", "1", "--reprocess-behavior", behavior,
                    "--dag-run-conf", json.dumps(conf))
    backfill_id = max(b["id"] for b in api(d.base, "GET", "/api/v2/backfills?dag_id=llm_benchmark", token)["backfills"])

    def runs() -> dict:
        found = api(d.base, "GET", "/api/v2/dags/llm_benchmark/dagRuns?limit=100", token)["dag_runs"]
        return {r["logical_date"][:10]: r for r in found if r["logical_date"]}

    def complete():
        if on_progress is not None:
            on_progress(runs())
        return api(d.base, "GET", f"/api/v2/backfills/{backfill_id}", token)["completed_at"]

    wait_for(f"backfill {backfill_id} ({behavior}) to complete", complete, 1800, d.stack, every_s=2)
    return runs(), time.monotonic() - t0


def _row_sets(warehouse: str) -> dict:
    with psycopg.connect(warehouse) as con:
        return {t: dict(con.execute(f"SELECT run_key, count(*) FROM llmbench.{t} GROUP BY run_key").fetchall())
                for t in ("runs", "targets", "levels", "requests", "price_performance")}


def test_backfill_three_weeks_rerun_interrupted_resumed_and_reprocessed(databases, tmp_path):
    """issue 19: `airflow backfill create` on the distributed stack: three weekly dates publish
    three run keys; the same backfill again (--reprocess-behavior completed), its worker killed
    part-way and the backfill resumed (--reprocess-behavior failed), leaves exactly three row sets
    and no server; a backfill with mode=reprocess recomputes the three weeks deploying nothing."""
    # @weekly, first scheduled run in 2099: unpausing the DAG schedules nothing, the backfill runs.
    # A killed worker's task is declared lost after 30 s without a heartbeat (default 5 minutes).
    # No retries: a validate lost with its worker would otherwise run again on the new worker and
    # the week succeed (issue 45: every task safe to run again retries), and this test is about a
    # backfill resuming the week that failed.
    d = Deployment(databases, tmp_path, "backfill", LLMBENCH_SCHEDULE="@weekly", LLMBENCH_START_DATE="2099-01-04",
                   AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT="30", LLMBENCH_RETRIES="0")
    d.cfg["targets"] = d.cfg["targets"][:1]
    d.cfg.pop("quality")
    d.cfg["workload"].update(warmup_requests=1)
    d.write_config()
    conf = {"config": str(d.config_path), "concurrency": [1], "requests_per_level": 4}
    keys = {f"backfill-{day}" for day in BACKFILL_DATES}
    logs = d.home / "airflow" / "logs"
    walls = {}
    try:
        token = d.up()
        runs, walls["backfill"] = _backfill(d, token, conf, "none")
        assert {day: r["state"] for day, r in runs.items()} == dict.fromkeys(BACKFILL_DATES, "success"), runs
        assert all(r["run_type"] == "backfill" for r in runs.values())
        first = _row_sets(d.warehouse)
        assert set(first["runs"]) == keys
        assert first["targets"] == dict.fromkeys(keys, 1) and first["requests"] == dict.fromkeys(keys, 4)

        # The same backfill again; its worker is killed (SIGKILL, the whole process group) while the
        # second week's validate task runs (its server up), and a new worker starts.
        killed: dict = {}

        def kill_mid_second_week(now: dict) -> None:
            second = now.get(BACKFILL_DATES[1], {})
            if killed or second.get("state") != "running":
                return
            tis = api(d.base, "GET", f"/api/v2/dags/llm_benchmark/dagRuns/{second['dag_run_id']}/taskInstances"
                      "?limit=100", token)["task_instances"]
            if not any(t["task_id"] == "local.validate" and t["state"] == "running" for t in tis):
                return
            if not servers_of(d.home):
                return
            worker = d.stack.procs.pop("worker")
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(30)
            killed["servers"] = servers_of(d.home)
            d.stack.start("worker-2", "celery", "worker", "--concurrency", "2")

        runs, walls["rerun"] = _backfill(d, token, conf, "completed", kill_mid_second_week)
        assert killed, "the worker was never killed: the second week's server was not seen up"
        states = {day: r["state"] for day, r in runs.items()}
        # the killed task was declared lost (no heartbeat for 30 s): its run failed, the others ran
        assert states == {BACKFILL_DATES[0]: "success", BACKFILL_DATES[1]: "failed", BACKFILL_DATES[2]: "success"}
        runs, walls["resume"] = _backfill(d, token, conf, "failed")  # only the failed week runs again
        assert {day: r["state"] for day, r in runs.items()} == dict.fromkeys(BACKFILL_DATES, "success"), (
            runs, failure_report({("?", -1): "see logs"}, logs, d.stack))
        assert servers_of(d.home) == set()  # the killed run's server was torn down
        again = _row_sets(d.warehouse)
        assert again == first  # exactly three row sets: re-runs replaced, never added

        # Issue 43: a backfill of one date for one target replaces only that target's rows. The
        # config gains a second target, and the first date is backfilled for it alone: the first
        # target's rows are kept exactly as published, the new one's added beside them.
        key = f"backfill-{BACKFILL_DATES[0]}"
        first_id = d.cfg["targets"][0]["id"]
        kept = _target_rows(d.warehouse, key, first_id)
        second = {**d.cfg["targets"][0], "id": "second-target"}
        d.cfg["targets"].append(second)
        d.write_config()
        runs, walls["partial"] = _backfill(d, token, {**conf, "targets": ["second-target"]}, "completed",
                                           dates=(BACKFILL_DATES[0], BACKFILL_DATES[0]))
        assert runs[BACKFILL_DATES[0]]["state"] == "success", runs
        assert _target_rows(d.warehouse, key, first_id) == kept
        with psycopg.connect(d.warehouse) as con:
            assert con.execute("SELECT target_id, count(*) FROM llmbench.levels WHERE run_key = %s GROUP BY 1 "
                               "ORDER BY 1", (key,)).fetchall() == [("second-target", 1), (first_id, 1)]
            (replaced,), = con.execute("SELECT targets_replaced FROM llmbench.runs WHERE run_key = %s",
                                       (key,)).fetchall()
            assert json.loads(replaced) == ["second-target"]
        assert servers_of(d.home) == set()
        partial = _row_sets(d.warehouse)
        with psycopg.connect(d.warehouse) as con:
            measured = con.execute("SELECT run_key, run_dir, status, computation FROM llmbench.runs ORDER BY 1").fetchall()
            requests_before = con.execute("SELECT * FROM llmbench.requests ORDER BY run_key, target_id, concurrency, request_index").fetchall()
        assert [(s, c) for _, _, s, c in measured] == [("succeeded", "measure")] * 3

        # Reprocess the three weeks from their raw results: nothing deployed, the same attempts republished.
        runs, walls["reprocess"] = _backfill(d, token, {**conf, "mode": "reprocess"}, "completed")
        assert {day: r["state"] for day, r in runs.items()} == dict.fromkeys(BACKFILL_DATES, "success"), runs
        assert servers_of(d.home) == set()
        for day in BACKFILL_DATES:
            run_id = runs[day]["dag_run_id"]
            tis = api(d.base, "GET", f"/api/v2/dags/llm_benchmark/dagRuns/{run_id}/taskInstances?limit=100",
                      token)["task_instances"]
            # a per-target group expanded over no target: nothing in it ran (skipped, or the measured
            # run's map indices marked removed when the cleared run expanded again)
            ran = {t["task_id"]: t["state"] for t in tis if t["task_id"].startswith("local.")
                   and t["state"] in ("success", "failed", "running", "queued")}
            assert not ran, ran

    finally:
        d.stack.stop()
    assert servers_of(d.home) == set()
    with psycopg.connect(d.warehouse) as con:
        reprocessed = con.execute("SELECT run_key, run_dir, status, computation FROM llmbench.runs ORDER BY 1").fetchall()
        assert con.execute("SELECT * FROM llmbench.requests ORDER BY run_key, target_id, concurrency, request_index").fetchall() == requests_before
    assert [(k, r) for k, r, _, _ in reprocessed] == [(k, r) for k, r, _, _ in measured]
    assert [(s, c) for _, _, s, c in reprocessed] == [("succeeded", "reprocess")] * 3
    assert _row_sets(d.warehouse) == partial  # the first date's two targets reprocessed, kept
    summary = ", ".join(f"{k} {v:.0f}s" for k, v in walls.items())
    print(f"\nbackfill of three weekly dates on the Celery stack: {summary}; killed worker saw {killed['servers']}")
    (tmp_path / "backfill_wall_s.json").write_text(json.dumps(walls))
