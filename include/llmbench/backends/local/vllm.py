"""vLLM on this machine's CPU, the local backend's second engine: where `make vllm`
(scripts/get_vllm.sh) put its venv and converted model, and the command line and environment that
start its OpenAI server on loopback. The process handling (a group led by coreutils `timeout`,
stopped as a group, reaped after a crash) is the local backend's, shared with llama-server."""

from __future__ import annotations

import json
from pathlib import Path

from llmbench import paths
from llmbench.schemas.targets import VllmServing

# vLLM flags the local backend sets itself; `extra_args` may not repeat them.
VLLM_OWNED_FLAGS = frozenset(
    {"--host", "--port", "--model", "--served-model-name", "--enforce-eager", "--max-model-len", "--max-num-seqs"}
)
SERVED_MODEL_NAME = "default"  # the name llama-server answers to as well: one Endpoint.model for both
# A server outliving this is killed by its own `timeout` guard (VllmServing has no lifetime field:
# the cloud backends' servers end with their instance or endpoint).
MAX_LIFETIME_S = 7200
KV_CACHE_GIB = 2  # VLLM_CPU_KVCACHE_SPACE: ~5 GB RSS in all with SmolLM2-135M


def vllm_home() -> Path:
    return paths.cache_home() / "vllm"


def vllm_python() -> Path:
    return vllm_home() / "venv" / "bin" / "python"


def vllm_model() -> Path:
    return vllm_home() / "model"


def missing() -> str | None:
    """Why the local vLLM cannot start (one line naming what is absent), or None when it can."""
    if not (vllm_home() / "venv" / ".recipe").exists():
        return f"no vLLM venv at {vllm_home() / 'venv'}; run `make vllm` (scripts/get_vllm.sh)"
    if not (vllm_model() / ".source-sha256").exists():
        return f"no converted model at {vllm_model()}; run `make vllm` (scripts/get_vllm.sh)"
    return None


def serve_args(s: VllmServing, model: Path, port: int) -> list[str]:
    """The api_server's flags for these knobs on loopback. Eager mode: a compiled start takes 3-4
    minutes on two cores, every time (its compile cache is not reused). Prefix caching is said
    explicitly either way, since vLLM's default (on) is not VllmServing's (off)."""
    argv = ["--model", str(model), "--served-model-name", SERVED_MODEL_NAME, "--host", "127.0.0.1"]
    argv += ["--port", str(port), "--enforce-eager", "--dtype", "bfloat16" if s.dtype == "auto" else s.dtype]
    argv += ["--max-model-len", str(s.max_model_len), "--max-num-seqs", str(s.max_num_seqs)]
    argv.append("--enable-prefix-caching" if s.enable_prefix_caching else "--no-enable-prefix-caching")
    if s.enable_chunked_prefill:
        argv.append("--enable-chunked-prefill")
    if s.speculative_config:
        argv += ["--speculative-config", json.dumps(s.speculative_config, separators=(",", ":"))]
    return argv + list(s.extra_args)


def command(s: VllmServing, port: int) -> list[str]:
    """`timeout` leading the server: it dies after MAX_LIFETIME_S even if no teardown ever runs."""
    head = ["timeout", "--signal=TERM", "--kill-after=10", str(MAX_LIFETIME_S)]
    return [*head, str(vllm_python()), "-m", "vllm.entrypoints.openai.api_server", *serve_args(s, vllm_model(), port)]


def environment(base: dict[str, str], s: VllmServing) -> dict[str, str]:
    """The server's environment: caches and temporary files inside the cache folder (not the home
    directory or /tmp), no hub, no usage reports, the CPU KV cache size."""
    home = vllm_home()
    for d in ("cache", "tmp", "hf"):
        (home / d).mkdir(parents=True, exist_ok=True)
    env = dict(base)
    env.update(
        {
            "VLLM_CPU_KVCACHE_SPACE": str(KV_CACHE_GIB),
            "VLLM_CACHE_ROOT": str(home / "cache"),
            "HF_HOME": str(home / "hf"),
            "TMPDIR": str(home / "tmp"),
            "HF_HUB_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
        }
    )
    env.pop("PYTHONPATH", None)  # our include/ must not shadow the vLLM venv's packages
    env.update(s.extra_env)
    return env
