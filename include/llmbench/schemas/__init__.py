"""Typed shapes only: what a config, a plan, a workload and a request record are. No I/O beyond
reading a plan file and a workload's own files (its empirical lengths, its dataset: streamed, one
line at a time); nothing here imports another llmbench package but the foundation's.

Modules: the config's targets and the plan's ResolvedTarget (targets), the workload (workload) and
its dataset (dataset), a traffic profile (traffic), the SLO (slo), the capacity search's settings
(capacity), the request record (records), the published Asset's extra (asset), and the models every
backend kind builds on, validated by kind (kinds; the registry itself is llmbench.backends.registry)."""

__all__ = ["asset", "capacity", "dataset", "kinds", "records", "slo", "targets", "traffic", "workload"]
