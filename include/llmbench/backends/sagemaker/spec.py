"""The sagemaker kind, as the registry knows it: SageMaker real-time endpoints."""

from __future__ import annotations

from typing import Any

from llmbench.backends import registry
from llmbench.backends.registry import (
    BackendSpec,
    BackendTargetBase,
    DagLimits,
    Janitor,
    PlanContext,
    Platform,
    PriceList,
    Resolved,
)
from llmbench.backends.sagemaker import prices
from llmbench.backends.sagemaker.models import SageMakerSettings, SageMakerTarget
from llmbench.backends.sagemaker.wire import SIGNING_SERVICE, runtime_url, sagemaker_headers

# One slot (deploy/pools.json), so that the check of an instance type's endpoint quota and the
# create that follows it are atomic across workers.
DEPLOY_POOL = "llmbench_sagemaker_deploy"


def plan(ctx: PlanContext) -> Resolved:
    """The shared checks of a GPU or Neuron container on the instance type (planning.checks)."""
    container = ctx.check_accelerated()
    return Resolved(ctx.settings.region, SageMakerTarget(settings=ctx.settings, container=container))


def platform_kwargs(target: BackendTargetBase, platform: Platform) -> dict[str, Any]:
    """A boto3 session with the credentials of the config's AWS connection, the connection's
    control-plane endpoint override if any, and the execution role from the connection extra
    `execution_role_arn` (the config's sagemaker.role_arn wins)."""
    assert isinstance(target, SageMakerTarget)
    sm = target.settings
    return {
        "session": platform.session(sm.aws_conn_id, sm.region, "sagemaker"),
        "endpoint_url": platform.endpoint_url(sm.aws_conn_id, sm.region, "sagemaker"),
        "role_arn": sm.role_arn or platform.extra(sm.aws_conn_id).get("execution_role_arn"),
    }


def listed_price(region: str, instance_type: str) -> tuple[float, str, str] | None:
    """The AWS Pricing API's hosting price, as the llmbench_prices DAG last cached it."""
    p = prices.cached_prices().get(region, {}).get(instance_type)
    if p is None:
        return None
    return (
        p["usd_per_hour"],
        f"AWS Pricing API ({prices.SERVICE_CODE} hosting, sku {p.get('sku')})",
        p["fetched_at"][:10],
    )


def refresh_prices(platform: Platform, conn_id: str, region: str, catalog_types: list[str]) -> dict[str, float]:
    """The Pricing API's hosting prices of the catalog's SageMaker types (ml.*) in a region, into
    the cache listed_price reads, through the connection (the API is served in PRICING_REGION)."""
    types = sorted(t for t in catalog_types if t.startswith("ml."))
    session = platform.session(conn_id, prices.PRICING_REGION, "pricing")
    endpoint_url = platform.endpoint_url(conn_id, prices.PRICING_REGION, "pricing")
    fetched = prices.refresh_sagemaker_prices(session, {region: types}, endpoint_url)[region]
    return {t: p["usd_per_hour"] for t, p in fetched.items()}


def sweep_expired(platform: Platform, conn_id: str, region: str) -> list[dict[str, Any]]:
    """Delete the expired llmbench-tagged endpoints, endpoint configs and models of a region."""
    from llmbench.backends.sagemaker.backend import janitor

    session = platform.session(conn_id, region, "sagemaker")
    return janitor(session, region, endpoint_url=platform.endpoint_url(conn_id, region, "sagemaker"))


def unmanaged_twin(instance_type: str) -> str | None:
    """ml.<type> is the hardware of the instance type <type>, run unmanaged."""
    return instance_type.removeprefix("ml.") if instance_type.startswith("ml.") else None


def existing_endpoint(name: str, region: str, runtime_url_override: str | None = None) -> Any:
    """An endpoint that already exists, signed with the standard AWS credential chain (environment,
    profile, instance role); nothing is deployed or deleted. Raises ValueError without credentials."""
    import boto3

    from llmbench.backends.awsstream import SigV4Signer
    from llmbench.backends.base import Endpoint

    signer = SigV4Signer(boto3.Session(region_name=region).get_credentials(), region, SIGNING_SERVICE)
    return Endpoint(
        url=runtime_url(region, name, runtime_url_override),
        headers=sagemaker_headers(),
        wire="sagemaker",
        signer=signer,
        keep_alive=True,
    )


def container_argv(env: dict[str, str]) -> list[str]:
    """The flags the vLLM container builds from its environment: every SM_VLLM_<NAME> becomes
    --<name> (lower case, _ -> -) followed by its value; an empty value is a bare flag. In sorted
    order, as the container's `env | grep` loop yields them."""
    argv: list[str] = []
    for key, value in sorted(env.items()):
        if not key.startswith("SM_VLLM_"):
            continue
        argv.append("--" + key.removeprefix("SM_VLLM_").lower().replace("_", "-"))
        if value != "":
            argv.append(value)
    return argv


def vllm_launch(target: Any) -> tuple[list[str], str | None] | None:
    """The `vllm serve` flags the endpoint's container would build from the environment we set
    (container_environment); and the image's vLLM version."""
    from llmbench.backends.sagemaker.backend import container_environment
    from llmbench.backends.vllmargs import image_version
    from llmbench.schemas.targets import VllmServing

    if not isinstance(target.serving, VllmServing) or not isinstance(target.backend, SageMakerTarget):
        return None
    return container_argv(container_environment(target)), image_version(
        target.backend.container.image_uri(target.backend.settings.region)
    )


SPEC = registry.register(
    BackendSpec(
        kind="sagemaker",
        backend="llmbench.backends.sagemaker.backend:SageMakerBackend",
        target=SageMakerTarget,
        serving=("vllm", "lmi"),
        plan=plan,
        settings=SageMakerSettings,
        section_needs="region, role_arn or aws_conn_id",
        hardware=True,
        # Create + InService (seed 001: ~9 minutes) and delete, for the plan's estimate only.
        deploy_overhead_min=12.0,
        default_containers={"vllm": "vllm-0.15.1"},
        pins_revision=("vllm",),  # SM_VLLM_REVISION
        scales_to_zero=True,  # inference components with a minimum of 0 instances
        dag_limits=DagLimits(pool=DEPLOY_POOL, deploy_poke_s=60, ready_poke_s=20),
        platform_kwargs=platform_kwargs,
        janitor=Janitor(sweep_expired),
        prices=PriceList(listed_price, refresh_prices),
        unmanaged_twin=unmanaged_twin,
        existing_endpoint=existing_endpoint,
        vllm_launch=vllm_launch,
    )
)
