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

        conn_id = get_current_context()["params"]["warehouse_conn_id"]
        dsn = None
        if conn_id:
            from airflow.providers.postgres.hooks.postgres import PostgresHook

            dsn = "postgresql://" + PostgresHook(postgres_conn_id=conn_id).get_uri().split("://", 1)[1]
        return warehouse.refresh_summary(dsn)

    refresh_summary()


llmbench_dashboard()
