"""The openai kind, as the registry knows it: an OpenAI-compatible endpoint that already runs."""

from __future__ import annotations

from typing import Any

from llmbench.backends import registry
from llmbench.backends.openai.models import OpenAIServing, OpenAITarget
from llmbench.backends.registry import BackendSpec, BackendTargetBase, PlanContext, Platform, Resolved
from llmbench.schemas.targets import Price


def plan(ctx: PlanContext) -> Resolved:
    """No catalog check of its hardware (it may be anything). Its $/hour is the config's; without
    one, only latency and throughput are published."""
    t, s = ctx.target, ctx.target.serving
    assert isinstance(s, OpenAIServing)
    ctx.out.passed("hardware (an endpoint you run)", "not checked")
    if t.usd_per_hour is not None:
        price = t.config_price()
    else:
        price = Price(basis="none", note="no usd_per_hour in the config for this endpoint: latency and throughput only")
    ctx.out.passed("price", price.summary())
    backend = OpenAITarget(base_url=s.base_url.rstrip("/"), model_name=s.model_name, api_key_conn_id=s.api_key_conn_id)
    return Resolved("external", backend, price)


def platform_kwargs(target: BackendTargetBase, platform: Platform) -> dict[str, Any]:
    """The API key: the password of the target's connection `api_key_conn_id` (none: no key). The
    connection's name goes along so that a key the backend refuses is named by it, never shown."""
    assert isinstance(target, OpenAITarget)
    if not target.api_key_conn_id:
        return {}
    return {"api_key": platform.password(target.api_key_conn_id), "api_key_conn_id": target.api_key_conn_id}


SPEC = registry.register(
    BackendSpec(
        kind="openai",
        backend="llmbench.backends.openai.backend:OpenAIBackend",
        target=OpenAITarget,
        serving=("openai",),
        plan=plan,
        platform_kwargs=platform_kwargs,
    ),
    OpenAIServing,
)
