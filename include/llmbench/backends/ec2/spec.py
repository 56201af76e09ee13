"""The ec2 kind, as the registry knows it: EC2 instances we launch with a serving container."""

from __future__ import annotations

from typing import Any

from llmbench.backends import registry
from llmbench.backends.ec2.models import Ec2Settings, Ec2Target
from llmbench.backends.registry import (
    BackendSpec,
    BackendTargetBase,
    Checked,
    ConfigError,
    DagLimits,
    Janitor,
    PlanContext,
    Platform,
    Resolved,
)
from llmbench.schemas.targets import ContainerImage

DEPLOY_POOL = "llmbench_ec2_deploy"  # one slot: an instance quota's check and the launch are atomic


def plan(ctx: PlanContext) -> Resolved:
    """The shared checks of a GPU or Neuron container on the instance type (planning.checks), with
    EC2's own where the image is checked: an image of your own registry needs ec2.account_id, and
    the AMI fits the host CPU and accelerator driver."""
    settings: Ec2Settings = ctx.settings
    ami: list[str | None] = [None]

    def platform_check(name: str, ctr: ContainerImage, cpu: str, arch: str) -> None:
        if ctr.image is not None and "{account}" in ctr.image and not settings.account_id:
            raise ConfigError(
                f"{ctx.where}.serving.container: {name} is an image in your own registry ({ctr.image}): set "
                "ec2.account_id (the AWS account that holds it)"
            )
        ami[0] = _check_ami(ctx.where, settings, str(ctx.target.instance_type), cpu, arch, ctx.catalogs, ctx.out)

    container = ctx.check_accelerated(platform_check)
    return Resolved(settings.region, Ec2Target(settings=settings, container=container, ami_ssm_parameter=ami[0]))


def _ami_arch(name: str) -> set[str]:
    """What an AMI's name or SSM parameter path says it is built for (x86_64 / arm64, nvidia / neuron)."""
    low = name.lower()
    return {tag for tag in ("x86_64", "arm64", "nvidia", "neuron") if tag in low}


def _check_ami(
    where: str, settings: Ec2Settings, instance_type: str, cpu: str, arch: str, cat: dict[str, Any], out: Checked
) -> str | None:
    """The AMI an ec2 target boots. Without ec2.ami_id / ec2.ami_ssm_parameter, the catalog's for
    the instance's host CPU and driver (none there: refused). A config's own applies to every ec2
    target: when its SSM path names a host CPU or driver the instance does not have, say so (a
    warning, not a refusal: an AMI id, or a path without these words, is not checked). Returns the
    SSM parameter the instance boots from (None: ec2.ami_id)."""
    driver = "neuron" if arch == "neuron" else "nvidia"
    if settings.ami_id:
        out.passed(f"AMI {settings.ami_id} (ec2.ami_id)", "not checked")
        return None
    if settings.ami_ssm_parameter is None:
        key = f"{cpu}-{driver}"
        if key not in cat["ec2_amis"]:
            raise ConfigError(
                f"{where}.instance_type: no AMI in the catalog for {cpu} + {driver} ({instance_type}); set "
                f"ec2.ami_id or ec2.ami_ssm_parameter (catalog: {sorted(cat['ec2_amis'])})"
            )
        parameter = str(cat["ec2_amis"][key])
        out.passed(f"AMI for {cpu} + {driver}: {parameter} (catalog)")
        return parameter
    tags = _ami_arch(settings.ami_ssm_parameter)
    wrong = sorted(tags & ({"x86_64", "arm64", "nvidia", "neuron"} - {cpu, driver}))
    what = f"AMI (ec2.ami_ssm_parameter) for {cpu} + {driver}"
    if not tags:
        out.passed(what, "not checked")
    elif wrong:
        out.warned(
            what,
            "MISMATCH",
            f"{where}: ec2.ami_ssm_parameter {settings.ami_ssm_parameter} names {' + '.join(wrong)}; "
            f"{instance_type} needs an AMI for {cpu} + {driver} (one ec2 section: one AMI for every ec2 target)",
        )
    else:
        out.passed(what)
    return settings.ami_ssm_parameter


def platform_kwargs(target: BackendTargetBase, platform: Platform) -> dict[str, Any]:
    """A session through the connection, its ec2 endpoint override, and its extra `subnet_id` /
    `security_group_id` as network defaults (the config's win)."""
    assert isinstance(target, Ec2Target)
    ec2 = target.settings
    extra = platform.extra(ec2.aws_conn_id)
    return {
        "session": platform.session(ec2.aws_conn_id, ec2.region, "ec2"),
        "endpoint_url": platform.endpoint_url(ec2.aws_conn_id, ec2.region, "ec2"),
        "network": {k: extra[k] for k in ("subnet_id", "security_group_id") if extra.get(k)},
    }


def vllm_launch(target: Any) -> tuple[list[str], str | None] | None:
    """The `vllm serve` flags of the instance's container: the user data's `docker run` words after
    the image name; and the image's vLLM version."""
    from llmbench.backends.ec2.userdata import serve_command
    from llmbench.backends.vllmargs import image_version
    from llmbench.schemas.targets import VllmServing

    if not isinstance(target.serving, VllmServing) or not isinstance(target.backend, Ec2Target):
        return None
    settings = target.backend.settings
    image = target.backend.container.image_uri(settings.region, settings.account_id or "")  # as plan resolved it
    argv = serve_command(target, image, 8000)
    return argv[argv.index(image) + 1 :], image_version(image)


def sweep_expired(platform: Platform, conn_id: str, region: str) -> list[dict[str, Any]]:
    """Terminate a region's expired llmbench-tagged instances, then its expired security groups."""
    from llmbench.backends.ec2.backend import janitor

    session = platform.session(conn_id, region, "ec2")
    return janitor(session, region, endpoint_url=platform.endpoint_url(conn_id, region, "ec2"))


SPEC = registry.register(
    BackendSpec(
        kind="ec2",
        backend="llmbench.backends.ec2.backend:Ec2Backend",
        target=Ec2Target,
        serving=("vllm", "neuron"),
        plan=plan,
        settings=Ec2Settings,
        section_needs="region, and subnet_id / security_group_id or the connection's",
        hardware=True,
        deploy_overhead_min=10.0,  # launch, image pull and model load, terminate
        default_containers={"vllm": "vllm-openai-0.15.1"},
        pins_revision=("vllm",),  # vllm serve --revision
        scales_to_zero=True,  # an Auto Scaling group of 0
        dag_limits=DagLimits(pool=DEPLOY_POOL, deploy_poke_s=60, ready_poke_s=20),
        platform_kwargs=platform_kwargs,
        janitor=Janitor(sweep_expired),
        vllm_launch=vllm_launch,
    )
)
