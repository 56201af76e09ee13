"""Issue 42: a local target's server reachable from another worker. With LLMBENCH_LOCAL_BIND set
(here 'auto': the address of this host's default route), llama-server listens on that address with a per-deploy
API key kept in handle.json, never in XCom; a request without the key is refused; the sweep
drives it with the key; and a teardown from another host stops it through its keeper over HTTP
(the handle names the host it runs on: here it is rewritten to another host's name, so the
teardown cannot use a process id), while a wrong key stops nothing."""

import json
import urllib.error
import urllib.request

import pytest

from llmbench import pipeline
from llmbench.backends.local.backend import bind_address, group_members
from llmbench.planning.plan import plan

from .conftest import llama_server_pids


def _post(url: str, headers: dict, body: bytes = b"{}") -> int:
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json",
                                                                         **headers})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def _gone_within(pgid: int, seconds: float) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while group_members(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_a_local_server_for_other_hosts_has_a_key_and_stops_from_anywhere(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LLMBENCH_LOCAL_BIND", "auto")
    before = llama_server_pids()
    run = plan("local", "2026-08-16", {"targets": ["smollm2-q4_1-1slot"], "concurrency": [1],
                                       "requests_per_level": 2})
    (t,) = run.targets
    handle = pipeline.deploy(t)
    try:
        stored = json.loads((t.dir / "handle.json").read_text())
        assert "api_key" not in handle and len(stored["api_key"]) >= 24  # XCom carries no key
        address = bind_address()
        assert not address.startswith("127.")
        assert handle["base_url"].startswith(f"http://{address}:") and handle["keeper_url"].startswith(
            f"http://{address}:")
        pipeline.wait_ready(t, handle)
        chat = json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}).encode()
        assert _post(handle["base_url"] + "/v1/chat/completions", {}, chat) == 401  # no key: refused
        pipeline.warm_up(t, handle)
        swept = pipeline.sweep(t, handle)
        assert pipeline.validate(t, swept)["validation_passed"]
        assert _post(handle["keeper_url"] + "/stop", {"Authorization": "Bearer wrong"}) == 403
        assert group_members(handle["pgid"])  # a wrong key stopped nothing
        # the teardown as another host runs it: by the keeper, not by a process id
        (t.dir / "handle.json").write_text(json.dumps({**stored, "host": "another-worker"}))
        outcome = pipeline.teardown(t, {**handle, "host": "another-worker"})
        assert outcome["endpoint_seconds"] > 0
        assert not group_members(handle["pgid"]) or _gone_within(handle["pgid"], 10)  # the keeper exits too
    finally:
        if group_members(handle["pgid"]):
            import os
            import signal

            os.killpg(handle["pgid"], signal.SIGKILL)
            pytest.fail("the server outlived its teardown")
    assert llama_server_pids() == before
