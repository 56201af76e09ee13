"""Pure definitions: every metric (metrics) and every price figure (pricing) is computed here, once."""

__all__ = ["metrics", "pricing"]
