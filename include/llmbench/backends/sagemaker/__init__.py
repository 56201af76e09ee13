"""SageMaker real-time endpoints (backend), their config section and target (models), their wire
(wire), the Pricing API cache of hosting prices (prices), the registry entry (spec), and AWS deep
learning container images from the SageMaker SDK's tables (images), which every kind that deploys one uses.
Importing the package registers the kind and the image resolver (llmbench.backends.registry)."""

from llmbench.backends.sagemaker import images, spec  # noqa: F401 (register the resolver, the kind)

__all__ = ["backend", "images", "models", "prices", "spec", "wire"]
