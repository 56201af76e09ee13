"""llmbench_dashboard: runs whenever a llm_benchmark run has published and passed check (Asset
`llmbench_price_performance`). It holds the warehouse to what the event says landed (its
contract, llmbench.schemas.asset.PublishedAsset: run key, targets, rows per table, status), then
rebuilds the plain table llmbench.dashboard_summary that dashboards read, in the warehouse the run
published to (the event names it: a DuckDB path, or a PostgreSQL/Redshift connection), and the
history page (<data folder>/history.html: the weekly trend per config, path and workload), and
alerts through the Notifier on every regression v_week_over_week judges in the runs that landed."""

from __future__ import annotations

import pendulum
from airflow.sdk import Asset, Param, dag, get_current_context, task

from llmbench_airflow import TRANSIENT_RETRIES, LlmbenchNotifier


@dag(
    dag_id="llmbench_dashboard",
    schedule=[Asset(name="llmbench_price_performance")],
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["llmbench"],
    # a refresh rewrites the summary whole and a regression alert never fails: safe to run again
    default_args={**TRANSIENT_RETRIES, "on_failure_callback": [LlmbenchNotifier()]},
    on_failure_callback=[LlmbenchNotifier()],
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
    def check_landed() -> list[str]:
        """What the triggering runs say landed (the Asset's contract: llmbench.schemas.asset),
        held against the warehouse they name, newest event of each run key."""
        from llmbench import warehouse
        from llmbench_airflow import landed, published_warehouse

        ctx = get_current_context()
        events = ctx.get("triggering_asset_events")
        newest = {a.run_key: a for a in landed(events)}
        where = published_warehouse(ctx["params"]["warehouse_conn_id"], events)
        return [warehouse.check_landed(a, where) for a in newest.values()]

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

    @task
    def notify_regressions() -> list[str]:
        """A regression v_week_over_week judges in the runs that landed alerts through the Notifier."""
        from llmbench import warehouse
        from llmbench_airflow import landed, published_warehouse, send_alert

        ctx = get_current_context()
        events = ctx.get("triggering_asset_events")
        keys = sorted({a.run_key for a in landed(events)})
        lines = warehouse.regressions(keys, published_warehouse(ctx["params"]["warehouse_conn_id"], events))
        for line in lines:
            send_alert({"text": line, "dag_id": ctx["dag"].dag_id, "run_id": ctx["run_id"]})
        return lines

    landed_ok = check_landed()
    landed_ok >> refresh_summary() >> write_history()
    landed_ok >> notify_regressions()


llmbench_dashboard()
