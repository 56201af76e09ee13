"""DAG integrity: the DAGs import cleanly, light, and wire what docs/dag.md draws."""

import os
import subprocess
import sys

from .conftest import ROOT


def test_no_import_errors(dagbag):
    assert dagbag.import_errors == {}
    assert {"llm_benchmark", "llmbench_dashboard", "llmbench_janitor", "llmbench_prices"} <= set(dagbag.dag_ids)


def test_the_regional_dags_share_one_shape(dagbag):
    for dag_id, per_region in (("llmbench_janitor", "sweep_expired"), ("llmbench_prices", "refresh")):
        dag = dagbag.dags[dag_id]
        assert set(dag.params.keys()) == {"aws_conn_id", "regions"} and dag.max_active_runs == 1
        assert {t.task_id for t in dag.tasks} == {"regions", per_region}
        assert "regions" in dag.get_task(per_region).upstream_task_ids


def test_llm_benchmark_shape(dagbag):
    dag = dagbag.dags["llm_benchmark"]
    stages = ("deploy", "wait_ready", "warm_up", "quality", "sweep", "validate", "teardown_target")
    groups = ("local", "sagemaker", "ec2", "openai", "bedrock")  # one mapped group per backend kind
    assert {"plan", "price_performance", "publish", "report", "prune_raw_results", "check"} | {
        f"{g}_targets" for g in groups} | {
        f"{g}.{s}" for g in groups for s in stages} <= set(dag.task_ids)
    assert dag.catchup is False and dag.dagrun_timeout is not None
    assert set(dag.params.keys()) == {"config", "targets", "concurrency", "requests_per_level",
                                      "warehouse_conn_id", "mode", "prices", "budget_usd"}
    for g in groups:
        deploy, teardown = dag.get_task(f"{g}.deploy"), dag.get_task(f"{g}.teardown_target")
        assert deploy.is_setup and teardown.is_teardown
        assert f"{g}.deploy" in teardown.upstream_task_ids  # paired with its setup
        assert f"{g}.teardown_target" in dag.get_task("price_performance").upstream_task_ids
        assert dag.get_task(f"{g}.sweep").max_active_tis_per_dagrun >= 1
        for s in stages:  # nothing waits forever
            assert dag.get_task(f"{g}.{s}").execution_timeout is not None, (g, s)
    # Local targets share the machine: every measuring task holds the one local slot.
    for s in stages[:-1]:
        assert dag.get_task(f"local.{s}").pool == "llmbench_local"
    # Waits defer to the triggerer (issue 45): no reschedule-mode sensor is left (apache/airflow
    # #71172 fails one as killed externally when a poke's success reaches the scheduler late).
    assert not [t.task_id for t in dag.tasks if getattr(t, "mode", None) == "reschedule"]
    from llmbench_airflow import DeployWithinQuotaOperator, WaitReadyOperator

    # ... a local target's deploy waits (deferred, its slot handed back) while another's server is alive.
    assert isinstance(dag.get_task("local.deploy"), DeployWithinQuotaOperator)
    # SageMaker: deploys one at a time (atomic quota check), waits that hand their slot back.
    # EC2: the same shape, its own deploy pool (instance quotas are per instance type, per service)
    for g, deploy_pool in (("sagemaker", "llmbench_sagemaker_deploy"), ("ec2", "llmbench_ec2_deploy")):
        deploy, wait = dag.get_task(f"{g}.deploy"), dag.get_task(f"{g}.wait_ready")
        assert isinstance(deploy, DeployWithinQuotaOperator) and isinstance(wait, WaitReadyOperator)
        assert deploy.pool == deploy_pool and wait.pool == "default_pool"
        # the whole wait is bounded, each look (one try) too, and a look that failed is retried
        assert deploy.wait.total_seconds() > 0 and wait.wait.total_seconds() > 0
        assert deploy.poke_s > 0 and wait.poke_s > 0
        assert deploy.execution_timeout and wait.execution_timeout and wait.retries >= 1
    assert dag.get_task("sagemaker.sweep").pool == "default_pool"
    # an endpoint that already runs, a per-token API: nothing to create, no capacity to guard
    for g in ("openai", "bedrock"):
        assert {dag.get_task(f"{g}.{s}").pool for s in stages} == {"default_pool"}
    # Correctness after warm-up, before the timed levels, in every group
    for g in groups:
        assert dag.get_task(f"{g}.quality").upstream_task_ids >= {f"{g}.warm_up"}
        assert f"{g}.quality" in dag.get_task(f"{g}.sweep").upstream_task_ids
    assert dag.get_task("price_performance").trigger_rule == "all_done"
    # the Asset is emitted by check alone, after it passed (issue 43: the Asset is a contract)
    assert [t.task_id for t in dag.tasks if t.outlets] == ["check"]
    assert "publish" in dag.get_task("check").upstream_task_ids
    # check is the only leaf that decides the run's state
    leaves = {t.task_id for t in dag.leaves if not t.is_teardown}
    assert leaves == {"check"}
    assert dag.get_task("check").trigger_rule == "all_success"


