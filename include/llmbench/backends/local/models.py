"""The local backend's models: llama-server's knobs (LocalServing) and its resolved target."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictInt, field_validator

from llmbench.backends.registry import BackendTargetBase, ServingBase

# llama-server flags the local backend sets itself (the binding stays on loopback; the slots,
# context and threads are LocalServing's fields); `extra_args` may not repeat them.
LLAMA_SERVER_OWNED_FLAGS = frozenset(
    {
        "--host",
        "--port",
        "--path",
        "--reuse-port",
        "-m",
        "--model",
        "-mu",
        "--model-url",
        "-hf",
        "-hfr",
        "--hf-repo",
        "-np",
        "--parallel",
        "-c",
        "--ctx-size",
        "-t",
        "--threads",
        "--no-webui",
        "--webui",
    }
)


class LocalServing(ServingBase):
    """llama-server knobs. ctx_per_slot is each slot's share of the KV cache (tokens)."""

    kind: Literal["llama-server"] = "llama-server"
    parallel: StrictInt = Field(1, ge=1, le=64)
    threads: StrictInt = Field(2, ge=1, le=256)
    ctx_per_slot: StrictInt = Field(1024, ge=128, le=1 << 20)
    max_lifetime_s: StrictInt = Field(7200, ge=60)  # a server outliving this is killed by its own guard
    extra_args: list[str] = Field(default_factory=list)  # further llama-server flags, passed as given

    @field_validator("extra_args")
    @classmethod
    def _not_ours(cls, v: list[str]) -> list[str]:
        """The backend owns the loopback binding and the knobs above: extra_args may not override them."""
        owned = [a for a in v if a.split("=", 1)[0] in LLAMA_SERVER_OWNED_FLAGS]
        if owned:
            raise ValueError(
                f"{owned[0].split('=', 1)[0]} is set by the local backend (loopback 127.0.0.1, its own port, "
                f"model and the fields above), not by extra_args; owned: {sorted(LLAMA_SERVER_OWNED_FLAGS)}"
            )
        return v


class LocalTarget(BackendTargetBase):
    """llama-server on this machine: nothing beyond its serving knobs."""

    kind: Literal["local"] = "local"
