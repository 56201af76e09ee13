"""The openai backend's models: an endpoint that already runs (OpenAIServing) and its resolved target."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from llmbench.backends.registry import BackendTargetBase, ServingBase


class OpenAIServing(ServingBase):
    """An OpenAI-compatible endpoint that already runs (vLLM on a machine of yours, a gateway):
    nothing is deployed or torn down. The API key, if any, is the password of an Airflow connection."""

    kind: Literal["openai"] = "openai"
    base_url: str = Field(pattern=r"^https?://")  # ends in /v1
    model_name: str = "default"  # the `model` field of each request
    api_key_conn_id: str | None = None


class OpenAITarget(BackendTargetBase):
    """An endpoint that already runs; its key (if any) is read from an Airflow connection."""

    kind: Literal["openai"] = "openai"
    base_url: str
    model_name: str = "default"
    api_key_conn_id: str | None = None
    # One connection per stream, reused (as vLLM's and every peer's clients do): a fresh one per
    # request makes the server accept a connection per request, which a closed loop's waves pay
    # for (docs/offered-load.md). A stream whose reused connection the server closes stops asking
    # (httpstream.StreamClient). false: `Connection: close`, a fresh connection per request.
    keep_alive: bool = True
