"""Typed shapes only: what a config, a plan, a workload and a request record are. No I/O beyond
reading a plan file and a workload's own files (its empirical lengths, its dataset: streamed, one
line at a time); nothing here imports another llmbench package but the foundation's."""

__all__ = ["asset", "capacity", "dataset", "records", "registry", "slo", "targets", "traffic", "workload"]
