"""From a config file to a checked plan: config loading (config), plan-time checks against the
catalogs (checks), estimates and the plan itself (plan)."""

__all__ = ["checks", "config", "plan"]
