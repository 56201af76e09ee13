"""Airflow-facing glue: turns Airflow connections into what the llmbench library takes.

The library imports no Airflow; DAG tasks call these to build its inputs. The DAG files import
this module at their top (the operators, trigger, notifier and retry defaults they wire), so it
imports only airflow.sdk and the trigger base at module level: the amazon provider, boto3 and the
llmbench library are imported inside the functions that need them (the heavy part).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from airflow.sdk import BaseNotifier, BaseOperator
from airflow.triggers.base import BaseTrigger, TriggerEvent


def backend_kwargs(target: Any) -> dict[str, Any]:
    """What a target's backend needs from the platform: its kind's BackendSpec.platform_kwargs
    (in the backend's package) asks `AirflowPlatform` for sessions, endpoint overrides, connection
    extras and passwords; a kind that needs nothing gets {}."""
    from llmbench import backends  # noqa: F401 (registers every built-in kind)
    from llmbench.backends import registry
    from llmbench.schemas.targets import ResolvedTarget

    backend = ResolvedTarget.of(target).backend
    build = registry.get(backend.kind).platform_kwargs
    return build(backend, AirflowPlatform()) if build is not None else {}


class AirflowPlatform:
    """llmbench.backends.registry.Platform through Airflow connections. A session is built by the
    connection's type: an AWS connection (conn_type aws, or one that does not exist, which the amazon
    provider reads as the standard credential chain) through the provider's AwsBaseHook; another
    type has no session to give, and says so in one line. Extras and passwords are any connection's."""

    def session(self, conn_id: str, region: str, service: str) -> Any:
        return _session_hook(conn_id, region, service).get_session(region_name=region)

    def endpoint_url(self, conn_id: str, region: str, service: str) -> str | None:
        return _session_hook(conn_id, region, service).conn_config.get_service_endpoint_url(service_name=service)

    def extra(self, conn_id: str) -> dict[str, Any]:
        conn = _connection(conn_id)
        return dict(conn.extra_dejson) if conn is not None else {}

    def password(self, conn_id: str) -> str | None:
        from airflow.sdk import BaseHook

        return BaseHook.get_connection(conn_id).password


def _connection(conn_id: str) -> Any:
    """The Airflow connection, None when there is none by that id."""
    from airflow.exceptions import AirflowNotFoundException
    from airflow.sdk import BaseHook

    try:
        return BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return None


def _session_hook(conn_id: str, region: str, service: str):
    conn = _connection(conn_id)
    if conn is not None and conn.conn_type not in ("aws", "amazon_web_services"):
        from llmbench.schemas.kinds import ConfigError

        raise ConfigError(f"connection {conn_id!r} is of type {conn.conn_type!r}: no {service} session from it (aws)")
    return _aws_hook(conn_id, region, service)


DEFAULT_REGIONS = ["us-east-1", "us-west-2"]


# The retries of a task that can fail transiently (a warehouse restarting, an API throttling, an
# endpoint's first answers): LLMBENCH_RETRIES of them, LLMBENCH_RETRY_DELAY_S (30 s) apart, then
# doubling, at most 10 minutes apart. Only tasks that are safe to run again by construction take
# them: publish replaces the run key in one transaction, a look at an endpoint changes nothing, a
# warm-up's records stay out of every level, quality, validation, the tables, a report or a price
# cache are rewritten whole, check and the branch tasks only read, retention and the janitor delete
# only what has expired. Not plan (a second attempt folder), deploy (a second endpoint if the first
# try failed after its create call) or the budget's approval (a person's answer is final); the
# sweep takes one (llm_benchmark). Read when the DAG files are parsed.
def transient_retries() -> dict[str, Any]:
    from llmbench.settings import settings

    s = settings("retries", "retry_delay_s")
    return {
        "retries": s.retries,
        "retry_delay": timedelta(seconds=s.retry_delay_s),
        "retry_exponential_backoff": True,
        "max_retry_delay": timedelta(minutes=10),
    }


TRANSIENT_RETRIES: dict[str, Any] = transient_retries()


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
        default_args={"on_failure_callback": [LlmbenchNotifier()]},
        on_failure_callback=[LlmbenchNotifier()],
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


