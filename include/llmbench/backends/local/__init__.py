"""llama-server or vLLM on this machine (backend; vLLM's own launch in vllm), the smoke check that
proves a build on this CPU (smoke), the process that keeps a server reachable from other hosts (keeper),
its serving knobs and target (models) and its registry entry (spec).
Importing the package registers the kind (llmbench.backends.registry)."""

from llmbench.backends.local import spec  # noqa: F401 (registers the kind)

__all__ = ["backend", "keeper", "models", "smoke", "spec", "vllm"]
