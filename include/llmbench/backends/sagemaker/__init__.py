"""SageMaker real-time endpoints (backend)."""

__all__ = ["backend"]
