"""The ec2 backend's models: its config section (Ec2Settings) and its resolved target."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from llmbench.backends.registry import BackendTargetBase, Strict
from llmbench.schemas.targets import ContainerImage


class Ec2Settings(Strict):
    """Instances we launch, serve from, and terminate. Network: a subnet and security group from
    here (or the connection extra `subnet_id` / `security_group_id`); without a security group, one
    is created per target admitting only `runner_cidr` on the server port, and deleted after."""

    region: str
    aws_conn_id: str = "aws_default"
    ami_id: str | None = None  # one AMI for every ec2 target; else resolved from an SSM parameter at deploy
    # One SSM parameter for every ec2 target; None: per target, AWS's public parameter for its host
    # CPU and accelerator driver (catalog/instances.yaml `ec2_amis`: Deep Learning AMIs, Neuron DLAMI).
    ami_ssm_parameter: str | None = None
    account_id: str | None = None  # fills {account} in a container image of your own registry
    subnet_id: str | None = None
    security_group_id: str | None = None
    runner_cidr: str | None = None  # who may reach the server (default: this runner's address /32)
    key_name: str | None = None
    iam_instance_profile: str | None = None
    root_volume_gb: int = Field(200, ge=8)
    server_port: int = Field(8000, ge=1, le=65535)
    # How the runner reaches the server: {public_ip}, {private_ip}, {public_dns}, {port} filled in.
    server_url: str = "http://{public_ip}:{port}/v1"
    ready_timeout_s: int = Field(1800, ge=10)  # running + the server's /health (image pull, model load)
    expiry_hours: float = Field(6, gt=0)  # tag read by the janitor DAG
    instance_quota: dict[str, int] = Field(default_factory=dict)  # concurrent instances per type
    precision_policy: Literal["refuse", "warn"] = "warn"  # a precision the accelerator widens or emulates
    # A catalog container pinned to a tag AWS's image tables map otherwise or do not list: keep it
    # (a warning with both values) or refuse the target (planning.checks).
    image_pins: Literal["keep", "refuse"] = "keep"
    kv_headroom_fraction: float = Field(0.1, ge=0, lt=1)  # accelerator memory kept free for KV cache


class Ec2Target(BackendTargetBase):
    """An EC2 instance we launch with a serving container (vLLM; Neuron DLC) and terminate."""

    kind: Literal["ec2"] = "ec2"
    settings: Ec2Settings
    container: ContainerImage
    ami_ssm_parameter: str | None = None  # resolved at plan for this instance (unless settings.ami_id)
