"""llmbench_dashboard: runs whenever llm_benchmark publishes (Asset `llmbench_price_performance`)
and rebuilds the plain table llmbench.dashboard_summary that dashboards read, in the warehouse the
run published to (the Asset event carries it: a DuckDB path, or a PostgreSQL/Redshift connection),
and the history page (<data folder>/history.html: the weekly trend per config, path and workload)."""

from __future__ import annotations

import pendulum
from airflow.sdk import Asset, Param, dag, get_current_context, task


@dag(
    dag_id="llmbench_dashboard",
    schedule=[Asset(name="llmbench_price_performance")],
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["llmbench"],
    params={
        "warehouse_conn_id": Param(
            None,
            type=["null", "string"],
            description="a PostgreSQL connection; empty: where the triggering run published",
        )
    },
)
def llmbench_dashboard():
    @task
    def refresh_summary() -> int:
        from llmbench import warehouse
        from llmbench_airflow import published_warehouse

        ctx = get_current_context()
        return warehouse.refresh_summary(
            published_warehouse(ctx["params"]["warehouse_conn_id"], ctx.get("triggering_asset_events"))
        )

    @task
    def write_history() -> str:
        from llmbench import pipeline
        from llmbench_airflow import published_warehouse

        ctx = get_current_context()
        return pipeline.history(
            published_warehouse(ctx["params"]["warehouse_conn_id"], ctx.get("triggering_asset_events"))
        )

    refresh_summary() >> write_history()


llmbench_dashboard()