def _aws_hook(conn_id: str, region: str, client_type: str):
    from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

    return AwsBaseHook(aws_conn_id=conn_id, client_type=client_type, region_name=region)


def warehouse_dsn(run_dir: str) -> str | None:
    """The DSN of the warehouse connection the run's config names (None for DuckDB): postgresql://
    for kind postgres, redshift:// (same driver, Redshift's dialect) for kind redshift."""
    from llmbench.pipeline import load_plan

    settings = load_plan(run_dir).warehouse
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
    extra = extra.get("warehouse") or extra  # the contract nests it; events before it did not
    if extra.get("kind") == "postgres":
        return postgres_dsn(extra["conn_id"])
    if extra.get("kind") == "redshift":
        return redshift_dsn(extra["conn_id"])
    return extra.get("path")


def landed(triggering_asset_events: Any) -> list[Any]:
    """The triggering Asset events' extras as the contract reads them (PublishedAsset), oldest
    first; an event from before the contract (no run_key) is skipped. A malformed one is refused
    in one line (pydantic's first error)."""
    from pydantic import ValidationError

    from llmbench.errors import InputError
    from llmbench.schemas.asset import PublishedAsset

    out = []
    for events in (triggering_asset_events or {}).values():
        for event in events:
            extra = dict(getattr(event, "extra", None) or {})
            if "run_key" not in extra:
                continue
            try:
                out.append(PublishedAsset.model_validate(extra))
            except ValidationError as e:
                err = e.errors()[0]
                where = ".".join(map(str, err["loc"]))
                msg = str(err["msg"]).removeprefix("Value error, ")
                raise InputError(f"Asset event extra: {where + ': ' if where else ''}{msg}") from None
    return out


def executor_name() -> str | None:
    """Airflow's [core] executor (None when unset)."""
    from airflow.configuration import conf

    return conf.get("core", "executor", fallback=None)


def use_results_store(root: str | None, conn_id: str = "aws_default") -> None:
    """Reach an object store holding the results (llmbench.store) through an Airflow connection:
    the filesystem of Airflow's ObjectStoragePath for the root, handed to the library for this
    task's process. A local root needs nothing."""
    if not root or "://" not in root:
        return
    from airflow.sdk import ObjectStoragePath

    from llmbench.store import use_filesystem

    use_filesystem(root, ObjectStoragePath(root, conn_id=conn_id).fs)


def use_results_store_of(planned: list[dict[str, Any]]) -> None:
    """use_results_store for a planned run (every target names the same store)."""
    if planned:
        use_results_store(planned[0].get("results_root"), planned[0].get("results_conn_id") or "aws_default")


