"""The bedrock kind, as the registry knows it: per-token API models on Amazon Bedrock."""

from __future__ import annotations

from typing import Any

from llmbench.backends import registry
from llmbench.backends.bedrock.models import BedrockServing, BedrockSettings, BedrockTarget
from llmbench.backends.bedrock.wire import WIRE  # noqa: F401 (registers the wire)
from llmbench.backends.registry import BackendSpec, BackendTargetBase, ConfigError, PlanContext, Platform, Resolved
from llmbench.schemas.targets import Price


def plan(ctx: PlanContext) -> Resolved:
    """A per-token API: the catalog entry `serving.api` gives the model id and its $/M input and
    output tokens in the config's bedrock region."""
    t, s, where = ctx.target, ctx.target.serving, ctx.where
    assert isinstance(s, BedrockServing)
    settings: BedrockSettings = ctx.settings  # BenchmarkConfig requires the section for a bedrock target
    region = settings.region
    apis = {k: v for k, v in ctx.catalogs["apis"].items() if v.get("provider") == "bedrock"}
    if s.api not in apis:
        raise ConfigError(f"{where}.serving.api: unknown {s.api!r}; allowed: {sorted(apis)}")
    api = apis[s.api]
    ctx.out.passed(f"api {s.api} in the catalog")
    if t.model != api["model"]:
        raise ConfigError(f"{where}.model: {s.api} serves {api['model']!r}, not {t.model!r}")
    ctx.out.passed(f"model {t.model} served by {s.api}")
    if t.usd_per_hour is not None:
        raise ConfigError(f"{where}.usd_per_hour: a per-token API has no $/hour (its prices: catalog {s.api})")
    ctx.out.passed("no usd_per_hour on a per-token API")
    p_in, p_out = api["usd_per_m_input"].get(region), api["usd_per_m_output"].get(region)
    if p_in is None or p_out is None:
        raise ConfigError(
            f"bedrock.region: no price for {s.api} ({where}) in {region}; priced regions: "
            f"{sorted(api['usd_per_m_output'])}"
        )
    price = Price(
        basis="per_token",
        usd_per_m_input_tokens=float(p_in),
        usd_per_m_output_tokens=float(p_out),
        source=api["source"],
        date=str(api["date"]),
    )
    ctx.out.passed(f"price in {region}", price.summary())
    return Resolved(region, BedrockTarget(settings=settings, model_id=s.model_id or api["model_id"]), price)


def platform_kwargs(target: BackendTargetBase, platform: Platform) -> dict[str, Any]:
    """A session (the signer's credentials) through the config's AWS connection."""
    assert isinstance(target, BedrockTarget)
    br = target.settings
    return {"session": platform.session(br.aws_conn_id, br.region, "bedrock-runtime")}


SPEC = registry.register(
    BackendSpec(
        kind="bedrock",
        backend="llmbench.backends.bedrock.backend:BedrockBackend",
        target=BedrockTarget,
        serving=("bedrock",),
        plan=plan,
        settings=BedrockSettings,
        section_needs="region, aws_conn_id",
        instance_label="bedrock-on-demand",
        platform_kwargs=platform_kwargs,
        # A per-token API: nothing to create, nothing to wait for, no pool.
    ),
    BedrockServing,
)