def test_pools_the_dag_uses_are_in_the_checked_in_pool_file(dagbag):
    import json

    declared = set(json.loads((ROOT / "deploy" / "pools.json").read_text()))
    used = {t.pool for d in dagbag.dags.values() for t in d.tasks} - {"default_pool"}
    assert used <= declared


def test_dag_module_has_no_heavy_top_level_imports():
    """The DAG reads the backend registry when parsed (its per-kind groups): models and constants,
    nothing of the library beyond them (no backend class, pipeline, load generator)."""
    # errors and settings (LLMBENCH_SCHEDULE, LLMBENCH_START_DATE) need pydantic alone, which the SDK loads
    light = ("llmbench.backends", "llmbench.schemas", "llmbench.paths", "llmbench.errors", "llmbench.settings")
    code = (
        "import sys; import airflow.sdk; before = set(sys.modules);"
        f"sys.path.insert(0, {str(ROOT / 'dags')!r}); import llm_benchmark;"
        "new = set(sys.modules) - before;"
        "heavy = sorted(m for m in new if m.split('.')[0] in "
        "('pandas', 'great_expectations', 'boto3', 'botocore', 'duckdb', 'pyarrow', 'matplotlib', 'aiohttp')"
        f" or (m.startswith('llmbench.') and not m.startswith({light!r}))"
        " or m.endswith('.backend'));"
        "print(heavy); sys.exit(1 if heavy else 0)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_dashboard_checks_what_landed_then_writes_the_summary_and_the_history_page(dagbag):
    dag = dagbag.dags["llmbench_dashboard"]
    assert {t.task_id for t in dag.tasks} == {"check_landed", "refresh_summary", "write_history", "notify_regressions"}
    assert dag.get_task("refresh_summary").upstream_task_ids == {"check_landed"}
    assert dag.get_task("notify_regressions").upstream_task_ids == {"check_landed"}
    assert dag.get_task("write_history").upstream_task_ids == {"refresh_summary"}


def test_tasks_that_can_fail_transiently_retry_with_backoff_and_the_others_do_not(dagbag):
    """Issues 43 and 45: every task safe to run again retries with a growing delay (the stages
    rewrite what they write, check and the branches only read, publish replaces its run key); a
    sweep once (a worker lost mid-sweep: issue 42's kill test); plan (a second attempt folder),
    deploy (a second endpoint) and the budget's approval (a person's answer) never."""
    from llmbench_airflow import TRANSIENT_RETRIES

    dag = dagbag.dags["llm_benchmark"]
    groups = ("local", "ec2", "sagemaker", "openai", "bedrock")
    never = {"plan", "approve_budget"} | {f"{g}.deploy" for g in groups}
    once = {f"{g}.sweep" for g in groups}
    for task in dag.tasks:
        if task.task_id in never:
            assert task.retries == 0, task.task_id
        elif task.task_id in once:
            assert task.retries == 1, task.task_id
        elif task.is_teardown:  # its own: twice, a minute apart (nothing is left running)
            assert task.retries == 2, task.task_id
        elif task.task_id != "within_budget":  # an EmptyOperator: nothing runs
            assert task.retries == TRANSIENT_RETRIES["retries"] >= 3, task.task_id
            assert task.retry_exponential_backoff and task.max_retry_delay is not None, task.task_id
    others = [(dagbag.dags["llmbench_janitor"], "sweep_expired"), (dagbag.dags["llmbench_prices"], "refresh")]
    others += [(dagbag.dags["llmbench_dashboard"], t.task_id) for t in dagbag.dags["llmbench_dashboard"].tasks]
    for d, task_id in others:
        assert d.get_task(task_id).retries == TRANSIENT_RETRIES["retries"], (d.dag_id, task_id)


def test_the_budget_gate_stands_between_plan_and_every_deploy(dagbag):
    """Issue 43 item 4: plan -> budget (a branch) -> approve_budget (the standard provider's
    ApprovalOperator) or within_budget -> every kind's targets; a rejection fails the approval, so
    nothing after it deploys, and price_performance (all_done) waits for the gate and skips."""
    from airflow.providers.standard.operators.hitl import ApprovalOperator

    dag = dagbag.dags["llm_benchmark"]
    approve = dag.get_task("approve_budget")
    assert isinstance(approve, ApprovalOperator) and approve.fail_on_reject
    assert approve.response_timeout is not None
    assert dag.get_task("budget").upstream_task_ids == {"plan"}
    assert dag.get_task("budget").downstream_task_ids == {"approve_budget", "within_budget"}
    for g in ("local", "sagemaker", "ec2", "openai", "bedrock"):
        targets = dag.get_task(f"{g}_targets")
        assert {"approve_budget", "within_budget"} <= targets.upstream_task_ids
        assert targets.trigger_rule == "none_failed_min_one_success"
    after = {t.task_id for t in approve.get_flat_relatives(upstream=False)}
    assert {"local.deploy", "price_performance", "publish", "check"} <= after
    assert {"approve_budget", "within_budget"} <= dag.get_task("price_performance").upstream_task_ids


def test_sweeps_run_on_the_queue_the_setting_names_and_on_the_default_queue_without_it(dagbag):
    """LLMBENCH_SWEEP_QUEUE (deploy/helm/values.yaml sets it): every sweep task, and only the
    sweeps, go to that queue; unset, they stay on the default queue like every other task."""
    default = {t.queue for t in dagbag.dags["llm_benchmark"].tasks}
    assert len(default) == 1, default
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'dags')!r}); sys.path.insert(0, {str(ROOT / 'plugins')!r});"
        "import llm_benchmark;"
        "d = llm_benchmark.llm_benchmark();"
        "print(sorted({(t.task_id.split('.')[-1], t.queue) for t in d.tasks if t.queue == 'sweeps'}))"
    )
    env = {**os.environ, "LLMBENCH_SWEEP_QUEUE": "sweeps"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1] == str([("sweep", "sweeps")])


