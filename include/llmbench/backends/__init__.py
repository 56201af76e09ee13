"""Backends: how to deploy, reach, stream from and tear down one kind of endpoint."""

from __future__ import annotations

from llmbench.backends.base import Backend


def get_backend(name: str, **kwargs) -> Backend:
    """kwargs reach backends that take them: sagemaker takes session, role_arn, endpoint_url."""
    if name == "sagemaker":
        from llmbench.backends.sagemaker import SageMakerBackend

        return SageMakerBackend(**kwargs)
    if name == "local":
        from llmbench.backends.local import LocalBackend

        return LocalBackend()
    if name == "openai":
        from llmbench.backends.openai import OpenAIBackend

        return OpenAIBackend()
    raise ValueError(f"backend: unknown {name!r}; allowed: ['local', 'openai', 'sagemaker']")