def budget_approval(task_id: str, gate_task_id: str) -> Any:
    """The budget gate's approval: the standard provider's ApprovalOperator (Airflow >= 3.1),
    answered in the UI (Required Actions) or through the REST API (PATCH .../hitlDetails). Its
    subject and body are the gate's (pipeline.budget_gate, pushed by `gate_task_id` as XCom
    "gate"). A rejection, or no answer within LLMBENCH_BUDGET_APPROVAL_TIMEOUT_H, fails it in one
    line (pipeline.budget_refusal): the tasks after it never deploy (upstream failed), and
    price_performance, which runs whatever happened, skips (budget_refused)."""
    import inspect

    from llmbench.settings import settings

    try:
        from airflow.providers.standard.exceptions import HITLRejectException, HITLTimeoutError
        from airflow.providers.standard.operators.hitl import ApprovalOperator
    except ImportError:  # an Airflow (or standard provider) older than human-in-the-loop: one line, no import error
        logging.getLogger("llmbench").warning(
            "llmbench: this Airflow has no approval operator (apache-airflow>=3.1 and its standard provider): "
            "a run over its budget is refused instead of waiting for an approval"
        )
        return _refuse_over_budget(task_id, gate_task_id)

    hours = settings("budget_approval_timeout_h").budget_approval_timeout_h
    # fail_on_reject came with a later standard provider: without it, execute_complete below refuses
    fails_on_reject = "fail_on_reject" in inspect.signature(ApprovalOperator.__init__).parameters

    class BudgetApproval(ApprovalOperator):
        def execute_complete(self, context: Any, event: dict[str, Any]) -> Any:
            from llmbench import pipeline

            gate = context["ti"].xcom_pull(task_ids=gate_task_id, key="gate")
            who = (event.get("responded_by_user") or {}).get("name") or "someone"
            try:
                result = super().execute_complete(context=context, event=event)
            except HITLTimeoutError:
                raise pipeline.budget_refusal(gate, f"no answer within {hours:g} h") from None
            except HITLRejectException:
                raise pipeline.budget_refusal(gate, f"rejected by {who}") from None
            chosen = result.get("chosen_options") if isinstance(result, dict) else None
            if chosen and "Approve" not in chosen:  # a provider without fail_on_reject returns a rejection
                raise pipeline.budget_refusal(gate, f"rejected by {who}")
            return result

    xcom = f"ti.xcom_pull(task_ids='{gate_task_id}', key='gate')"
    return BudgetApproval(
        task_id=task_id,
        subject="{{ " + xcom + "['subject'] }}",
        body="{{ " + xcom + "['body'] }}",
        response_timeout=timedelta(hours=hours),
        retries=0,  # a person's answer (or the timeout) is final: a retry would ask again
        # caught above: a rejection fails the task in our one line
        **({"fail_on_reject": True} if fails_on_reject else {}),
    )


def _refuse_over_budget(task_id: str, gate_task_id: str) -> Any:
    """The budget approval where Airflow has none: a run over its budget fails in one line."""
    from airflow.sdk import task

    @task(task_id=task_id, retries=0)
    def refuse_over_budget(**context: Any) -> None:
        from llmbench import pipeline

        gate = context["ti"].xcom_pull(task_ids=gate_task_id, key="gate")
        raise pipeline.budget_refusal(gate, "this Airflow cannot ask for an approval (apache-airflow>=3.1)")

    return refuse_over_budget()


def budget_refused(ti: Any, gate_task_id: str, approval_task_id: str) -> bool:
    """The run's budget gate asked for an approval and none came (rejected, or no answer): the
    approval task pushed no response."""
    gate = ti.xcom_pull(task_ids=gate_task_id, key="gate") or {}
    return bool(gate.get("needs_approval")) and ti.xcom_pull(task_ids=approval_task_id) is None


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


def alert_of(context: dict[str, Any]) -> dict[str, Any]:
    """The alert for a failure: a task's (the context has its task instance) or a DAG run's."""
    from llmbench.redaction import redact

    ti: Any = context.get("ti") or context.get("task_instance")
    exc = context.get("exception")
    # redacted: an exception's text may quote an API key or a DSN's password (a webhook is no vault)
    why = f"{type(exc).__name__} {redact(str(exc))[:500]}" if exc else redact(str(context.get("reason") or ""))[:500]
    if ti is not None:
        return {
            "text": f"llmbench: {ti.dag_id}.{ti.task_id} failed in run {ti.run_id}: {why}".strip(),
            "dag_id": ti.dag_id,
            "task_id": ti.task_id,
            "map_index": ti.map_index,
            "run_id": ti.run_id,
        }
    run: Any = context.get("dag_run")
    dag_id = getattr(run, "dag_id", None) or getattr(context.get("dag"), "dag_id", "?")
    run_id = getattr(run, "run_id", "?")
    return {"text": f"llmbench: DAG {dag_id} run {run_id} failed: {why}".strip(), "dag_id": dag_id, "run_id": run_id}


class LlmbenchNotifier(BaseNotifier):
    """The one Notifier every llmbench DAG alerts through, on a task's failure and on a DAG run's,
    and (with `text`) a missed deadline, from the triggerer: POST a JSON alert (redacted) to the URL
    of the HTTP connection `llmbench_alerts` (a Slack/Teams/PagerDuty webhook or your own relay);
    without that connection, log it. Never raises: an alert that cannot be sent must not hide the
    failure it reports."""

    template_fields = ()

    def __init__(self, text: str | None = None, dag_id: str | None = None) -> None:
        super().__init__()
        self.text, self.dag_id = text, dag_id

    def notify(self, context: Any) -> None:
        send_alert(alert_of(dict(context)) if self.text is None else {"text": self.text, "dag_id": self.dag_id})

    async def async_notify(self, context: Any) -> None:
        """On the triggerer (a DeadlineAlert's callback): the same alert, sent from a thread."""
        import asyncio

        await asyncio.to_thread(self.notify, context or {})


