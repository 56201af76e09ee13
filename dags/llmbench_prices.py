"""llmbench_prices: refresh the price lists of every backend kind that has one.

Daily, for each region in the Params, every kind whose price list something refreshes
(BackendSpec.prices, registry.price_refreshers: SageMaker's on-demand hosting prices from the AWS
Pricing API) fetches the prices of its catalog instance types through the connection `aws_conn_id`
names; the result is a dated cache (llmbench.backends.sagemaker.prices) that llm_benchmark's plan
prefers to the catalog's prices. Rows already published keep the price they were computed with.
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import get_current_context, task

from llmbench_airflow import TRANSIENT_RETRIES, regional_aws_dag


@task(map_index_template="{{ region }}", execution_timeout=timedelta(minutes=20), **TRANSIENT_RETRIES)
def refresh(region: str) -> dict:
    from llmbench.backends import registry
    from llmbench.planning.config import load_catalogs
    from llmbench_airflow import AirflowPlatform

    conn_id = get_current_context()["params"]["aws_conn_id"]
    types = sorted(load_catalogs()["instances"])
    return {
        kind: refresh(AirflowPlatform(), conn_id, region, types)
        for kind, refresh in registry.price_refreshers().items()
    }


regional_aws_dag("llmbench_prices", "@daily", __doc__, refresh)
