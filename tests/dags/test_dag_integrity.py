"""DAG integrity: the DAGs import cleanly, light, and wire what docs/dag.md draws."""

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
                                      "warehouse_conn_id", "mode", "prices"}
    for g in groups:
        deploy, teardown = dag.get_task(f"{g}.deploy"), dag.get_task(f"{g}.teardown_target")
        assert deploy.is_setup and teardown.is_teardown
        assert f"{g}.deploy" in teardown.upstream_task_ids  # paired with its setup
        assert f"{g}.teardown_target" in dag.get_task("price_performance").upstream_task_ids
        assert dag.get_task(f"{g}.sweep").max_active_tis_per_dagrun >= 1
        for s in stages:  # nothing waits forever
            assert dag.get_task(f"{g}.{s}").execution_timeout is not None or s in ("deploy", "wait_ready"), (g, s)
    # Local targets share the machine: every measuring task holds the one local slot.
    for s in stages[:-1]:
        assert dag.get_task(f"local.{s}").pool == "llmbench_local"
    # ... and a local target's deploy waits (slot handed back) while another's server is alive.
    assert dag.get_task("local.deploy").mode == "reschedule"
    # No reschedule-mode sensor looks again within 20 s: a late executor success for the previous
    # look would fail it (apache/airflow#71172).
    for t in dag.tasks:
        if getattr(t, "mode", None) == "reschedule":
            assert t.poke_interval >= 20, t.task_id
    # SageMaker: deploys one at a time (atomic quota check), waits that hand their slot back.
    sm_deploy, sm_wait = dag.get_task("sagemaker.deploy"), dag.get_task("sagemaker.wait_ready")
    assert sm_deploy.pool == "llmbench_sagemaker_deploy"
    assert sm_deploy.mode == sm_wait.mode == "reschedule" and sm_deploy.timeout and sm_wait.timeout
    assert dag.get_task("sagemaker.sweep").pool == "default_pool"
    # EC2: the same shape, its own deploy pool (instance quotas are per instance type, per service)
    ec2_deploy, ec2_wait = dag.get_task("ec2.deploy"), dag.get_task("ec2.wait_ready")
    assert ec2_deploy.pool == "llmbench_ec2_deploy"
    assert ec2_deploy.mode == ec2_wait.mode == "reschedule" and ec2_deploy.timeout and ec2_wait.timeout
    # an endpoint that already runs, a per-token API: nothing to create, no capacity to guard
    for g in ("openai", "bedrock"):
        assert {dag.get_task(f"{g}.{s}").pool for s in stages} == {"default_pool"}
    # Correctness after warm-up, before the timed levels, in every group
    for g in groups:
        assert dag.get_task(f"{g}.quality").upstream_task_ids >= {f"{g}.warm_up"}
        assert f"{g}.quality" in dag.get_task(f"{g}.sweep").upstream_task_ids
    assert dag.get_task("price_performance").trigger_rule == "all_done"
    assert dag.get_task("publish").outlets, "publish must emit an Asset"
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


def test_the_dashboard_writes_the_history_page_after_the_summary(dagbag):
    dag = dagbag.dags["llmbench_dashboard"]
    assert {t.task_id for t in dag.tasks} == {"refresh_summary", "write_history"}
    assert dag.get_task("write_history").upstream_task_ids == {"refresh_summary"}
