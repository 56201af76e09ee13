"""How long raw results are kept: the data folder's retention.

Raw results (each attempt's run folder: request records, events, logs) are what a reprocess
recomputes history from (llmbench.results.reprocess), so by default they are kept forever. The setting
LLMBENCH_RAW_RESULTS_WEEKS (a whole number of weeks, or unset / "all") bounds them: the DAG's
prune_raw_results task and `llmbench prune` delete attempt folders planned longer ago than that.
Age is when an attempt was planned (measured), not its logical date: a backfill of last year
measured today is today's raw results. A published run whose folder was pruned stays in the
warehouse; a reprocess skips it, saying so.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from llmbench import paths
from llmbench.schemas.targets import RunPlan
from llmbench.settings import env_var, settings

RAW_RESULTS_WEEKS_ENV = env_var("raw_results_weeks")


def raw_results_weeks() -> int | None:
    """The retention setting: None keeps everything; else weeks >= 1. SettingsError, a ValueError
    (one line), otherwise."""
    return settings("raw_results_weeks").raw_results_weeks


def expired_attempts(weeks: int, runs_root: Path | None = None, now: datetime | None = None) -> list[Path]:
    """Attempt folders (runs/<run key>/<stamp>/) planned more than `weeks` weeks before `now`."""
    root = runs_root or paths.runs_dir()
    cutoff = (now or datetime.now(UTC)) - timedelta(weeks=weeks)
    old = []
    for plan_path in sorted(root.glob("*/*/plan.json")):
        # the plan as measured when a reprocess rewrote plan.json: planned_at is the same in both
        planned_at = datetime.fromisoformat(RunPlan.load(plan_path.parent).planned_at)
        if planned_at < cutoff:
            old.append(plan_path.parent)
    return old


def prune_raw_results(
    weeks: int | None, runs_root: Path | None = None, now: datetime | None = None, dry_run: bool = False
) -> list[Path]:
    """Delete the attempts older than the retention (none when weeks is None); returns them."""
    if weeks is None:
        return []
    old = expired_attempts(weeks, runs_root, now)
    if not dry_run:
        for attempt in old:
            shutil.rmtree(attempt)
            if not any(attempt.parent.iterdir()):
                attempt.parent.rmdir()  # the run key's folder, once its last attempt is gone
    return old
