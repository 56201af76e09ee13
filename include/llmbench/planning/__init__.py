"""From a config file to a checked plan: config loading (config), plan-time checks against the
catalogs (checks), estimates and the plan itself (plan), AWS price fetching (aws_prices)."""

__all__ = ["aws_prices", "checks", "config", "plan"]
