"""llmbench_janitor: the last line of defence against a leaked endpoint.

Hourly, it deletes every SageMaker endpoint, endpoint config and model tagged managed-by=llmbench
whose llmbench:expires-at tag has passed (a killed worker's leftovers). Unexpired resources and
anything not tagged by llmbench are never touched, so it is safe to run at any time.
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import Param, dag, get_current_context, task


@dag(
    dag_id="llmbench_janitor",
    schedule="@hourly",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=1),
    tags=["llmbench"],
    params={
        "aws_conn_id": Param("aws_default", type="string"),
        "regions": Param(["us-east-1", "us-west-2"], type="array", items={"type": "string"}),
    },
)
def llmbench_janitor():
    @task
    def regions() -> list[str]:
        return list(get_current_context()["params"]["regions"])

    @task(map_index_template="{{ region }}")
    def sweep_expired(region: str) -> list[dict]:
        from llmbench.backends.sagemaker import janitor
        from llmbench_airflow import aws_session_for

        session, endpoint_url = aws_session_for(get_current_context()["params"]["aws_conn_id"], region)
        removed = janitor(session, region, endpoint_url=endpoint_url)
        return [{"kind": r["kind"], "name": r["name"], "run_key": r["tags"].get("llmbench:run-key")} for r in removed]

    sweep_expired.expand(region=regions())


llmbench_janitor()
