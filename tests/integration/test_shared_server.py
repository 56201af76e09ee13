"""issue 34: the session's shared llama-server lives as long as the pytest process, not as long as
a clock allows, and a test whose shared server died fails with the server's exit status and log."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from llmbench.backends.local.backend import group_members

from .conftest import ROOT, small_serving
from .shared_server import SharedLlamaServer

# A stand-in for a pytest session: starts the shared server as conftest does, but with the
# serving's wall-clock bound forced down to 2 s, prints the handle and holds on until killed.
SESSION = """
import json, sys
from pathlib import Path
from tests.integration.conftest import small_serving
from tests.integration.shared_server import SharedLlamaServer
server = SharedLlamaServer(small_serving().model_copy(update={"max_lifetime_s": 2}), Path(sys.argv[1]))
server.wait_ready(120)
print(json.dumps(server.handle), flush=True)
sys.stdin.read()
"""


def wait_for(cond, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_the_shared_server_outlives_a_low_bound_and_dies_with_its_session(tmp_path):
    session = subprocess.Popen([sys.executable, "-c", SESSION, str(tmp_path)], cwd=ROOT, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                   [str(ROOT), str(ROOT / "include"), os.environ.get("PYTHONPATH", "")])})
    handle = None
    try:
        handle = json.loads(session.stdout.readline())
        started = time.monotonic()
        time.sleep(5)  # past the forced 2 s bound, and past the SIGTERM its `timeout` would have sent
        with urllib.request.urlopen(handle["base_url"] + "/health", timeout=5) as r:
            assert r.status == 200, "the shared server did not outlive the serving's bound"
        assert time.monotonic() - started >= 5
        session.kill()  # the session ends as abruptly as it can: kill -9
        session.wait(10)
        wait_for(lambda: not group_members(handle["pgid"]), 20, "the shared server outlived its session")
    finally:
        if session.poll() is None:
            session.kill()
            session.wait(10)
        if handle and group_members(handle["pgid"]):
            os.killpg(handle["pgid"], signal.SIGKILL)


def test_a_dead_shared_server_fails_the_next_test_with_its_exit_status_and_log(tmp_path):
    server = SharedLlamaServer(small_serving(parallel=1), tmp_path)
    try:
        server.wait_ready(120)
        server.check()  # alive: passes
        leader = server.handle["pid"]
        (llama,) = [p for p in group_members(server.handle["pgid"]) if p != leader]
        os.kill(llama, signal.SIGKILL)  # as a crash or the OOM killer would
        wait_for(lambda: server.died is not None, 20, "the watcher did not see the server die")
        with pytest.raises(pytest.fail.Exception) as failed:
            server.check()
        message = str(failed.value)
        last_log_line = server.log_path.read_text().splitlines()[-1]
        assert f"pid {leader}" in message and "killed by SIGKILL" in message, message
        assert last_log_line in message, message  # the end of the server's own log
    finally:
        server.stop()
