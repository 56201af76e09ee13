"""llmbench: what it really costs to serve an open-weight LLM on each kind of hardware.

The library behind the Airflow DAGs. It imports no Airflow: every task calls a function here.
Its subpackages, from the bottom up (a package imports only packages below it; tests/unit/test_layers.py):

  paths, lifetime   where files live; processes that die with their parent
  redaction         secrets out of error text, control characters out of what a terminal shows
  schemas           typed shapes only: workload, SLO, targets and plan, request records
  analysis          pure definitions: metrics, pricing arithmetic
  warehouse         connect, migrate, publish, query (migrations/*.sql as package data)
  backends          one package per kind of endpoint, behind one contract (backends.base)
  planning          config loading, catalogs, plan-time checks, estimates, AWS price fetching
  loadgen           schedules, driver, HTTP client, wire decoding, record builder, prompts, sweep
  quality           suites, grading, runner
  chaos             faults injected at a stage or a record, for tests
  results           events, tables, validation, report, reprocess, retention, code version
  pipeline          one function per DAG task
  cli               the `llmbench` command
  testing           servers for tests and benchmarks (never imported by the rest)
"""

__version__ = "0.1.0"
