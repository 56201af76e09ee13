"""How long raw results are kept: the data folder's retention.

Raw results (each attempt's run folder: request records, events, logs) are what a reprocess
recomputes history from (llmbench.results.reprocess), so by default they are kept forever. The setting
LLMBENCH_RAW_RESULTS_WEEKS (a whole number of weeks, or unset / "all") bounds them: the DAG's
prune_raw_results task and `llmbench prune` delete attempt folders planned longer ago than that.
Age is when an attempt was planned (measured), not its logical date: a backfill of last year
measured today is today's raw results. A published run whose folder was pruned stays in the
warehouse; a reprocess skips it, saying so.

Retention never leaves the data folder and never fails a run: a symlink under runs/ is never
followed (a link is not an attempt), and an attempt whose plan.json does not read, or that will
not delete, is skipped with one line (`say`).
"""

from __future__ import annotations

import logging
import shutil
import stat
from collections.abc import Callable
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


log = logging.getLogger(__name__)


def _is_real_dir(p: Path) -> bool:
    """A folder itself, not a symlink to one (lstat: the link is never followed)."""
    try:
        return stat.S_ISDIR(p.lstat().st_mode)
    except OSError:
        return False


def _attempts(root: Path, say: Callable[[str], None]) -> list[Path]:
    """runs/<run key>/<stamp>/ folders, found without following a symlink at either level."""
    if not _is_real_dir(root):
        return []
    out = []
    for key in sorted(root.iterdir()):
        if not _is_real_dir(key):
            if key.is_symlink():
                say(f"retention: skipped {key}: a symlink (never followed)")
            continue
        try:
            listed = sorted(key.iterdir())
        except OSError as e:
            say(f"retention: skipped {key}: {type(e).__name__}: {e.strerror or e}")
            continue
        for attempt in listed:
            if _is_real_dir(attempt):
                out.append(attempt)
            elif attempt.is_symlink():
                say(f"retention: skipped {attempt}: a symlink (never followed)")
    return out


def expired_attempts(
    weeks: int,
    runs_root: Path | None = None,
    now: datetime | None = None,
    say: Callable[[str], None] | None = None,
) -> list[Path]:
    """Attempt folders (runs/<run key>/<stamp>/) planned more than `weeks` weeks before `now`;
    one that cannot be read is skipped with one line to `say` (default: a logged warning)."""
    say = say or log.warning
    root = runs_root or paths.runs_dir()
    try:
        cutoff = (now or datetime.now(UTC)) - timedelta(weeks=weeks)
    except OverflowError:  # before year 1: nothing is that old
        return []
    old = []
    for attempt in _attempts(root, say):
        plan_path = attempt / "plan.json"
        if not plan_path.exists():
            continue  # a plan is written before anything else: a folder without one is not an attempt
        try:
            # the plan as measured when a reprocess rewrote plan.json: planned_at is the same in both
            planned_at = datetime.fromisoformat(RunPlan.load(attempt).planned_at)
            expired = planned_at < cutoff
        except Exception as e:  # noqa: BLE001 (unreadable, invalid, naive date: skip it, never fail the run)
            say(f"retention: skipped {attempt}: plan.json unreadable ({type(e).__name__})")
            continue
        if expired:
            old.append(attempt)
    return old


def prune_raw_results(
    weeks: int | None,
    runs_root: Path | None = None,
    now: datetime | None = None,
    dry_run: bool = False,
    say: Callable[[str], None] | None = None,
) -> list[Path]:
    """Delete the attempts older than the retention (none when weeks is None); returns those
    deleted. One that will not delete is skipped with one line to `say`, and the rest go on."""
    if weeks is None:
        return []
    say = say or log.warning
    old = expired_attempts(weeks, runs_root, now, say)
    if dry_run:
        return old
    removed = []
    for attempt in old:
        try:
            if not _is_real_dir(attempt):  # swapped for a link since it was listed
                raise NotADirectoryError("no longer a folder")
            shutil.rmtree(attempt)  # never follows a symlink inside it: the link alone goes
            removed.append(attempt)
            if not any(attempt.parent.iterdir()):
                attempt.parent.rmdir()  # the run key's folder, once its last attempt is gone
        except OSError as e:
            say(f"retention: skipped {attempt}: {type(e).__name__}: {e.strerror or e}")
    return removed
