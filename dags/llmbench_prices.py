"""llmbench_prices: refresh SageMaker on-demand hosting prices from the AWS Pricing API.

Daily, for every SageMaker instance type in the catalog and each region in the Params, through the
Airflow AWS connection; the result is a dated cache (llmbench.backends.sagemaker.prices) that llm_benchmark's plan
prefers to the catalog's prices. Rows already published keep the price they were computed with.
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import get_current_context, task

from llmbench_airflow import TRANSIENT_RETRIES, regional_aws_dag


@task(map_index_template="{{ region }}", execution_timeout=timedelta(minutes=20), **TRANSIENT_RETRIES)
def refresh(region: str) -> dict:
    from llmbench.backends.sagemaker.prices import refresh_sagemaker_prices
    from llmbench.planning.config import load_catalogs
    from llmbench_airflow import pricing_session_for

    types = sorted(t for t in load_catalogs()["instances"] if t.startswith("ml."))
    session, endpoint_url = pricing_session_for(get_current_context()["params"]["aws_conn_id"])
    fetched = refresh_sagemaker_prices(session, {region: types}, endpoint_url)[region]
    return {t: p["usd_per_hour"] for t, p in fetched.items()}


regional_aws_dag("llmbench_prices", "@daily", __doc__, refresh)
