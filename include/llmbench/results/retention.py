"""How long raw results are kept: the data folder's retention.

Raw results (each attempt's run folder: request records, events, logs) are what a reprocess
recomputes history from (llmbench.results.reprocess), so by default they are kept forever. The setting
LLMBENCH_RAW_RESULTS_WEEKS (a whole number of weeks, or unset / "all") bounds them: the DAG's
prune_raw_results task and `llmbench prune` delete attempt folders planned longer ago than that.
Age is when an attempt was planned (measured), not its logical date: a backfill of last year
measured today is today's raw results. A published run whose folder was pruned stays in the
warehouse; a reprocess skips it, saying so.

Retention bounds storage, so it deletes a published attempt's raw results too once they are old
enough; the rows stay in the warehouse. An attempt the run key's latest publish still reads (its
own, and the attempts of the targets it kept from earlier runs: llmbench.results.union) is pruned
to a tombstone rather than deleted: its plan.json, its published.json and `pruned.json` (when, and
why) stay, a few hundred bytes. Without them the next partial re-run of that date would not know
the other targets were published and would replace their rows with nothing; with them it stops
in one line (union.UnionSourceMissing) and publishes nothing, and a reprocess of that date skips
it in one line (reprocess.RawResultsMissing). A tombstone no publish reads any more (a later
full run replaced it) is deleted whole.

Retention never leaves the data folder and never fails a run: a symlink under runs/ is never
followed (a link is not an attempt), and an attempt whose plan.json does not read, or that will
not delete, is skipped with one line (`say`).
"""

from __future__ import annotations

import json
import logging
import shutil
import stat
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from llmbench import paths
from llmbench.results.union import PRUNED_FILE, PUBLISHED_FILE, in_use, in_use_in_store, published_record
from llmbench.schemas.targets import RunPlan
from llmbench.settings import env_var, settings
from llmbench.store import ResultsStore

RAW_RESULTS_WEEKS_ENV = env_var("raw_results_weeks")
TOMBSTONE = ("plan.json", PUBLISHED_FILE, PRUNED_FILE)  # what a tombstone keeps


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
    if not old:
        return old
    # a tombstone is listed again only once no publish reads it (then it goes whole)
    read = {key: in_use(key) for key in {a.parent for a in old if pruned(a)}}  # resolved folders
    return [a for a in old if not (pruned(a) and a.resolve() in read[a.parent])]


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
    # what each run key's latest publish reads, before anything is deleted
    read = {key: in_use(key) for key in {a.parent for a in old}}
    removed = []
    for attempt in old:
        try:
            if not _is_real_dir(attempt):  # swapped for a link since it was listed
                raise NotADirectoryError("no longer a folder")
            if attempt.resolve() in read[attempt.parent]:
                _tombstone(attempt, now)
                say(f"retention: pruned {attempt} to a tombstone: the run key's published rows came from it")
            else:
                shutil.rmtree(attempt)  # never follows a symlink inside it: the link alone goes
                if not any(attempt.parent.iterdir()):
                    attempt.parent.rmdir()  # the run key's folder, once its last attempt is gone
            removed.append(attempt)
        except OSError as e:
            say(f"retention: skipped {attempt}: {type(e).__name__}: {e.strerror or e}")
    return removed


def _pruned_record(now: datetime | None) -> str:
    return json.dumps(
        {
            "pruned_at": (now or datetime.now(UTC)).isoformat(),
            "why": "raw results older than the retention (LLMBENCH_RAW_RESULTS_WEEKS); the rows stay published",
        }
    )


def _tombstone(attempt: Path, now: datetime | None) -> None:
    """Delete the attempt's raw results, keeping what says it was published (see the module doc)."""
    if not (attempt / PUBLISHED_FILE).exists():  # published before records existed: its tables say what
        record = published_record(attempt)
        if record is not None:
            (attempt / PUBLISHED_FILE).write_text(record.to_json())
    (attempt / PRUNED_FILE).write_text(_pruned_record(now))
    for child in attempt.iterdir():
        if child.name in TOMBSTONE:
            continue
        if _is_real_dir(child):
            shutil.rmtree(child)
        else:
            child.unlink()


def pruned(attempt: Path) -> bool:
    """The attempt is a tombstone: retention deleted its raw results."""
    return (attempt / PRUNED_FILE).exists()


def prune_store(
    store: ResultsStore,
    weeks: int | None,
    now: datetime | None = None,
    dry_run: bool = False,
    say: Callable[[str], None] | None = None,
) -> list[str]:
    """Retention in an object store (llmbench.store): every attempt (listed, never globbed)
    planned more than `weeks` weeks before `now` is deleted, object by object, or pruned to its
    tombstone when the latest publish reads it. Returns the URIs of the attempts pruned (or,
    dry_run, that would be)."""
    if weeks is None:
        return []
    say = say or log.warning
    try:
        cutoff = (now or datetime.now(UTC)) - timedelta(weeks=weeks)
    except OverflowError:
        return []
    removed = []
    layout = store.layout
    for date_dir in store.list_dirs(layout.runs_prefix()):
        for key_dir in store.list_dirs(date_dir):
            read = in_use_in_store(store, layout.name_of(key_dir))
            for attempt in store.list_dirs(key_dir):
                tombstone = store.exists(f"{attempt}/{PRUNED_FILE}")
                if tombstone and attempt in read:
                    continue
                try:
                    planned_at = datetime.fromisoformat(
                        json.loads(store.get_text(f"{attempt}/plan.json"))["planned_at"]
                    )
                    expired = planned_at < cutoff
                except Exception as e:  # noqa: BLE001 (unreadable: skip it, never fail the run)
                    say(f"retention: skipped {store.uri(attempt)}: plan.json unreadable ({type(e).__name__})")
                    continue
                if not expired:
                    continue
                if attempt in read:
                    if not dry_run:
                        store.put_text(f"{attempt}/{PRUNED_FILE}", _pruned_record(now))
                        for key in store.list_keys(attempt):
                            if key.rsplit("/", 1)[-1] not in TOMBSTONE or key.count("/") != attempt.count("/") + 1:
                                store.delete(key)
                    say(
                        f"retention: pruned {store.uri(attempt)} to a tombstone: "
                        "the run key's published rows came from it"
                    )
                elif not dry_run:
                    store.delete(attempt)
                removed.append(store.uri(attempt))
    return removed
