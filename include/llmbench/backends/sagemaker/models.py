"""The sagemaker backend's models: its config section (SageMakerSettings) and its resolved target."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from llmbench.backends.registry import BackendTargetBase, Strict
from llmbench.schemas.targets import ContainerImage


class SageMakerSettings(Strict):
    region: str
    aws_conn_id: str = "aws_default"
    role_arn: str | None = None  # else the connection's extra `role_arn`
    endpoint_timeout_s: int = Field(1800, ge=10)  # InService wait (real endpoints: minutes)
    expiry_hours: float = Field(6, gt=0)  # tag read by the janitor DAG
    precision_policy: Literal["refuse", "warn"] = "refuse"  # a precision the GPU cannot run natively
    # A catalog container pinned to a tag the SageMaker SDK maps otherwise or does not list: keep
    # it (a warning with both values) or refuse the target (images).
    image_pins: Literal["keep", "refuse"] = "keep"
    kv_headroom_fraction: float = Field(0.1, ge=0, lt=1)  # GPU memory kept free for KV cache
    instance_quota: dict[str, int] = Field(default_factory=dict)  # concurrent endpoints per instance type
    runtime_url: str | None = None  # override the runtime host (VPC endpoints, tests)


class SageMakerTarget(BackendTargetBase):
    """A SageMaker real-time endpoint: the config's sagemaker section and the resolved container."""

    kind: Literal["sagemaker"] = "sagemaker"
    settings: SageMakerSettings
    container: ContainerImage
