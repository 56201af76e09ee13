"""Issue 26 defects 6 and 12: `make run` (scripts/run_dag.sh) stops its whole run on SIGTERM,
SIGINT or the death of its parent (airflow, llama-server, load generators: nothing of the run is
left), and refuses a second run of the same date in the same data folder in one line.

The first tests use a stand-in airflow (a shell script that starts a process in a session of its
own, as the local backend starts llama-server, then waits): what is tested is the script's own
handling. The last runs the real DAG on the local config and SIGTERMs it while llama-server serves."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import ROOT, llama_server_pids
from .test_run_dag_script import _bin

pytestmark = pytest.mark.integration

STANDIN = """#!/bin/sh
echo '[DAG TEST] starting stand-in'
setsid sleep 1000 &   # a server in a session of its own (llama-server's start_new_session)
echo $! > "$LLMBENCH_HOME/server.pid"
sleep 1000 &
wait
"""


def _env(tmp_path: Path, airflow: str = STANDIN) -> dict:
    b = _bin(tmp_path)
    (b / "airflow").write_text(airflow)
    return {**os.environ, "LLMBENCH_HOME": str(tmp_path / "home"), "LLMBENCH_BIN": str(b),
            "PYTHONPATH": str(ROOT / "include") + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _with(env_key: str, value: str) -> set[int]:
    """Live processes whose environment holds env_key=value (this run's, by its data folder)."""
    want = f"{env_key}={value}".encode()
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if want in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0") and _alive(int(entry)):
                    out.add(int(entry))
            except OSError:
                continue
    return out


def _wait_for(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout_s} s: {what}")


def _server_pid(env: dict) -> int:
    p = Path(env["LLMBENCH_HOME"]) / "server.pid"
    return _wait_for(lambda: p.exists() and p.read_text().strip() and int(p.read_text()), 60, "the stand-in server")


@pytest.mark.parametrize("sig, rc", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_stops_airflow_and_a_server_in_its_own_session(tmp_path, sig, rc):
    env = _env(tmp_path)
    # A shell without job control starts `cmd &` with SIGINT ignored, and bash cannot trap a signal
    # ignored when it started (a suite launched so failed here): the script starts as from a terminal.
    run = subprocess.Popen(["scripts/run_dag.sh", "2026-08-31"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        server = _server_pid(env)
        run.send_signal(sig)
        _, err = run.communicate(timeout=20)
        assert run.returncode == rc, err
        assert f"{sig.name}: stopping the run" in err
        _wait_for(lambda: not _alive(server), 5, "the server's end")
        _wait_for(lambda: not _with("LLMBENCH_HOME", env["LLMBENCH_HOME"]), 3, "every process of the run gone")
    finally:
        run.kill()
        run.wait()


def test_the_run_stops_when_the_process_that_started_it_is_killed(tmp_path):
    """`make run` killed by a signal it does not forward, or a shell killed with -9."""
    env = _env(tmp_path)
    parent = subprocess.Popen(["sh", "-c", "scripts/run_dag.sh 2026-08-31; echo done"], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        server = _server_pid(env)
        parent.kill()
        parent.wait()
        _wait_for(lambda: not _alive(server), 20, "the server's end after its starter died")
        _wait_for(lambda: not _with("LLMBENCH_HOME", env["LLMBENCH_HOME"]), 10, "every process of the run gone")
    finally:
        parent.kill()


def test_a_second_run_of_the_same_date_is_refused_in_one_line(tmp_path):
    env = _env(tmp_path)
    first = subprocess.Popen(["scripts/run_dag.sh", "2026-08-31"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        _server_pid(env)
        second = subprocess.run(["scripts/run_dag.sh", "2026-08-31"], cwd=ROOT, env=env, capture_output=True,
                                text=True, timeout=60)
        assert second.returncode == 2 and second.stderr.count("\n") == 1, second.stderr
        assert "a run of llm_benchmark for 2026-08-31 is already going" in second.stderr
        (tmp_path / "other").mkdir()
        other = subprocess.run(["scripts/run_dag.sh", "2026-09-07"], cwd=ROOT,  # another date is not held up
                               env={**env, "LLMBENCH_BIN": str(_bin(tmp_path / "other"))}, capture_output=True,
                               text=True, timeout=60)
        assert "already going" not in other.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=30)


def test_sigterm_mid_run_stops_the_real_dag_and_its_llama_server(airflow_env):
    """The real DAG on the local config, SIGTERMed while its llama-server serves."""
    env = {k: v for k, v in airflow_env.items() if not k.startswith("MAKE")}
    env["PARAMS"] = '{"concurrency": [1, 2], "requests_per_level": 400}'  # long enough to be stopped mid-sweep
    env["PYTHONPATH"] = str(ROOT / "include") + os.pathsep + env.get("PYTHONPATH", "")
    before = llama_server_pids()
    run = subprocess.Popen(["scripts/run_dag.sh", "2026-08-24"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        mine = _wait_for(lambda: {p for p in llama_server_pids() - before
                                  if p in _with("LLMBENCH_HOME", env["LLMBENCH_HOME"])}, 600, "a llama-server of the run")
        time.sleep(3)  # into the warm-up or the sweep
        t0 = time.monotonic()
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=60)
        took = time.monotonic() - t0
        assert run.returncode == 143, err[-2000:]
        _wait_for(lambda: not (mine & llama_server_pids()), 5, "the run's llama-server gone")
        left = _with("LLMBENCH_HOME", env["LLMBENCH_HOME"])
        assert not left, [Path(f"/proc/{p}/cmdline").read_bytes()[:200] for p in left]
        assert took < 20, took
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
