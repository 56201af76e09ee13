"""Airflow-facing glue: turns Airflow connections into what the llmbench library takes.

The library imports no Airflow; DAG tasks call these to build its inputs. Imported inside tasks
only (the amazon provider and boto3 are heavy).
"""

from __future__ import annotations

from typing import Any


def backend_kwargs(target: Any) -> dict[str, Any]:
    """What a target's backend needs from the platform, by backend kind.

    sagemaker: a boto3 session with the credentials of the config's AWS connection (through the
    amazon provider's AwsBaseHook), the connection's control-plane endpoint override if any, and
    the execution role from the connection extra `execution_role_arn` (the config's
    sagemaker.role_arn wins). ec2: a session through the provider's EC2Hook, the connection's
    ec2 endpoint override, and its extra `subnet_id` / `security_group_id` as network defaults
    (the config's win). bedrock: a session (the signer's credentials). openai: the API key, the
    password of the target's connection `api_key_conn_id` (none: no key). local: nothing."""
    from llmbench.schemas.targets import BedrockTarget, Ec2Target, OpenAITarget, ResolvedTarget, SageMakerTarget

    backend = ResolvedTarget.of(target).backend
    if isinstance(backend, Ec2Target):
        from airflow.providers.amazon.aws.hooks.ec2 import EC2Hook

        ec2 = backend.settings
        ec2_hook = EC2Hook(aws_conn_id=ec2.aws_conn_id, region_name=ec2.region)
        extra = ec2_hook.conn_config.extra_config
        return {
            "session": ec2_hook.get_session(region_name=ec2.region),
            "endpoint_url": ec2_hook.conn_config.get_service_endpoint_url(service_name="ec2"),
            "network": {k: extra[k] for k in ("subnet_id", "security_group_id") if extra.get(k)},
        }
    if isinstance(backend, BedrockTarget):
        from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

        br = backend.settings
        br_hook = AwsBaseHook(aws_conn_id=br.aws_conn_id, client_type="bedrock-runtime", region_name=br.region)
        return {"session": br_hook.get_session(region_name=br.region)}
    if isinstance(backend, SageMakerTarget):
        sm = backend.settings
        hook = _sagemaker_hook(sm.aws_conn_id, sm.region)
        session, endpoint_url = _session_and_endpoint(hook, sm.region)
        return {
            "session": session,
            "endpoint_url": endpoint_url,
            "role_arn": sm.role_arn or hook.conn_config.extra_config.get("execution_role_arn"),
        }
    if isinstance(backend, OpenAITarget) and backend.api_key_conn_id:
        from airflow.sdk import BaseHook

        # the connection's name goes along so that a key the backend refuses is named by it
        return {
            "api_key": BaseHook.get_connection(backend.api_key_conn_id).password,
            "api_key_conn_id": backend.api_key_conn_id,
        }
    return {}


DEFAULT_REGIONS = ["us-east-1", "us-west-2"]


def regional_aws_dag(
    dag_id: str, schedule: str, doc: str | None, per_region: Any, default_regions: list[str] | None = None
) -> Any:
    """The shape the janitor and the prices DAGs share: hourly/daily, one run at a time, Params
    `aws_conn_id` and `regions` (default: `default_regions`, else DEFAULT_REGIONS), and
    `per_region` (a @task taking `region`) mapped over the regions."""
    from datetime import timedelta

    import pendulum
    from airflow.sdk import Param, dag, get_current_context, task

    @dag(
        dag_id=dag_id,
        schedule=schedule,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        dagrun_timeout=timedelta(hours=1),
        tags=["llmbench"],
        doc_md=doc,
        params={
            "aws_conn_id": Param("aws_default", type="string"),
            "regions": Param(list(default_regions or DEFAULT_REGIONS), type="array", items={"type": "string"}),
        },
    )
    def regional():
        @task
        def regions() -> list[str]:
            return list(get_current_context()["params"]["regions"])

        per_region.expand(region=regions())

    return regional()


def aws_session_for(conn_id: str, region: str, service: str = "sagemaker") -> tuple[Any, str | None]:
    """(boto3 session, the service's endpoint override) for an AWS connection: the janitor's inputs."""
    hook = _sagemaker_hook(conn_id, region)
    return hook.get_session(region_name=region), hook.conn_config.get_service_endpoint_url(service_name=service)


def pricing_session_for(conn_id: str) -> tuple[Any, str | None]:
    """(boto3 session, Pricing API endpoint override) for an AWS connection: llmbench_prices' inputs."""
    from llmbench.planning.aws_prices import PRICING_REGION

    hook = _sagemaker_hook(conn_id, PRICING_REGION)
    return hook.get_session(region_name=PRICING_REGION), hook.conn_config.get_service_endpoint_url(
        service_name="pricing"
    )


