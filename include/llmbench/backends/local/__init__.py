"""llama-server on this machine (backend), and the smoke check that proves a build on this CPU (smoke)."""

__all__ = ["backend", "smoke"]
