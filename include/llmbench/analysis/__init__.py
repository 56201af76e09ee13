"""Pure definitions: every metric (metrics) and every price figure (pricing) is computed here, once,
and the cost model that turns a measured level into a cost at a user's traffic (costmodel)."""

__all__ = ["costmodel", "metrics", "pricing"]
