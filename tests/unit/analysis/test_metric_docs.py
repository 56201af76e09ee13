"""The metric documentation cannot drift from the definitions: every metric column the warehouse
holds is described in docs/metrics.md, every column the SQL comments describe is too, and every
function of the metrics package and pricing.py is named there (and every function it names exists)."""

import inspect
import re
from pathlib import Path

from llmbench import warehouse
from llmbench.analysis import metrics, pricing

DOC = (Path(__file__).resolve().parents[3] / "docs" / "metrics.md").read_text()
# Columns of levels / price_performance that identify or give context to a row, not a metric.
NOT_METRICS = {"run_key", "target_id", "validation_passed", "load_mode", "logical_date", "instance_type", "model",
               "serving_config", "usd_per_hour", "price_source", "break_even_api", "repeats", "client_processes",
               "backend", "price_note"}


def _documented(column: str) -> bool:
    named = set(re.findall(r"`([a-z0-9_]+)`", DOC))
    wildcards = re.findall(r"`([a-z0-9_]+)_\*`", DOC)
    return column in named or any(column.startswith(w + "_") for w in wildcards)


def _columns(tmp_path):
    con = warehouse.connect(tmp_path / "w.duckdb")
    try:
        return con.execute("SELECT table_name, column_name, comment FROM duckdb_columns() "
                           "WHERE schema_name = 'llmbench' AND table_name IN ('levels', 'price_performance', "
                           "'targets', 'requests')").fetchall()
    finally:
        con.close()


def test_every_metric_column_is_documented(tmp_path):
    cols = _columns(tmp_path)
    metric_cols = [(t, c) for t, c, _ in cols if t in ("levels", "price_performance") and c not in NOT_METRICS]
    assert len(metric_cols) > 40
    undocumented = [(t, c) for t, c in metric_cols if not _documented(c)]
    assert undocumented == [], "add these to docs/metrics.md"


def test_every_column_the_sql_comments_describe_is_documented(tmp_path):
    commented = [(t, c) for t, c, comment in _columns(tmp_path)
                 if comment and t in ("levels", "price_performance") and c not in NOT_METRICS]
    assert len(commented) > 10
    assert [(t, c) for t, c in commented if not _documented(c)] == []


def test_every_definition_is_named_and_every_named_one_exists():
    public = {f"{mod.__name__.split('.')[-1]}.{name}" for mod in (metrics, pricing)
              for name, fn in inspect.getmembers(mod, inspect.isfunction)
              if fn.__module__.startswith(mod.__name__) and not name.startswith("_")}
    assert len(public) > 50
    named = set(re.findall(r"`((?:metrics|pricing)\.[a-z_0-9]+)`", DOC)) - {"metrics.py", "pricing.py"}
    assert named - public == set(), "docs/metrics.md names functions that do not exist"
    unnamed = {p for p in public if p not in named and p.split(".")[1] not in DOC}
    assert unnamed == set(), "docs/metrics.md does not describe these definitions"
