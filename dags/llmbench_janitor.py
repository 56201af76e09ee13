"""llmbench_janitor: the last line of defence against a leaked endpoint.

Hourly, in each region of the Param `regions` (default: every region a shipped config's
sagemaker, ec2 or bedrock section names: llmbench.paths.config_regions), it deletes every
SageMaker endpoint, endpoint config and model, and terminates every EC2 instance (and deletes its
security group), tagged managed-by=llmbench whose llmbench:expires-at tag has passed (a killed
worker's leftovers). Unexpired resources and anything not tagged by llmbench are never touched,
so it is safe to run at any time.
"""

from __future__ import annotations

from airflow.sdk import get_current_context, task

from llmbench.paths import config_regions
from llmbench_airflow import regional_aws_dag


@task(map_index_template="{{ region }}")
def sweep_expired(region: str) -> list[dict]:
    from llmbench.backends.ec2.backend import Ec2Backend
    from llmbench.backends.sagemaker.backend import SageMakerBackend
    from llmbench_airflow import aws_session_for

    conn_id = get_current_context()["params"]["aws_conn_id"]
    session, sagemaker_url = aws_session_for(conn_id, region, "sagemaker")
    _, ec2_url = aws_session_for(conn_id, region, "ec2")
    removed = SageMakerBackend(session, endpoint_url=sagemaker_url).janitor(region)
    removed += Ec2Backend(session, endpoint_url=ec2_url).janitor(region)
    return [
        {"kind": r["kind"], "name": r.get("name") or r.get("id"), "run_key": r["tags"].get("llmbench:run-key")}
        for r in removed
    ]


regional_aws_dag("llmbench_janitor", "@hourly", __doc__, sweep_expired, default_regions=config_regions())