def in_dags_test() -> bool:
    """This process is `airflow dags test` (make run, the integration tests): one process runs the
    whole DAG, task after task, and a trigger in line, blocking every other task until it fires."""
    import sys

    return sys.argv[1:3] == ["dags", "test"]


def weekly_deadline(dag_id: str) -> Any:
    """The DeadlineAlert of the weekly run: not finished LLMBENCH_DEADLINE_H hours after it was
    queued, the Notifier alerts from the triggerer. None, said in one logged line, where this
    Airflow has no deadlines (before 3.1)."""
    from llmbench.settings import settings

    # `airflow dags test` (make run, the integration tests) runs the DAG from its parsed object, whose
    # `deadline` is the DeadlineAlert itself, not the ids a scheduler's serialized DAG holds: Airflow
    # 3.3's DagRun.update_state then looks the alert up by that object and the run crashes at its
    # first step ("'dict' object has no attribute 'hex'"). One in-process run has no scheduler to
    # miss a deadline anyway.
    if in_dags_test():
        logging.getLogger("llmbench").info("llmbench: airflow dags test: the weekly run's deadline is off")
        return None
    try:
        from airflow.sdk import AsyncCallback, DeadlineAlert, DeadlineReference  # type: ignore[attr-defined]  # lazy exports
    except ImportError:
        logging.getLogger("llmbench").warning(
            "llmbench: this Airflow has no DeadlineAlert (apache-airflow>=3.1): a late weekly run does not alert"
        )
        return None
    hours = settings("deadline_h").deadline_h
    text = f"llmbench: {dag_id}: a run is not finished {hours:g} h after it was queued (LLMBENCH_DEADLINE_H)"
    return DeadlineAlert(
        reference=DeadlineReference.DAGRUN_QUEUED_AT,
        interval=timedelta(hours=hours),
        callback=AsyncCallback(LlmbenchNotifier, kwargs={"text": text, "dag_id": dag_id}),
    )


def send_alert(alert: dict[str, Any]) -> None:
    """To the `llmbench_alerts` connection's webhook, else the log; never raises."""
    import json
    import urllib.request

    from airflow.sdk import BaseHook

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


# -- Waits that defer to the triggerer (issue 45) --------------------------------------------------
# A deploy waiting for a quota and a readiness wait hold no worker slot and no pool slot (a pool
# counts no deferred task unless told to): the task defers to WaitTrigger, which looks with the
# target's own backend every `poke_s` on the triggerer, and the task resumes on a worker when the
# look says go. They replace reschedule-mode sensors, which apache/airflow#71172 (open) fails as
# "killed externally" under the CeleryExecutor when a poke's success reaches the scheduler late.


def look(kind: str, target: dict[str, Any], handle: dict[str, Any] | None) -> tuple[bool, str]:
    """One look of a wait, with the target's backend (its connections from Airflow), in whichever
    process runs it (a worker, the triggerer): (go on, what holds it). Raises what the backend
    raises (a failed endpoint, a readiness timeout passed)."""
    from llmbench import pipeline

    use_results_store_of([target])
    if kind in ("quota", "capacity"):  # "capacity": a trigger serialized before the rename
        busy = pipeline.quota_busy(target, **backend_kwargs(target))
        return busy is None, busy or ""
    ready = pipeline.check_ready(target, handle or {}, **backend_kwargs(target))
    return ready, "" if ready else "starting"


