"""The bedrock backend's models: a per-token API model (BedrockServing), its config section
(BedrockSettings) and its resolved target."""

from __future__ import annotations

from typing import Literal

from llmbench.backends.registry import BackendTargetBase, ServingBase, Strict


class BedrockServing(ServingBase):
    """A per-token API model on Amazon Bedrock, streamed with ConverseStream. `api` names its entry
    in catalog/api_prices.yaml (model id, $/M input and output tokens per region)."""

    kind: Literal["bedrock"] = "bedrock"
    api: str
    model_id: str | None = None  # default: the catalog entry's model id (an inference profile id works too)


class BedrockSettings(Strict):
    region: str
    aws_conn_id: str = "aws_default"
    runtime_url: str | None = None  # override the runtime host (VPC endpoints, tests)
    # No timeout of its own: a Bedrock request is bounded by the workload's request_timeout_s, as
    # every backend's is.


class BedrockTarget(BackendTargetBase):
    """A per-token API: nothing deployed; requests go to the Bedrock runtime, SigV4-signed."""

    kind: Literal["bedrock"] = "bedrock"
    settings: BedrockSettings
    model_id: str
