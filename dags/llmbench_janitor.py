"""llmbench_janitor: the last line of defence against a leaked endpoint.

Hourly, in each region of the Param `regions` (default: every region a shipped config's backend
sections name: llmbench.paths.config_regions), it runs the janitor of every backend kind that can
leave something behind (BackendSpec.janitor, registry.janitors: SageMaker endpoints, endpoint
configs and models; EC2 instances and their security groups), through the connection `aws_conn_id`
names, which removes what is tagged
managed-by=llmbench and whose llmbench:expires-at tag has passed (a killed worker's leftovers).
Unexpired resources and anything not tagged by llmbench are never touched,
so it is safe to run at any time.
"""

from __future__ import annotations

from airflow.sdk import get_current_context, task

from llmbench.paths import config_regions
from llmbench_airflow import TRANSIENT_RETRIES, regional_aws_dag


@task(map_index_template="{{ region }}", **TRANSIENT_RETRIES)
def sweep_expired(region: str) -> list[dict]:
    from llmbench.backends import registry
    from llmbench_airflow import AirflowPlatform

    conn_id = get_current_context()["params"]["aws_conn_id"]
    removed = []
    for janitor in registry.janitors():
        removed += janitor.sweep(AirflowPlatform(), conn_id, region)
    return [
        {"kind": r["kind"], "name": r.get("name") or r.get("id"), "run_key": r["tags"].get("llmbench:run-key")}
        for r in removed
    ]


regional_aws_dag("llmbench_janitor", "@hourly", __doc__, sweep_expired, default_regions=config_regions())