class WaitTrigger(BaseTrigger):
    """Waits on the triggerer until `look(kind, target, handle)` says go: the backend's look is
    sync (boto3, HTTP), so it runs in a thread, every `poke_s`, the first after one interval (the
    task looked just before it deferred). The event: {"go": True}, or {"error": "<Type>: <message>"}
    when a look raised (the task then fails with it and its retries apply)."""

    def __init__(self, kind: str, target: dict[str, Any], handle: dict[str, Any] | None, poke_s: float) -> None:
        super().__init__()
        self.kind, self.target, self.handle, self.poke_s = kind, target, handle, poke_s

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{__name__}.WaitTrigger",
            {"kind": self.kind, "target": self.target, "handle": self.handle, "poke_s": self.poke_s},
        )

    async def run(self) -> Any:
        import asyncio

        while True:
            await asyncio.sleep(self.poke_s)
            try:
                go, why = await asyncio.to_thread(look, self.kind, self.target, self.handle)
            except Exception as e:  # noqa: BLE001 (the task fails with it, on a worker)
                yield TriggerEvent({"error": f"{type(e).__name__}: {e}"})
                return
            if go:
                yield TriggerEvent({"go": True})
                return
            self.log.info("%s: waiting (%s): %s", self.target.get("label"), self.kind, why)


class _WaitingOperator(BaseOperator):
    """What a deferred wait's operators share: the mapped target (and handle) as template fields,
    resolved per mapped instance, and the instance labelled as the DAG's map_index_template reads."""

    template_fields: Sequence[str] = ("target", "handle")

    def __init__(self, *, target: Any, handle: Any = None, poke_s: float, wait: timedelta, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target, self.handle, self.poke_s, self.wait = target, handle, poke_s, wait

    def _defer(self, kind: str, since: float) -> None:
        import time
        from datetime import UTC, datetime

        left_s = self.wait.total_seconds() - (time.time() - since)
        if left_s <= 0:
            from llmbench.backends.base import DeployError

            raise DeployError(f"{self.target['label']}: still waiting ({kind}) after {self.wait}")
        if in_dags_test():
            # dags test would run the trigger in line and block the other targets' tasks, the very
            # ones a quota wait waits for: the task looks again later instead (no Celery here,
            # so apache/airflow#71172 cannot strike). Each look then bounds the wait afresh; the
            # run's own timeout bounds it as a whole.
            from airflow.sdk.exceptions import AirflowRescheduleException

            raise AirflowRescheduleException(datetime.now(tz=UTC) + timedelta(seconds=self.poke_s))
        self.defer(
            trigger=WaitTrigger(kind, self.target, self.handle, self.poke_s),
            method_name="resume",
            kwargs={"since": since},
            timeout=timedelta(seconds=left_s),
        )

    @staticmethod
    def _failed(event: dict[str, Any]) -> None:
        if "error" in event:
            from llmbench.backends.base import DeployError

            raise DeployError(event["error"])


class DeployWithinQuotaOperator(_WaitingOperator):
    """deploy when the backend's quota has room (pipeline.deploy_within_quota); while it has none,
    deferred to the triggerer, then a look again on a worker (in the pool: one deploy at a time
    takes the last unit of quota). Returns the handle, as deploy does."""

    def execute(self, context: Any) -> Any:
        import time

        return self.resume(context, since=time.time())

    def resume(self, context: Any, since: float, event: dict[str, Any] | None = None) -> Any:
        from llmbench import pipeline

        context["target_label"] = self.target["label"]
        self._failed(event or {})
        use_results_store_of([self.target])
        handle = pipeline.deploy_within_quota(self.target, **backend_kwargs(self.target))
        if handle is None:
            self._defer("quota", since)
        return handle


class WaitReadyOperator(_WaitingOperator):
    """The endpoint's readiness (pipeline.check_ready): one look on the worker, then deferred to
    the triggerer until it is ready; fails when the endpoint failed or its ready timeout passed."""

    def execute(self, context: Any) -> bool:
        import time

        context["target_label"] = self.target["label"]
        if not look("ready", self.target, self.handle)[0]:
            self._defer("ready", time.time())
        return True

    def resume(self, context: Any, since: float, event: dict[str, Any] | None = None) -> bool:
        context["target_label"] = self.target["label"]
        self._failed(event or {})
        return True
