"""Typed shapes only: what a config, a plan, a workload and a request record are. No I/O beyond
reading a plan file; nothing here imports another llmbench package but `paths`."""

__all__ = ["capacity", "records", "registry", "slo", "targets", "traffic", "workload"]
