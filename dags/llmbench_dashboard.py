"""llmbench_dashboard: runs whenever llm_benchmark publishes (Asset `llmbench_price_performance`)
and rebuilds the plain table llmbench.dashboard_summary that dashboards read."""

from __future__ import annotations

import pendulum
from airflow.sdk import Asset, Param, dag, get_current_context, task


@dag(
    dag_id="llmbench_dashboard",
    schedule=[Asset(name="llmbench_price_performance")],
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["llmbench"],
    params={"warehouse_conn_id": Param(None, type=["null", "string"],
                                       description="a PostgreSQL connection; empty: the DuckDB file")},
)
def llmbench_dashboard():
    @task
    def refresh_summary() -> int:
        from llmbench import warehouse
        from llmbench_airflow import postgres_dsn

        conn_id = get_current_context()["params"]["warehouse_conn_id"]
        return warehouse.refresh_summary(postgres_dsn(conn_id) if conn_id else None)

    refresh_summary()


llmbench_dashboard()
