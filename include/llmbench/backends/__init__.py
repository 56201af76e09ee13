"""Backends: how to deploy, reach, stream from and tear down one kind of endpoint (the contract:
llmbench.backends.base.Backend), one package per kind, and what they share: the SigV4 signer and
AWS event-stream framing (awsstream) and a server's own counters and version (servermetrics)."""

from __future__ import annotations

from typing import Any

from llmbench.backends.base import Backend
from llmbench.schemas.targets import BACKEND_KINDS

__all__ = ["awsstream", "base", "get_backend", "servermetrics"]


def get_backend(kind: str, **kwargs: Any) -> Backend:
    """kwargs are what the platform provides (built by the DAG from Airflow connections):
    sagemaker takes session, role_arn, endpoint_url; ec2 session, endpoint_url, network; bedrock
    session; openai api_key; local nothing."""
    if kind == "sagemaker":
        from llmbench.backends.sagemaker.backend import SageMakerBackend

        return SageMakerBackend(**kwargs)
    if kind == "local":
        from llmbench.backends.local.backend import LocalBackend

        return LocalBackend()
    if kind == "openai":
        from llmbench.backends.openai.backend import OpenAIBackend

        return OpenAIBackend(**kwargs)
    if kind == "ec2":
        from llmbench.backends.ec2.backend import Ec2Backend

        return Ec2Backend(**kwargs)
    if kind == "bedrock":
        from llmbench.backends.bedrock.backend import BedrockBackend

        return BedrockBackend(**kwargs)
    raise ValueError(f"backend: unknown {kind!r}; allowed: {list(BACKEND_KINDS)}")
