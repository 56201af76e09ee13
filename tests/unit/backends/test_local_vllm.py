"""The local vLLM's command line and environment: loopback, eager, the served name llama-server
answers to as well, prefix caching said either way, caches and temporary files in the cache."""

from pathlib import Path

from llmbench.backends.local import vllm
from llmbench.schemas.targets import VllmServing


def value(argv, flag):
    return argv[argv.index(flag) + 1]


def test_the_command_is_loopback_eager_and_guarded(monkeypatch, tmp_path):
    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path))
    s = VllmServing(name="v", max_model_len=2048, max_num_seqs=8, speculative_config={"method": "ngram"})
    cmd = vllm.command(s, 4321)
    assert cmd[:4] == ["timeout", "--signal=TERM", "--kill-after=10", str(vllm.MAX_LIFETIME_S)]
    assert cmd[4] == str(tmp_path / "vllm" / "venv" / "bin" / "python")
    assert cmd[5:7] == ["-m", "vllm.entrypoints.openai.api_server"]
    assert value(cmd, "--host") == "127.0.0.1" and value(cmd, "--port") == "4321" and "--enforce-eager" in cmd
    assert value(cmd, "--model") == str(tmp_path / "vllm" / "model") and value(cmd, "--served-model-name") == "default"
    assert value(cmd, "--dtype") == "bfloat16" and value(cmd, "--max-num-seqs") == "8"
    assert "--no-enable-prefix-caching" in cmd and value(cmd, "--speculative-config") == '{"method":"ngram"}'
    on = vllm.serve_args(s.model_copy(update={"enable_prefix_caching": True}), Path("/m"), 1)
    assert "--enable-prefix-caching" in on and "--no-enable-prefix-caching" not in on


def test_the_environment_keeps_caches_in_the_cache_and_the_hub_offline(monkeypatch, tmp_path):
    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path))
    env = vllm.environment({"PYTHONPATH": "/x/include", "HOME": "/root"}, VllmServing(name="v", extra_env={"A": "1"}))
    for key in ("VLLM_CACHE_ROOT", "HF_HOME", "TMPDIR"):
        assert Path(env[key]).parent == tmp_path / "vllm" and Path(env[key]).is_dir()
    assert env["HF_HUB_OFFLINE"] == "1" and env["VLLM_CPU_KVCACHE_SPACE"] == "2" and env["A"] == "1"
    assert "PYTHONPATH" not in env and env["HOME"] == "/root"
    assert vllm.missing() == f"no vLLM venv at {tmp_path / 'vllm' / 'venv'}; run `make vllm` (scripts/get_vllm.sh)"