def test_the_weekly_run_has_a_deadline_that_alerts_through_the_notifier(dagbag, monkeypatch):
    """Issue 45: a run not finished LLMBENCH_DEADLINE_H hours (default 36) after it was queued
    alerts, from the triggerer, through the one Notifier; its async path reaches the webhook."""
    import asyncio
    from datetime import timedelta

    from llmbench.testing._serve import alert_webhook

    dag = dagbag.dags["llm_benchmark"]
    (alert,) = dag.deadline if isinstance(dag.deadline, list) else [dag.deadline]
    assert alert.interval == timedelta(hours=36)
    from airflow.sdk import DeadlineReference

    assert alert.reference == DeadlineReference.DAGRUN_QUEUED_AT
    text = alert.callback.kwargs["text"]
    assert text == "llmbench: llm_benchmark: a run is not finished 36 h after it was queued (LLMBENCH_DEADLINE_H)"

    sys.path.insert(0, str(ROOT / "plugins"))
    import llmbench_airflow

    with alert_webhook() as (conn, alerts):
        monkeypatch.setenv("AIRFLOW_CONN_LLMBENCH_ALERTS", conn)
        asyncio.run(llmbench_airflow.LlmbenchNotifier(**alert.callback.kwargs).async_notify({}))
    assert alerts == [{"text": text, "dag_id": "llm_benchmark"}]


def test_the_runs_timeout_is_never_below_the_sum_of_one_targets_stage_timeouts(dagbag):
    """Issue 45: dagrun_timeout (12 h before) was shorter than the stage timeouts it bounds."""
    from datetime import timedelta

    dag = dagbag.dags["llm_benchmark"]
    approval = dag.get_task("approve_budget").response_timeout
    for group in ("local", "sagemaker", "ec2", "openai", "bedrock"):
        chain = [dag.get_task(f"{group}.{s}") for s in
                 ("deploy", "wait_ready", "warm_up", "quality", "sweep", "validate", "teardown_target")]
        bounds = [timedelta(seconds=t.timeout) if getattr(t, "mode", None) == "reschedule" else t.execution_timeout
                  for t in chain]
        assert all(b is not None for b in bounds), (group, bounds)
        assert dag.dagrun_timeout >= approval + sum(bounds, timedelta()), (group, dag.dagrun_timeout, bounds)
