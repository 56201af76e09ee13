"""The local backend against the real llama-server binary and model."""

import urllib.request

import pytest

from llmbench.backends.base import DeployError
from llmbench.backends.local import LocalBackend, group_members

from .conftest import llama_server_pids, small_target


def test_deploy_serves_and_teardown_leaves_nothing(tmp_path):
    before = llama_server_pids()
    backend = LocalBackend()
    handle = backend.deploy(small_target(parallel=1), tmp_path)
    try:
        assert handle["base_url"].startswith("http://127.0.0.1:")  # loopback only
        backend.wait_ready(handle, 120)
        with urllib.request.urlopen(handle["base_url"] + "/health", timeout=5) as r:
            assert r.status == 200
        assert group_members(handle["pgid"])
        assert llama_server_pids() - before
    finally:
        out = backend.teardown(handle)
    assert group_members(handle["pgid"]) == []
    assert llama_server_pids() == before
    assert out["endpoint_seconds"] > 0
    backend.teardown(handle)  # already gone: tolerated


def test_deploy_that_fails_removes_what_it_started(tmp_path):
    before = llama_server_pids()
    with pytest.raises(DeployError, match="exited"):
        LocalBackend().deploy(small_target(extra_args=["--no-such-flag"]), tmp_path)
    assert llama_server_pids() == before
