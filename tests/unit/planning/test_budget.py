"""Issue 43 item 4: the budget gate's decision. Plan's estimate above the budget (the config's
`budget.max_usd`, or the Param budget_usd over it) asks for an approval; at or under it, or
without a budget, or in a reprocess (nothing is deployed), it does not."""

import pytest
import yaml

from llmbench import pipeline
from llmbench.planning.config import ConfigError, load_config
from llmbench.planning.plan import plan
from llmbench.paths import CONFIG_DIR


def _plan(tmp_path, budget=None, params=None):
    cfg = yaml.safe_load((CONFIG_DIR / "local.yaml").read_text())
    if budget is not None:
        cfg["budget"] = budget
    path = tmp_path / "b.yaml"
    path.write_text(yaml.safe_dump(cfg))
    run = plan(str(path), "2026-12-01", params, runs_root=tmp_path / "runs")
    return [t.model_dump(mode="json") for t in run.targets], run


def test_over_the_configs_budget_asks_and_says_what_it_would_cost(tmp_path):
    targets, run = _plan(tmp_path, {"max_usd": 0.001})
    assert run.estimated_usd > 0.001  # two local targets, four levels of eight requests each
    gate = pipeline.budget_gate(targets)
    assert gate["needs_approval"] and gate["max_usd"] == 0.001 and gate["estimated_usd"] == run.estimated_usd
    assert gate["subject"] == f"llmbench local-2026-12-01: ${run.estimated_usd:.2g} estimated, budget $0.001"
    assert gate["body"].count("| local-cpu-2c / smollm2-135m-instruct / llama-server-") == 2
    said = str(pipeline.budget_refusal(gate, "rejected by ana"))
    assert said.startswith(f"local-2026-12-01: estimated ${run.estimated_usd:.2g} is above the budget of $0.001 and "
                           "was not approved (rejected by ana); nothing was deployed") and "\n" not in said
    assert not pipeline.budget_gate(targets, "reprocess")["needs_approval"]  # a reprocess deploys nothing


def test_at_or_under_the_budget_or_without_one_nothing_waits(tmp_path):
    targets, run = _plan(tmp_path)
    assert run.budget is None and not pipeline.budget_gate(targets)["needs_approval"]
    targets, run = _plan(tmp_path, {"max_usd": 1000})
    assert not pipeline.budget_gate(targets)["needs_approval"]
    targets, run = _plan(tmp_path, {"max_usd": 1000}, {"budget_usd": 0.0001})  # the Param wins
    assert run.budget.max_usd == 0.0001 and pipeline.budget_gate(targets)["needs_approval"]
    targets, run = _plan(tmp_path, None, {"budget_usd": run.estimated_usd * 10})
    assert not pipeline.budget_gate(targets)["needs_approval"]


def test_a_budget_that_cannot_be_one_is_refused_in_one_line(tmp_path):
    cfg = yaml.safe_load((CONFIG_DIR / "local.yaml").read_text())
    cfg["budget"] = {"max_usd": 0}
    path = tmp_path / "b.yaml"
    path.write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConfigError, match=r"budget\.max_usd"):
        load_config(str(path))


def test_what_cannot_work_across_hosts_is_refused_at_plan_in_one_line(tmp_path):
    """Issue 42 item 3: under an executor that spreads tasks over hosts, a DuckDB file or a local
    results folder on a worker's disk is refused, naming the fix; one process, or a disk every
    worker shares, allows them."""
    from llmbench.planning.checks import check_distributed

    _, run = _plan(tmp_path)
    for executor in (None, "LocalExecutor", "airflow.executors.local_executor.LocalExecutor"):
        check_distributed(run, executor)
    check_distributed(run, "CeleryExecutor", shared_disk=True)
    with pytest.raises(ConfigError, match=r"^warehouse: a DuckDB file on a worker's disk .* CeleryExecutor's .* "
                                          r"publish to PostgreSQL or Redshift"):
        check_distributed(run, "CeleryExecutor")
    pg = run.model_copy(update={"warehouse": run.warehouse.model_copy(update={"kind": "postgres"})})
    with pytest.raises(ConfigError, match=r"^results: a folder on a worker's disk .* KubernetesExecutor's .* "
                                          r"s3://bucket/prefix"):
        check_distributed(pg, "airflow.providers.cncf.kubernetes.executors.kubernetes_executor.KubernetesExecutor")
    check_distributed(pg.model_copy(update={"results_root": "s3://bench/llmbench"}), "CeleryExecutor")
