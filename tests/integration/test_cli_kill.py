"""issue 18 #4, #10: a `llmbench sweep --backend local` that is killed (SIGKILL, SIGTERM) or
interrupted (SIGINT) leaves no llama-server behind; its handle.json is written at start; SIGINT
and SIGTERM end in one line, not a traceback; a sweep into the same --out reaps what a killed one
left running and refuses to overwrite its records unless --overwrite."""

import json
import os
import signal
import subprocess

import pytest

from llmbench.backends.local.backend import LocalBackend, group_members

from .conftest import BIN, small_serving
from .test_kill import wait_for

pytestmark = pytest.mark.integration


def _sweep(out, *extra):
    return subprocess.Popen(
        [str(BIN / "llmbench"), "sweep", "--backend", "local", "--parallel", "1", "--concurrency", "1",
         "--requests-per-level", "100000", "--input-tokens", "16", "--output-tokens", "4", "--warmup", "0",
         "--out", str(out), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        # A shell without job control starts `cmd &` with SIGINT ignored, and the sweep would rightly
        # keep ignoring it (a CI run launched in the background did): the sweep starts as from a terminal.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _started(proc, out) -> int:
    """The server's process group, once the sweep has sent requests."""
    jsonl = out / "requests.jsonl"
    wait_for(lambda: proc.poll() is not None or (jsonl.exists() and len(jsonl.read_text().splitlines()) >= 2), 180,
             "the sweep never recorded a request")
    assert proc.poll() is None, proc.stderr.read()
    return json.loads((out / "handle.json").read_text())["pgid"]


@pytest.mark.parametrize(
    "sig,group",
    [(signal.SIGKILL, False), (signal.SIGTERM, False), (signal.SIGINT, False), (signal.SIGINT, True)],
    ids=["SIGKILL", "SIGTERM", "SIGINT", "SIGINT-to-its-group"],
)
def test_a_killed_local_sweep_leaves_no_server(tmp_path, sig, group):
    """group: the signal goes to the sweep's whole process group, as a terminal's Ctrl-C does, so
    its record builder gets it too (it once died printing half a traceback)."""
    out = tmp_path / "out"
    proc = _sweep(out)
    pgid = None
    try:
        pgid = _started(proc, out)
        assert group_members(pgid)
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        wait_for(lambda: not group_members(pgid), 20, f"llama-server outlived its sweep ({sig.name})")
        if sig != signal.SIGKILL:
            assert proc.returncode == 128 + sig, err
            assert "Traceback" not in err and f"interrupted ({sig.name})" in err, err
            assert (out / "teardown.json").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        if pgid and group_members(pgid):
            LocalBackend().teardown(json.loads((out / "handle.json").read_text()))


def test_a_rerun_into_the_same_out_reaps_the_leftover_and_refuses_to_overwrite(tmp_path):
    out = tmp_path / "out"
    backend = LocalBackend()
    handle = backend.start_server(small_serving(), out)  # what a sweep killed before PDEATHSIG would leave
    (out / "handle.json").write_text(json.dumps(handle))
    (out / "requests.jsonl").write_text('{"request_index": 0}\n')
    try:
        assert group_members(handle["pgid"])
        r = subprocess.run([str(BIN / "llmbench"), "sweep", "--url", "http://127.0.0.1:9/v1", "--out", str(out)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and "--out:" in r.stderr and "--overwrite" in r.stderr and "Traceback" not in r.stderr
        assert not group_members(handle["pgid"])  # reaped
        assert (out / "requests.jsonl").read_text() == '{"request_index": 0}\n'  # not overwritten
        assert json.loads((out / "teardown.json").read_text())["reaped_by"] == "llmbench sweep"
    finally:
        backend.teardown(handle)
