"""The dashboard refreshes the warehouse the triggering run published to: the Asset event's extra
(a DuckDB path, or a PostgreSQL connection id, never credentials) decides, unless a Param names one."""

import sys
from types import SimpleNamespace

from .conftest import ROOT

sys.path.insert(0, str(ROOT / "plugins"))
from llmbench_airflow import published_warehouse  # noqa: E402


def _events(*extras):
    return {"llmbench_price_performance": [SimpleNamespace(extra=e) for e in extras]}


def test_the_latest_publish_decides(monkeypatch):
    assert published_warehouse(None, None) is None  # no event: the default DuckDB file
    assert published_warehouse(None, _events({"kind": "duckdb", "path": "/a.duckdb"})) == "/a.duckdb"
    monkeypatch.setenv("AIRFLOW_CONN_BI_PG", "postgres://reader:pw@127.0.0.1:5432/analytics")
    events = _events({"kind": "duckdb", "path": "/a.duckdb"}, {"kind": "postgres", "conn_id": "bi_pg"})
    assert published_warehouse(None, events) == "postgresql://reader:pw@127.0.0.1:5432/analytics"
    monkeypatch.setenv("AIRFLOW_CONN_OTHER", "postgres://x@127.0.0.1:5432/other")
    assert published_warehouse("other", events) == "postgresql://x@127.0.0.1:5432/other"  # the Param wins
