"""llama-server on this machine (backend), the smoke check that proves a build on this CPU (smoke),
its serving knobs and target (models) and its registry entry (spec).
Importing the package registers the kind (llmbench.schemas.registry)."""

from llmbench.backends.local import spec  # noqa: F401 (registers the kind)

__all__ = ["backend", "models", "smoke", "spec"]
