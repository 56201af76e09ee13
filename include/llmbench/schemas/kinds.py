"""The models every backend kind builds on, and the lookup that validates them by `kind`.

A backend package (llmbench/backends/<kind>/) subclasses BackendTargetBase (what plan resolves a
target's backend into) and ServingBase (a serving configuration) and registers them through
llmbench.backends.registry, which records them here. They live here, in the schemas layer, so
that `ResolvedTarget` can validate a target of any registered kind without importing a backend:
the first lookup of a kind not registered yet imports `llmbench.backends` by name (discovery, as
an entry point would be), so a plan.json loads in a process that never imported a backend. The
registry itself (BackendSpec, wire formats, what generic code asks of a kind) is
llmbench.backends.registry.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidatorFunctionWrapHandler

from llmbench.errors import InputError

BUILTINS = "llmbench.backends"  # imported on the first lookup of a kind not yet registered


class ConfigError(InputError, ValueError):
    """A config or Param that cannot be run. The message is one line, meant for the user."""


class Strict(BaseModel):
    # Frozen: a planned target is what every task of a run agrees on; nothing edits it on the way.
    model_config = ConfigDict(extra="forbid", frozen=True)


class BackendTargetBase(Strict):
    """What plan resolves a target's backend into (ResolvedTarget.backend); each kind subclasses
    it with `kind: Literal["<kind>"]` and its own fields."""

    kind: str


class ServingBase(Strict):
    """A serving configuration (TargetSpec.serving); each serving kind subclasses it with
    `kind: Literal["<serving kind>"]`."""

    kind: str
    name: str


_TARGETS: dict[str, type[BackendTargetBase]] = {}
_SERVING: dict[str, type[ServingBase]] = {}
_loaded = False


def load_builtins() -> None:
    """Import llmbench.backends once (it registers every built-in kind)."""
    global _loaded
    if not _loaded:
        _loaded = True
        importlib.import_module(BUILTINS)


def register_target(kind: str, model: type[BackendTargetBase]) -> None:
    _TARGETS[kind] = model
    _adapters.cache_clear()


def register_serving(model: type[ServingBase]) -> None:
    kind = model.model_fields["kind"].default
    if not isinstance(kind, str):
        raise ValueError(f"{model.__name__}.kind needs a default (its serving kind)")
    _SERVING[kind] = model
    _adapters.cache_clear()


@cache
def _adapters() -> tuple[TypeAdapter[Any], TypeAdapter[Any]]:
    """Discriminated unions of every registered target and serving model (rebuilt on register):
    pydantic then reports a bad one exactly as it would a union written out by hand."""
    targets = tuple(_TARGETS.values())
    servings = tuple(_SERVING.values())

    def union(models: tuple[type[BaseModel], ...]) -> TypeAdapter[Any]:
        if len(models) == 1:
            return TypeAdapter(models[0])
        return TypeAdapter(Annotated[_union_of(models), Field(discriminator="kind")])  # type: ignore[arg-type]

    return union(targets), union(servings)


def _union_of(models: tuple[type[BaseModel], ...]) -> Any:
    u: Any = models[0]
    for m in models[1:]:
        u = u | m
    return u


def validate_target(value: Any, handler: ValidatorFunctionWrapHandler) -> BackendTargetBase:
    if isinstance(value, BackendTargetBase):
        return value
    load_builtins()
    return _adapters()[0].validate_python(value)


def validate_serving(value: Any, handler: ValidatorFunctionWrapHandler) -> ServingBase:
    if isinstance(value, ServingBase):
        return value
    load_builtins()
    return _adapters()[1].validate_python(value)


__all__ = [
    "BUILTINS",
    "BackendTargetBase",
    "ConfigError",
    "ServingBase",
    "Strict",
    "load_builtins",
    "register_serving",
    "register_target",
    "validate_serving",
    "validate_target",
]
