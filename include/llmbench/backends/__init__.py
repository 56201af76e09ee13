"""Backends: how to deploy, reach, stream from and tear down one kind of endpoint (the contract:
llmbench.backends.base.Backend), one package per kind, each registering itself
(llmbench.backends.registry.BackendSpec) when imported, and what they share: the SigV4 signer and
AWS event-stream framing (awsstream), a server's own counters and version (servermetrics),
one HTTP request under a wall-clock deadline (deadline), vLLM's server arguments (vllmargs), and
the registry of kinds and wire formats (registry: BackendSpec, register, get, specs, wire).

Importing this package registers every built-in kind (BUILTIN_KINDS); adding one is a package here
and a line in BUILTIN_KINDS (docs/architecture.md walks through it)."""

from __future__ import annotations

import importlib
from typing import Any

from llmbench.backends import registry
from llmbench.backends.base import Backend

# The built-in kinds, in the order the DAG's task groups and every listing show them.
BUILTIN_KINDS = ("local", "sagemaker", "ec2", "openai", "bedrock")
for _kind in BUILTIN_KINDS:
    importlib.import_module(f"llmbench.backends.{_kind}")

__all__ = [
    "BUILTIN_KINDS",
    "awsstream",
    "base",
    "deadline",
    "get_backend",
    "registry",
    "servermetrics",
    "vllmargs",
]


def get_backend(kind: str, **kwargs: Any) -> Backend:
    """The backend object of a registered kind. kwargs are what the platform provides (built by the
    DAG from Airflow connections: BackendSpec.platform_kwargs); a kind that takes none gets none."""
    spec = registry.get(kind)
    module, _, name = spec.backend.partition(":")
    cls = getattr(importlib.import_module(module), name)
    return cls(**kwargs) if spec.platform_kwargs is not None else cls()
