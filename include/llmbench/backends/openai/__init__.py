"""An OpenAI-compatible endpoint that already runs: nothing deployed or torn down (backend)."""

__all__ = ["backend"]
