"""EC2 instances launched with a serving container, and terminated after (backend)."""

__all__ = ["backend"]
