"""llmbench_janitor: the last line of defence against a leaked endpoint.

Hourly, it deletes every SageMaker endpoint, endpoint config and model tagged managed-by=llmbench
whose llmbench:expires-at tag has passed (a killed worker's leftovers). Unexpired resources and
anything not tagged by llmbench are never touched, so it is safe to run at any time.
"""

from __future__ import annotations

from airflow.sdk import get_current_context, task

from llmbench_airflow import regional_aws_dag


@task(map_index_template="{{ region }}")
def sweep_expired(region: str) -> list[dict]:
    from llmbench.backends.sagemaker import SageMakerBackend
    from llmbench_airflow import aws_session_for

    session, endpoint_url = aws_session_for(get_current_context()["params"]["aws_conn_id"], region)
    removed = SageMakerBackend(session, endpoint_url=endpoint_url).janitor(region)
    return [{"kind": r["kind"], "name": r["name"], "run_key": r["tags"].get("llmbench:run-key")} for r in removed]


regional_aws_dag("llmbench_janitor", "@hourly", __doc__, sweep_expired)
