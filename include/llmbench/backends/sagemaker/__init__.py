"""SageMaker real-time endpoints (backend), their config section and target (models), their wire
(wire), the Pricing API cache of hosting prices (prices) and the registry entry (spec).
Importing the package registers the kind (llmbench.schemas.registry)."""

from llmbench.backends.sagemaker import spec  # noqa: F401 (registers the kind)

__all__ = ["backend", "models", "prices", "spec", "wire"]
