"""The local backend against the real llama-server binary and model."""

import urllib.request
from pathlib import Path

import pytest

from llmbench.backends.base import DeployError
from llmbench.paths import cache_home
from llmbench.backends.local.backend import LocalBackend, group_members, model_file

from .conftest import llama_server_pids, small_serving


def test_deploy_serves_and_teardown_leaves_nothing(tmp_path):
    before = llama_server_pids()
    backend = LocalBackend()
    handle = backend.start_server(small_serving(parallel=1), tmp_path)
    try:
        assert handle["base_url"].startswith("http://127.0.0.1:")  # loopback only
        backend.wait_ready(handle, 120)
        with urllib.request.urlopen(handle["base_url"] + "/health", timeout=5) as r:
            assert r.status == 200
        said = backend.engine_version(handle)  # llama-server's /props build_info, e.g. b6780-1234abcd
        assert said.version and said.version.startswith("b") and said.source.endswith("/props build_info")
        # targets.container_image: the keyed build `make server` made, the folder the running binary is in
        build = handle["container_image"].removeprefix("llama-server:")
        ran = Path(handle["command"][handle["command"].index("--model") - 1]).resolve()
        assert handle["container_image"].startswith("llama-server:") and ran.parent == cache_home() / "llama-server" / build
        endpoint = backend.endpoint(handle)
        assert endpoint.metrics_url is None and "no speculative-decoding" in endpoint.metrics_note
        assert group_members(handle["pgid"])
        assert llama_server_pids() - before
    finally:
        out = backend.teardown(handle)
    assert group_members(handle["pgid"]) == []
    assert llama_server_pids() == before
    assert out.endpoint_seconds > 0
    backend.teardown(handle)  # already gone: tolerated


def test_deploy_that_fails_removes_what_it_started(tmp_path):
    before = llama_server_pids()
    with pytest.raises(DeployError, match="exited"):
        LocalBackend().start_server(small_serving(extra_args=["--no-such-flag"]), tmp_path)
    assert llama_server_pids() == before


def test_a_binary_not_checked_on_this_cpu_is_refused_at_deploy(tmp_path, monkeypatch):
    """A cache copied from another machine: the build is there, its smoke-check mark is not."""
    from llmbench.backends.local.backend import server_binary

    keydir = tmp_path / "cache" / "llama-server" / "some-key"
    keydir.mkdir(parents=True)
    (keydir / "llama-server").symlink_to(server_binary().resolve())
    (tmp_path / "cache" / "bin").mkdir()
    (tmp_path / "cache" / "bin" / "llama-server").symlink_to(keydir / "llama-server")
    monkeypatch.setenv("LLMBENCH_LOCAL_MODEL", str(model_file()))
    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("LLMBENCH_LLAMA_SERVER", raising=False)
    before = llama_server_pids()
    with pytest.raises(DeployError, match="has not passed its smoke check on this CPU"):
        LocalBackend().start_server(small_serving(parallel=1), tmp_path / "run")
    assert llama_server_pids() == before
    (keydir / "verified-elsewhere").write_text("another CPU\n")  # a mark for another CPU is not enough
    with pytest.raises(DeployError, match="smoke check"):
        LocalBackend().start_server(small_serving(parallel=1), tmp_path / "run")
    assert llama_server_pids() == before


def test_a_local_row_records_the_llama_server_build_that_served_it(tmp_path, monkeypatch):
    """targets.container_image of a local target: the build the deploy started (NULL before)."""
    import yaml

    from llmbench import pipeline, warehouse
    from llmbench.paths import CONFIG_DIR
    from llmbench.planning.plan import plan

    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path))
    cfg = yaml.safe_load((CONFIG_DIR / "local.yaml").read_text())
    cfg.update(targets=cfg["targets"][:1], quality=None,
               workload={"input_tokens": 16, "output_tokens": 4, "concurrency": [1], "requests_per_level": 2,
                         "warmup_requests": 1, "request_timeout_s": 60, "seed": 1})
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({k: v for k, v in cfg.items() if v is not None}))
    (target,) = plan(str(tmp_path / "c.yaml"), "2026-12-05", runs_root=tmp_path / "runs").targets
    handle = pipeline.deploy(target)
    try:
        pipeline.wait_ready(target, handle)
        pipeline.warm_up(target, handle)
        pipeline.validate(target, pipeline.sweep(target, handle))
    finally:
        pipeline.teardown(target, handle)
    run_dir = pipeline.run_dir_of([target])
    pipeline.price_performance(run_dir)
    db = pipeline.publish(run_dir)["warehouse"]
    (image,) = warehouse.query("SELECT container_image FROM llmbench.targets", target=db)["container_image"]
    assert image == handle["container_image"] and image.startswith("llama-server:llama.cpp-")
