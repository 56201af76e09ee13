"""A date's published result is the union of its attempts' targets (issue 43).

A run (a partial one: the DAG Param or CLI `--targets`, a backfill of one target, a reprocess)
replaces the rows of exactly the targets it ran. Every other target of the run key keeps the
attempt it was last published from: its raw results are read from that attempt's folder, so the
run-level tables (runs, break-even, path comparison, traffic cost, the report's answer) are built
over the whole union, and published in one transaction that replaces the run key's rows.

What was published, and from where, is written beside the attempt that published it
(`published.json`, after the warehouse committed): the run key, the target ids and, for each, the
attempt folder its raw results came from. The next attempt of the same run key starts from the
newest such record. Attempts from before this record existed count as published with their own
targets (their tables say which).

Why raw results rather than the earlier published rows: the run-level figures of the union
(a target's break-even against a per-token target, its managed overhead, the best path per model)
depend on every target at once, and one code computes them all; the raw results of a target are
the facts and never change, so an inherited target's own rows come out as they were published.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from llmbench.errors import LlmbenchError
from llmbench.schemas.targets import ResolvedTarget, RunPlan
from llmbench.store import ResultsStore

__all__ = [
    "PRUNED_FILE",
    "PUBLISHED_FILE",
    "Published",
    "UnionSourceMissing",
    "in_use",
    "in_use_in_store",
    "latest_published",
    "latest_published_in_store",
    "mark_published",
    "published_record",
    "union_plan",
]

PUBLISHED_FILE = "published.json"
PRUNED_FILE = "pruned.json"  # retention's tombstone: the attempt's raw results were deleted (results.retention)


class UnionSourceMissing(LlmbenchError, RuntimeError):
    """An inherited target's raw results are gone: nothing was built (its rows would be lost). One line."""


@dataclass(frozen=True)
class Published:
    """What one publish of a run key put in the warehouse (published.json)."""

    run_key: str
    run_dir: str  # the attempt that published
    targets: dict[str, str]  # target id -> the attempt folder its raw results came from
    replaced: list[str] = field(default_factory=list)  # the targets that attempt itself ran
    published_at: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)


def _attempts(run_key_dir: Path) -> list[Path]:
    """The run key's attempt folders, newest first (their names are UTC stamps: they sort by time)."""
    if not run_key_dir.is_dir():
        return []
    return sorted((p for p in run_key_dir.iterdir() if p.is_dir() and (p / "plan.json").exists()), reverse=True)


def published_record(attempt: Path) -> Published | None:
    """The attempt's record of its publish; for an attempt from before records existed, its own
    tables' targets (each from the folder its row names); None if it never built tables."""
    p = attempt / PUBLISHED_FILE
    if p.exists():  # the folder where it is now (a data folder that moved is read where it is)
        return Published(**{**json.loads(p.read_text()), "run_dir": str(attempt)})
    tables = attempt / "tables" / "targets.parquet"
    if not tables.exists():
        return None
    import pandas as pd

    rows = pd.read_parquet(tables, columns=["run_key", "target_id", "raw_dir"]).to_dict("records")
    if not rows:
        return None
    return Published(
        run_key=str(rows[0]["run_key"]),
        run_dir=str(attempt),
        targets={str(r["target_id"]): str(Path(str(r["raw_dir"])).parent) for r in rows},
        replaced=[str(r["target_id"]) for r in rows],
    )


def latest_published(run_key_dir: Path) -> Published | None:
    """The newest publish of the run key whose attempts live in `run_key_dir`, or None. An attempt
    that wrote a record is preferred over an older one's tables: a record is written only after
    the warehouse committed."""
    legacy = None
    for attempt in _attempts(run_key_dir):
        if (attempt / PUBLISHED_FILE).exists():
            return published_record(attempt)
        if legacy is None:
            legacy = published_record(attempt)
    return legacy


def _source(run_key_dir: Path, folder: str) -> Path:
    """An inherited target's attempt folder: as recorded, else the same attempt under today's
    run key folder (the data folder moved, or a task's local copy of an object store's run key,
    where the recorded folder is a URI ending in attempt=<stamp>)."""
    if "://" in folder:
        return run_key_dir / folder.rstrip("/").rsplit("/", 1)[-1].split("=", 1)[-1]
    d = Path(folder)
    moved = run_key_dir / d.name
    return moved if not d.is_dir() and moved.is_dir() else d