def _sagemaker_hook(conn_id: str, region: str):
    from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

    return AwsBaseHook(aws_conn_id=conn_id, client_type="sagemaker", region_name=region)


def _session_and_endpoint(hook, region: str) -> tuple[Any, str | None]:
    return hook.get_session(region_name=region), hook.conn_config.get_service_endpoint_url(service_name="sagemaker")


def warehouse_dsn(run_dir: str) -> str | None:
    """The DSN of the warehouse connection the run's config names (None for DuckDB): postgresql://
    for kind postgres, redshift:// (same driver, Redshift's dialect) for kind redshift."""
    from llmbench.schemas.targets import RunPlan

    settings = RunPlan.load(run_dir).warehouse
    if settings.kind == "postgres":
        return postgres_dsn(settings.conn_id)
    if settings.kind == "redshift":
        return redshift_dsn(settings.conn_id)
    return None


def published_warehouse(conn_id: str | None, triggering_asset_events: Any) -> str | None:
    """The warehouse a dashboard refresh reads: the Param's PostgreSQL connection if given, else
    where the triggering publish went (its Asset event's extra: kind + conn_id or path), else the
    default DuckDB file (None)."""
    if conn_id:
        return postgres_dsn(conn_id)
    extra: dict[str, Any] = {}
    for events in (triggering_asset_events or {}).values():
        for event in events:  # the latest publish wins
            extra = dict(getattr(event, "extra", None) or {}) or extra
    if extra.get("kind") == "postgres":
        return postgres_dsn(extra["conn_id"])
    if extra.get("kind") == "redshift":
        return redshift_dsn(extra["conn_id"])
    return extra.get("path")


def postgres_dsn(conn_id: str) -> str:
    """A psycopg DSN for an Airflow PostgreSQL connection."""
    from airflow.providers.postgres.hooks.postgres import PostgresHook

    uri = PostgresHook(postgres_conn_id=conn_id).get_uri()
    # psycopg wants postgresql://; the hook may say postgres:// or add a SQLAlchemy driver.
    return "postgresql://" + uri.split("://", 1)[1]


def redshift_dsn(conn_id: str) -> str:
    """redshift://user:password@host:port/database for an Airflow Redshift connection (the fields
    RedshiftSQLHook reads; port 5439 unless set); extra sslmode passes through."""
    from urllib.parse import quote

    from airflow.sdk import BaseHook

    c = BaseHook.get_connection(conn_id)
    auth = quote(c.login or "", safe="") + (":" + quote(c.password, safe="") if c.password else "")
    dsn = f"redshift://{auth}@{c.host}:{c.port or 5439}/{c.schema or 'dev'}"
    sslmode = (c.extra_dejson or {}).get("sslmode")
    return dsn + (f"?sslmode={sslmode}" if sslmode else "")


ALERT_CONN_ID = "llmbench_alerts"


def alert_on_failure(context: dict[str, Any]) -> None:
    """on_failure_callback: POST a JSON alert to the URL of the HTTP connection `llmbench_alerts`
    (a Slack/Teams/PagerDuty webhook or your own relay); without that connection, log it.
    Never raises: an alert that cannot be sent must not hide the failure it reports."""
    import json
    import logging
    import urllib.request

    from airflow.sdk import BaseHook

    from llmbench.redaction import redact

    ti: Any = context.get("ti") or context.get("task_instance")
    exc = context.get("exception")
    # redacted: an exception's text may quote an API key or a DSN's password (a webhook is no vault)
    alert = {
        "text": f"llmbench: {ti.dag_id}.{ti.task_id} failed in run {ti.run_id}: {type(exc).__name__ if exc else ''}"
        f" {redact(str(exc))[:500] if exc else ''}".strip(),
        "dag_id": ti.dag_id,
        "task_id": ti.task_id,
        "map_index": ti.map_index,
        "run_id": ti.run_id,
    }
    log = logging.getLogger("llmbench")
    try:
        conn = BaseHook.get_connection(ALERT_CONN_ID)
    except Exception:  # noqa: BLE001 (no such connection: alerts go to the log only)
        log.error("ALERT %s", alert["text"])
        return
    # host may be the whole webhook URL (JSON connection form), or host/port/schema as in a URI.
    url: str = (
        conn.host
        if conn.host and "://" in conn.host
        else (
            f"http://{conn.host}" + (f":{conn.port}" if conn.port else "") + (f"/{conn.schema}" if conn.schema else "")
        )
    )
    try:
        req = urllib.request.Request(
            url, data=json.dumps(alert).encode(), headers={"Content-Type": "application/json"}, method="POST"
        )
        urllib.request.urlopen(req, timeout=10).close()
    except Exception as e:  # noqa: BLE001
        log.error("ALERT (not delivered to connection %s: %s) %s", ALERT_CONN_ID, e, alert["text"])
