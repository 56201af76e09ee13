"""Issue 44: the DAGs support apache-airflow>=3.1,<4, and a feature a user's Airflow lacks degrades
in one logged line, never an import error. The budget gate's approval needs the standard provider's
human-in-the-loop operator: without it a run over its budget is refused instead of waiting. The
weekly run's DeadlineAlert (issue 45) needs deadlines: without them there is none."""

import builtins
import logging
import sys

import pendulum
import pytest

from .conftest import ROOT

GATE = {"run_key": "local-2026-09-14", "estimated_usd": 0.00033, "max_usd": 0.0001, "needs_approval": True}


class _TI:  # what the task reads from its task instance: the gate's XCom
    def xcom_pull(self, task_ids=None, key=None):
        assert (task_ids, key) == ("budget", "gate")
        return GATE


def test_without_the_approval_operator_an_over_budget_run_is_refused_in_one_line(monkeypatch):
    sys.path.insert(0, str(ROOT / "plugins"))
    import llmbench_airflow
    from airflow.sdk import DAG

    from llmbench.pipeline import BudgetNotApproved

    real_import = builtins.__import__

    def no_hitl(name, *args, **kwargs):  # an Airflow whose standard provider predates HITL
        if name.startswith("airflow.providers.standard.operators.hitl"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_hitl)
    said: list[logging.LogRecord] = []
    catch = logging.Handler(logging.WARNING)
    catch.emit = said.append  # type: ignore[method-assign]
    logger = logging.getLogger("llmbench")
    monkeypatch.setattr(logger, "handlers", [catch])  # this test's lines only, once each
    monkeypatch.setattr(logger, "propagate", False)
    monkeypatch.setattr(logger, "level", logging.WARNING)
    with DAG("degraded", start_date=pendulum.datetime(2026, 1, 1)):
        approval = llmbench_airflow.budget_approval("approve_budget", "budget")
    monkeypatch.setattr(builtins, "__import__", real_import)
    assert [r.getMessage() for r in said] == [
        "llmbench: this Airflow has no approval operator (apache-airflow>=3.1 and its standard provider): "
        "a run over its budget is refused instead of waiting for an approval"]
    op = approval.operator
    assert op.task_id == "approve_budget"
    with pytest.raises(BudgetNotApproved, match=r"^local-2026-09-14: estimated .* was not approved \(this Airflow "
                                                r"cannot ask for an approval"):
        op.python_callable(ti=_TI())


def test_with_the_approval_operator_the_gate_waits_for_an_answer():
    sys.path.insert(0, str(ROOT / "plugins"))
    import llmbench_airflow
    from airflow.providers.standard.operators.hitl import ApprovalOperator
    from airflow.sdk import DAG

    with DAG("gated", start_date=pendulum.datetime(2026, 1, 1)):
        op = llmbench_airflow.budget_approval("approve_budget", "budget")
    assert isinstance(op, ApprovalOperator) and op.task_id == "approve_budget"


def test_without_deadlines_the_weekly_run_has_none_said_in_one_line(monkeypatch):
    sys.path.insert(0, str(ROOT / "plugins"))
    import llmbench_airflow

    real_import = builtins.__import__

    def no_deadlines(name, globals=None, locals=None, fromlist=(), level=0):  # an Airflow before 3.1
        if name == "airflow.sdk" and "DeadlineAlert" in (fromlist or ()):
            raise ImportError("cannot import name 'DeadlineAlert' from 'airflow.sdk'")
        return real_import(name, globals, locals, fromlist, level)

    said: list[logging.LogRecord] = []
    catch = logging.Handler(logging.WARNING)
    catch.emit = said.append  # type: ignore[method-assign]
    logger = logging.getLogger("llmbench")
    monkeypatch.setattr(logger, "handlers", [catch])
    monkeypatch.setattr(logger, "propagate", False)
    monkeypatch.setattr(logger, "level", logging.WARNING)
    monkeypatch.setattr(builtins, "__import__", no_deadlines)
    assert llmbench_airflow.weekly_deadline("llm_benchmark") is None
    monkeypatch.setattr(builtins, "__import__", real_import)
    assert [r.getMessage() for r in said] == [
        "llmbench: this Airflow has no DeadlineAlert (apache-airflow>=3.1): a late weekly run does not alert"]


def test_under_airflow_dags_test_the_weekly_run_has_no_deadline(monkeypatch):
    """`airflow dags test` crashes on a DAG with a DeadlineAlert (Airflow 3.3 looks the alert up by
    the object, not by its serialized id): make run and the integration tests run that way."""
    sys.path.insert(0, str(ROOT / "plugins"))
    import llmbench_airflow

    monkeypatch.setattr(sys, "argv", ["airflow", "dags", "test", "llm_benchmark", "2026-12-06"])
    assert llmbench_airflow.weekly_deadline("llm_benchmark") is None
    monkeypatch.setattr(sys, "argv", ["airflow", "scheduler"])
    assert llmbench_airflow.weekly_deadline("llm_benchmark") is not None
