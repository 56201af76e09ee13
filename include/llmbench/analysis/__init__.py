"""Pure definitions: every metric (metrics) and every price figure (pricing) is computed here, once,
with the cost model that turns a measured level into a cost at a user's traffic (costmodel), and
every column's human name and unit, with the one list of a level's columns (columns)."""

__all__ = ["columns", "costmodel", "metrics", "pricing"]
