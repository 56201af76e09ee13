"""Fault injection, for fire drills and the fault-matrix tests (tests/integration/test_fault_matrix.py).

Off unless LLMBENCH_CHAOS is set, to a JSON list of faults:

  LLMBENCH_CHAOS='[{"target": "sweep-raises", "stage": "sweep", "action": "raise", "after_records": 4}]'

  target         a substring of the target id the fault applies to
  stage          a pipeline stage (deploy, wait_ready, warm_up, sweep, validate, teardown)
  action         "raise" (InjectedFault) or "kill" (SIGKILL this very process, as an OOM killer or a
                 lost node would: no finally block, no teardown, no Airflow callback runs)
  after_records  sweep only: fire after this many request records were written (default: at the
                 start of the stage)

A drill shows what a real failure at that point leaves behind; nothing here changes what the
pipeline does when the variable is unset.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from llmbench.errors import LlmbenchError
from llmbench.settings import env_var, settings

if TYPE_CHECKING:
    from llmbench.schemas.records import RequestRecord

ENV = env_var("chaos")


class InjectedFault(LlmbenchError, RuntimeError):
    """Raised where LLMBENCH_CHAOS asked for a fault."""


def _faults(target_id: str, stage: str) -> list[dict[str, Any]]:
    faults = settings("chaos").chaos or []
    return [f for f in faults if f["stage"] == stage and f["target"] in target_id]


def _fire(fault: dict[str, Any], where: str) -> None:
    if fault["action"] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    raise InjectedFault(f"injected fault at {where} ({ENV})")


def at_stage(target_id: str, stage: str) -> None:
    """Fire the faults that apply at the start of this stage."""
    for f in _faults(target_id, stage):
        if f.get("after_records") is None:
            _fire(f, stage)


def record_hook(target_id: str) -> Callable[[RequestRecord], None] | None:
    """A callback for the sweep's record stream that fires after N records, or None."""
    faults = [f for f in _faults(target_id, "sweep") if f.get("after_records") is not None]
    if not faults:
        return None
    seen = [0]

    def hook(_record: RequestRecord) -> None:
        seen[0] += 1
        for f in faults:
            if seen[0] == int(f["after_records"]):
                _fire(f, f"sweep after {seen[0]} records")

    return hook
