"""An OpenAI-compatible endpoint that already runs: nothing deployed or torn down (backend), its
serving and target (models) and its registry entry (spec).
Importing the package registers the kind (llmbench.backends.registry)."""

from llmbench.backends.openai import spec  # noqa: F401 (registers the kind)

__all__ = ["backend", "models", "spec"]
