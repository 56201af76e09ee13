"""Per-token API models on Amazon Bedrock (backend), streamed with ConverseStream (wire), their
serving, config section and target (models) and the registry entry (spec).
Importing the package registers the kind (llmbench.backends.registry)."""

from llmbench.backends.bedrock import spec  # noqa: F401 (registers the kind)

__all__ = ["backend", "models", "spec", "wire"]
