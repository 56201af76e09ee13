"""Airflow-facing glue: turns Airflow connections into what the llmbench library takes.

The library imports no Airflow; DAG tasks call these to build its inputs. Imported inside tasks
only (the amazon provider and boto3 are heavy).
"""

from __future__ import annotations

from typing import Any


def backend_kwargs(target: Any) -> dict[str, Any]:
    """What a target's backend needs from the platform: its kind's BackendSpec.platform_kwargs
    (in the backend's package) asks `AirflowPlatform` for sessions, endpoint overrides, connection
    extras and passwords; a kind that needs nothing gets {}."""
    from llmbench import backends  # noqa: F401 (registers every built-in kind)
    from llmbench.schemas import registry
    from llmbench.schemas.targets import ResolvedTarget

    backend = ResolvedTarget.of(target).backend
    build = registry.get(backend.kind).platform_kwargs
    return build(backend, AirflowPlatform()) if build is not None else {}


class AirflowPlatform:
    """llmbench.schemas.registry.Platform through Airflow connections: AWS ones through the amazon
    provider's AwsBaseHook (for the client type the backend names), others by password."""

    def aws_session(self, conn_id: str, region: str, client_type: str) -> Any:
        return _aws_hook(conn_id, region, client_type).get_session(region_name=region)

    def aws_endpoint_url(self, conn_id: str, region: str, client_type: str, service: str) -> str | None:
        return _aws_hook(conn_id, region, client_type).conn_config.get_service_endpoint_url(service_name=service)

    def aws_extra(self, conn_id: str, region: str, client_type: str) -> dict[str, Any]:
        return dict(_aws_hook(conn_id, region, client_type).conn_config.extra_config or {})

    def password(self, conn_id: str) -> str | None:
        from airflow.sdk import BaseHook

        return BaseHook.get_connection(conn_id).password


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


def aws_session_for(conn_id: str, region: str, service: str) -> tuple[Any, str | None]:
    """(boto3 session, the service's endpoint override) for an AWS connection: the janitor's inputs."""
    hook = _aws_hook(conn_id, region, service)
    return hook.get_session(region_name=region), hook.conn_config.get_service_endpoint_url(service_name=service)


def pricing_session_for(conn_id: str) -> tuple[Any, str | None]:
    """(boto3 session, Pricing API endpoint override) for an AWS connection: llmbench_prices' inputs."""
    from llmbench.backends.sagemaker.prices import PRICING_REGION

    hook = _aws_hook(conn_id, PRICING_REGION, "pricing")
    return hook.get_session(region_name=PRICING_REGION), hook.conn_config.get_service_endpoint_url(
        service_name="pricing"
    )


def _aws_hook(conn_id: str, region: str, client_type: str):
    from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

    return AwsBaseHook(aws_conn_id=conn_id, client_type=client_type, region_name=region)


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
