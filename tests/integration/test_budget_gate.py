"""Issue 43 item 4: a run whose estimate is above its budget waits for a person's approval (the
standard provider's ApprovalOperator) before anything is deployed. Answered here as a user would,
through the REST API of an api-server sharing the run's metadata database (`airflow dags test`
keeps a run alive while a Human-in-the-loop task awaits input): a rejection fails the run in one
line with nothing deployed and nothing published; an approval lets it measure and publish."""

import json
import os
import secrets
import signal
import subprocess
import time
from pathlib import Path

import duckdb
import pytest

from llmbench.backends.local.backend import free_port

from .conftest import BIN, llama_server_pids
from .test_distributed import api
from .test_fault_matrix import task_states

CONF = {"config": "local", "targets": ["smollm2-q4_1-1slot"], "concurrency": [1], "requests_per_level": 2,
        "budget_usd": 0.0001}  # plan estimates this run at $0.00033 (0.0034 h of local-cpu-2c at $0.096/h)


class ApiServer:
    """`airflow api-server` on the test's Airflow home (its SQLite metadata), simple auth."""

    def __init__(self, env: dict, logs: Path):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        passwords = logs / "passwords.json"
        passwords.write_text(json.dumps({"admin": "llmbench-admin"}))
        self.env = {**env,
                    "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
                    "AIRFLOW__API__PORT": str(self.port),
                    "AIRFLOW__CORE__AUTH_MANAGER":
                        "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
                    "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
                    "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords)}
        self.log = logs / "api-server.log"
        self.proc = subprocess.Popen([str(BIN / "airflow"), "api-server", "--port", str(self.port)], env=self.env,
                                     stdout=self.log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 180
        while True:
            assert self.proc.poll() is None, "api-server exited: " + self.log.read_text()[-2000:]
            try:
                api(self.base, "GET", "/api/v2/version")
                break
            except OSError:
                assert time.monotonic() < deadline, "api-server not up: " + self.log.read_text()[-2000:]
                time.sleep(1)
        self.token = api(self.base, "POST", "/auth/token", body={"username": "admin", "password": "llmbench-admin"})[
            "access_token"]

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


def _answer(server: ApiServer, run: subprocess.Popen, option: str) -> dict:
    """Wait for the run's approval request, read it as a user would, answer it."""
    deadline = time.monotonic() + 300
    while True:
        assert run.poll() is None, "the run ended without asking: " + run.log.read_text()[-3000:]
        pending = [d for d in api(server.base, "GET", "/api/v2/dags/llm_benchmark/dagRuns/~/hitlDetails",
                                  server.token)["hitl_details"] if not d["response_received"]]
        if pending:
            break
        assert time.monotonic() < deadline, "no approval was asked for"
        time.sleep(1)
    (asked,) = pending
    ti = asked["task_instance"]
    assert ti["task_id"] == "approve_budget" and asked["options"] == ["Approve", "Reject"]
    api(server.base, "PATCH", f"/api/v2/dags/llm_benchmark/dagRuns/{ti['dag_run_id']}/taskInstances/approve_budget/-1"
        "/hitlDetails", server.token, {"chosen_options": [option]})
    return asked


def _dags_test(env: dict, date: str, log: Path) -> subprocess.Popen:
    """The run in the background, its output to a file (a pipe nobody reads would stall it)."""
    run = subprocess.Popen([str(BIN / "airflow"), "dags", "test", "llm_benchmark", date, "-c", json.dumps(CONF)],
                           env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    run.log = log  # type: ignore[attr-defined]
    return run


def _finish(run: subprocess.Popen, timeout_s: float) -> str:
    try:
        run.wait(timeout_s)
    finally:
        if run.poll() is None:
            run.kill()
    return run.log.read_text(errors="replace")  # type: ignore[attr-defined]


def _runs(env: dict, run_key: str) -> list:
    path = Path(env["LLMBENCH_HOME"]) / "warehouse.duckdb"
    if not path.exists():
        return []
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute("SELECT status FROM llmbench.runs WHERE run_key = ?", [run_key]).fetchall()
    finally:
        con.close()


@pytest.mark.timeout(1500)
def test_a_run_over_its_budget_waits_for_an_approval_through_the_rest_api(airflow_env, tmp_path):
    before = llama_server_pids()
    server = ApiServer(airflow_env, tmp_path)
    try:
        # Rejected: the run fails in one line; nothing deployed, nothing published.
        run = _dags_test(airflow_env, "2026-09-14", tmp_path / "rejected.log")
        asked = _answer(server, run, "Reject")
        assert asked["subject"].startswith("llmbench local-2026-09-14: $0.00033 estimated, budget $0.0001")
        assert "| local-cpu-2c / smollm2-135m-instruct / llama-server-1slot |" in asked["body"]
        out = _finish(run, 300)
        assert run.returncode != 0
        assert ("BudgetNotApproved: local-2026-09-14: estimated $0.00033 is above the budget of $0.0001 and was not "
                "approved (rejected by admin); nothing was deployed") in out, out[-3000:]
        state, tis = task_states(airflow_env, "2026-09-14", keep_group=True)
        assert state == "failed" and tis[("approve_budget", -1)] == "failed"
        assert tis[("local_targets", -1)] == "upstream_failed"  # nothing after the gate deployed
        assert {tis[(t, -1)] for t in ("price_performance", "publish", "check")} == {"skipped"}
        assert not any((Path(airflow_env["LLMBENCH_HOME"]) / "runs" / "local-2026-09-14").glob("*/*/handle.json"))
        assert _runs(airflow_env, "local-2026-09-14") == []

        # Approved: it measures and publishes as any run.
        run = _dags_test(airflow_env, "2026-09-21", tmp_path / "approved.log")
        _answer(server, run, "Approve")
        out = _finish(run, 900)
        assert run.returncode == 0, out[-3000:]
        state, tis = task_states(airflow_env, "2026-09-21", keep_group=True)
        assert state == "success" and tis[("approve_budget", -1)] == "success"
        assert tis[("within_budget", -1)] == "skipped"
        assert _runs(airflow_env, "local-2026-09-21") == [("succeeded",)]
    finally:
        server.stop()
    assert llama_server_pids() == before
