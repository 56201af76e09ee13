"""Integration fixtures: real llama-server processes, real Airflow, real files. Nothing faked."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llmbench.backends.local.backend import LocalBackend, group_members, model_file, server_binary
from llmbench.backends.local.models import LocalServing

from .shared_server import SharedLlamaServer

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def llama_server_pids() -> set[int]:
    """Every live llama-server process on this machine started from our cached binary."""
    binary = str(server_binary())
    pids = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if cmd and cmd[0].decode(errors="replace") == binary and state != "Z":
            pids.add(int(entry))
    return pids


def servers_left(env: dict, run_key: str) -> list[int]:
    """Processes of the llama-servers this run key's targets started (other engineers' servers on
    the same machine are not ours to count)."""
    runs = Path(env["LLMBENCH_HOME"]) / "runs" / run_key
    return [p for h in runs.glob("*/*/handle.json") for p in group_members(json.loads(h.read_text())["pgid"])]


@pytest.fixture(scope="session", autouse=True)
def _need_local_server():
    missing = [str(p) for p in (server_binary(), model_file()) if not p.exists()]
    if missing:
        pytest.fail(f"local backend not built: {missing}; run `make server`", pytrace=False)


def small_serving(parallel: int = 2, extra_args=None) -> LocalServing:
    return LocalServing(name=f"test-{parallel}slots", parallel=parallel, threads=2, ctx_per_slot=512,
                        extra_args=extra_args or [])


@pytest.fixture(scope="session")
def shared_llama_server(tmp_path_factory):
    """One llama-server for the session: it dies with pytest, not after a fixed time (shared_server.py)."""
    server = SharedLlamaServer(small_serving(), tmp_path_factory.mktemp("server"))
    try:
        server.wait_ready(120)
        yield server
    finally:
        server.stop()


@pytest.fixture
def local_server(shared_llama_server):
    """The shared server's handle, checked alive before the test and again after it: a test whose
    server died fails with the server's exit status and log, not with an error from a layer above."""
    shared_llama_server.check()
    yield shared_llama_server.handle
    shared_llama_server.check("during this test")


@pytest.fixture(scope="session")
def airflow_env(tmp_path_factory):
    """A migrated Airflow home (SQLite) and a data folder of its own, with the local pool."""
    home = tmp_path_factory.mktemp("llmbench_home")
    env = dict(os.environ)
    env.update(
        LLMBENCH_HOME=str(home),
        AIRFLOW_HOME=str(home / "airflow"),
        AIRFLOW__CORE__DAGS_FOLDER=str(ROOT / "dags"),
        AIRFLOW__CORE__PLUGINS_FOLDER=str(ROOT / "plugins"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        # The DAG's retries as configured (3), 1 s apart and doubling rather than 30 s: a target
        # that fails for good (the fault matrices) then fails in seconds, not minutes.
        LLMBENCH_RETRY_DELAY_S="1",
    )
    # The Makefile's own step (migrate, pools), which marks the home migrated: the `make run`s of
    # the suite then skip their 15-30 s re-migration.
    r = subprocess.run(["make", "--no-print-directory", "airflow-db"], cwd=ROOT, capture_output=True, text=True,
                       env={k: v for k, v in env.items() if not k.startswith("MAKE")})
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert (home / "airflow" / "airflow.db").exists()
    return env


def dags_test(env: dict, date: str, conf: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "airflow"), "dags", "test", "llm_benchmark", date, "-c", json.dumps(conf)],
        env=env, capture_output=True, text=True, timeout=1200,
    )