def _inherited_target(folder: Path, target_id: str) -> ResolvedTarget:
    """The target as its attempt planned (or a reprocess rewrote) it, with its folder where it is now."""
    try:
        plan = RunPlan.load(folder)
    except (OSError, ValueError) as e:
        raise UnionSourceMissing(
            f"published target {target_id}: its attempt {folder} has no readable plan.json ({type(e).__name__}); "
            "re-run that target, or restore the folder"
        ) from None
    if (folder / PRUNED_FILE).exists():
        raise UnionSourceMissing(
            f"published target {target_id}: its raw results in {folder} were pruned by retention; "
            "run that target too (or the whole date) to replace its rows"
        )
    mine = [t for t in plan.targets if t.target_id == target_id]
    if not mine:
        raise UnionSourceMissing(f"published target {target_id}: not in the plan of its attempt {folder}")
    target = mine[0].model_copy(update={"run_dir": str(folder)})
    if not target.dir.is_dir():
        raise UnionSourceMissing(
            f"published target {target_id}: its raw results {target.dir} are gone; re-run that target, or restore them"
        )
    return target


def union_plan(run: RunPlan) -> tuple[RunPlan, dict[str, str]]:
    """The run's plan with every other target of its run key added, each from the attempt it was
    last published from, and {target id: attempt folder} for the whole union. The run's own
    targets come first, in plan order; inherited ones follow, sorted by id."""
    own = {t.target_id for t in run.targets}
    here = Path(run.run_dir)
    last = latest_published(here.parent)
    inherited: list[ResolvedTarget] = []
    if last is not None:
        for target_id in sorted(set(last.targets) - own):
            inherited.append(_inherited_target(_source(here.parent, last.targets[target_id]), target_id))
    attempts = {t.target_id: run.run_dir for t in run.targets} | {t.target_id: t.run_dir for t in inherited}
    if not inherited:
        return run, attempts
    return run.model_copy(update={"targets": [*run.targets, *inherited]}), attempts


def mark_published(run_dir: str | Path, frames: dict) -> Published:
    """Record, beside the attempt, what its publish put in the warehouse (after the commit): the
    next attempt of the run key inherits from here. Written whole (a temporary file renamed)."""
    runs = frames["runs"].iloc[0]
    if runs.get("target_attempts") is not None:
        targets = {k: str(v) for k, v in json.loads(runs["target_attempts"]).items()}
        replaced = list(json.loads(runs["targets_replaced"]))
    else:  # tables built before the union: every target is the attempt's own
        targets = {str(t): str(run_dir) for t in frames["targets"]["target_id"]}
        replaced = sorted(targets)
    record = Published(
        run_key=str(runs["run_key"]),
        run_dir=str(run_dir),
        targets=targets,
        replaced=replaced,
        published_at=datetime.now(UTC).isoformat(),
    )
    out = Path(run_dir) / PUBLISHED_FILE
    tmp = out.with_suffix(".tmp")
    tmp.write_text(record.to_json())
    tmp.replace(out)
    return record


def in_use(run_key_dir: Path) -> set[Path]:
    """The attempt folders the run key's latest publish reads raw results from: retention prunes
    them to a tombstone, never deletes them (llmbench.results.retention)."""
    last = latest_published(run_key_dir)
    if last is None:
        return set()
    return {Path(last.run_dir).resolve()} | {_source(run_key_dir, f).resolve() for f in last.targets.values()}


def latest_published_in_store(store: ResultsStore, run_key: str) -> str | None:
    """The key of the newest attempt of a run key in an object store that published (its
    published.json), else the newest that built tables; None if none did. Listed, never globbed."""
    attempts = sorted(store.list_dirs(store.layout.run_key_prefix(run_key)), reverse=True)
    for attempt in attempts:
        if store.exists(f"{attempt}/{PUBLISHED_FILE}"):
            return attempt
    return next((a for a in attempts if store.exists(f"{a}/tables/targets.parquet")), None)


def in_use_in_store(store: ResultsStore, run_key: str) -> set[str]:
    """in_use in an object store: the keys of the attempts the run key's latest publish reads."""
    last = latest_published_in_store(store, run_key)
    if last is None:
        return set()
    keep = {last}
    try:
        record = json.loads(store.get_text(f"{last}/{PUBLISHED_FILE}"))
    except Exception:  # noqa: BLE001 (no record: tables from before records; only its own targets)
        return keep
    return keep | {store.key_of(f) for f in record.get("targets", {}).values() if "://" in f}
