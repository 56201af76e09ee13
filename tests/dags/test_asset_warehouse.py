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


def test_the_dashboard_reads_the_contract_and_refuses_a_malformed_event_in_one_line(monkeypatch):
    import pytest

    from llmbench.errors import InputError
    from llmbench_airflow import landed

    good = {"run_key": "local-2026-12-06", "logical_date": "2026-12-06", "config": "local", "status": "succeeded",
            "targets": ["a", "b"], "targets_replaced": ["a"], "rows": {"levels": 5},
            "warehouse": {"kind": "postgres", "conn_id": "llmbench_warehouse"}}
    old = {"kind": "duckdb", "path": "/a.duckdb"}  # an event from before the contract: skipped
    (got,) = landed(_events(old, good))
    assert got.targets_replaced == ["a"] and got.warehouse.conn_id == "llmbench_warehouse"
    monkeypatch.setenv("AIRFLOW_CONN_LLMBENCH_WAREHOUSE", "postgres://bi@127.0.0.1:5432/analytics")
    assert published_warehouse(None, _events(old, good)) == "postgresql://bi@127.0.0.1:5432/analytics"
    with pytest.raises(InputError, match=r"^Asset event extra: targets_replaced \['c'\] not published$"):
        landed(_events({**good, "targets_replaced": ["c"]}))
    with pytest.raises(InputError, match=r"^Asset event extra: status: Input should be 'succeeded', 'partial' or"):
        landed(_events({**good, "status": "done"}))


def test_a_regression_in_a_run_that_landed_alerts_through_the_webhook(monkeypatch, tmp_path):
    """Issue 45: the dashboard's notify_regressions sends one alert per regression v_week_over_week
    judges in the runs the Asset events say landed, to the Notifier's webhook."""
    import importlib.util

    from llmbench import warehouse
    from llmbench.testing._serve import alert_webhook
    from tests.unit.warehouse.test_warehouse import _pp_run

    db = tmp_path / "w.duckdb"
    warehouse.publish(_pp_run("w1", "2026-11-23", [("g6e", "qwen", "ml.g6e.12xlarge", 16, 1000.0, 13.12, True)]), db)
    warehouse.publish(_pp_run("w2", "2026-11-30", [("g6e", "qwen", "ml.g6e.12xlarge", 16, 800.0, 13.12, True)]), db)
    extra = {"run_key": "w2", "logical_date": "2026-11-30", "config": "c", "status": "succeeded", "targets": ["g6e"],
             "targets_replaced": ["g6e"], "rows": {"levels": 1}, "warehouse": {"kind": "duckdb", "path": str(db)}}
    spec = importlib.util.spec_from_file_location("dashboard_under_test", ROOT / "dags" / "llmbench_dashboard.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ctx = {"params": {"warehouse_conn_id": None}, "triggering_asset_events": _events(extra),
           "dag": SimpleNamespace(dag_id="llmbench_dashboard"), "run_id": "asset_triggered__x"}
    monkeypatch.setattr(module, "get_current_context", lambda: ctx)
    task = module.llmbench_dashboard().get_task("notify_regressions")

    with alert_webhook() as (conn, alerts):
        monkeypatch.setenv("AIRFLOW_CONN_LLMBENCH_ALERTS", conn)
        lines = task.python_callable()
    assert lines == [a["text"] for a in alerts] and len(alerts) == 1
    assert alerts[0]["text"].startswith("llmbench: regression in w2: g6e at concurrency 16 against 2026-11-23")
    assert alerts[0]["dag_id"] == "llmbench_dashboard"
