"""DAG integrity: the DAGs import cleanly, light, and wire what DESIGN.md draws."""

import subprocess
import sys

from .conftest import ROOT


def test_no_import_errors(dagbag):
    assert dagbag.import_errors == {}
    assert "llm_benchmark" in dagbag.dag_ids


def test_llm_benchmark_shape(dagbag):
    dag = dagbag.dags["llm_benchmark"]
    ids = set(dag.task_ids)
    assert {
        "plan", "target.deploy", "target.wait_ready", "target.warm_up", "target.sweep", "target.validate",
        "target.teardown_target", "price_performance", "publish", "report", "check",
    } <= ids
    assert dag.catchup is False
    assert set(dag.params.keys()) == {"config", "targets", "concurrency", "requests_per_level"}
    deploy, teardown = dag.get_task("target.deploy"), dag.get_task("target.teardown_target")
    assert deploy.is_setup and teardown.is_teardown
    assert "target.deploy" in teardown.upstream_task_ids  # paired with its setup
    for t in ("deploy", "wait_ready", "warm_up", "sweep", "validate"):
        assert dag.get_task(f"target.{t}").pool == "llmbench_local"
    assert dag.get_task("price_performance").trigger_rule == "all_done"
    assert "target.teardown_target" in dag.get_task("price_performance").upstream_task_ids
    assert dag.get_task("publish").outlets, "publish must emit an Asset"
    # check is the only leaf that decides the run's state
    leaves = {t.task_id for t in dag.leaves if not t.is_teardown}
    assert leaves == {"check"}
    assert dag.get_task("check").trigger_rule == "all_success"


def test_dag_module_has_no_heavy_top_level_imports():
    code = (
        "import sys; import airflow.sdk; before = set(sys.modules);"
        f"sys.path.insert(0, {str(ROOT / 'dags')!r}); import llm_benchmark;"
        "new = set(sys.modules) - before;"
        "heavy = sorted(m for m in new if m.split('.')[0] in "
        "('pandas', 'great_expectations', 'boto3', 'duckdb', 'pyarrow', 'llmbench', 'matplotlib'));"
        "print(heavy); sys.exit(1 if heavy else 0)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
