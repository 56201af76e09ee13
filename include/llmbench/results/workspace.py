"""Where a task works: in the results store's own folders when it is local, or in a local copy of
what it reads from an object store, uploaded when the task ends (llmbench.store.scratch), so that
any task may run on any host (issue 42). The pipeline's tasks open their target's or run's folder
through these (working, run_folder, attempt_handles), read an attempt's plan (load_plan), and find
what earlier attempts left deployed (earlier_attempts locally, earlier_handles_in_store in an
object store)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from llmbench.schemas.targets import ResolvedTarget, RunPlan

__all__ = [
    "attempt_handles",
    "earlier_attempts",
    "earlier_handles_in_store",
    "load_plan",
    "remote_store",
    "run_folder",
    "store_root",
    "working",
]


def remote_store(root: str | None) -> Any:
    """The object store at `root`, or None for a local one (its folders are used in place)."""
    if root is None or "://" not in root:
        return None
    from llmbench.store import open_store

    return open_store(root)


@contextmanager
def working(t: ResolvedTarget, attempt_files: bool = False) -> Iterator[tuple[ResolvedTarget, Callable[[Any], str]]]:
    """(the target as the task works on it, local path -> where it is published). In an object
    store: a local copy of the target's folder (and, with attempt_files, of plan.json and
    tables/), uploaded when the task ends, whatever happened; locally: the folder itself."""
    store = remote_store(t.results_root)
    if store is None:
        yield t, str
        return
    from llmbench.store.scratch import mirror

    with mirror(store, store.key_of(t.run_dir), t.target_id, attempt_files) as m:
        yield t.model_copy(update={"run_dir": str(m.local)}), m.uri_of


def store_root(run_dir: str) -> str | None:
    """The root of the object store an attempt's URI is in (its layout: <root>/runs/date=...)."""
    if "://" not in run_dir:
        return None
    root, found, _ = run_dir.partition("/runs/date=")
    if not found:
        raise ValueError(f"{run_dir}: not an attempt of a results store (<root>/runs/date=.../attempt=...)")
    return root


@contextmanager
def run_folder(run_dir: str, raw: bool = True) -> Iterator[tuple[str, Callable[[Any], str] | None]]:
    """(a local run folder for a run-level task, local path -> its URI or None). In an object
    store: with `raw`, a local copy of every attempt of the run key (tables are built over the
    union, which reads earlier attempts' targets); else of the attempt's own files (plan, tables,
    report); uploaded when the task ends. Locally: the folder itself."""
    store = remote_store(store_root(run_dir))
    if store is None:
        yield run_dir, None
        return
    from llmbench.store.scratch import mirror

    attempt = store.key_of(run_dir)
    if not raw:
        with mirror(store, attempt, attempt_files=True, local_name=store.layout.name_of(attempt)) as m:
            yield str(m.local), m.uri_of
        return
    prefix = attempt.rsplit("/", 1)[0]
    with mirror(store, prefix, levels=("attempt", "target"), local_name=store.layout.name_of(prefix)) as m:
        yield str(m.local / store.layout.name_of(attempt)), m.uri_of


@contextmanager
def attempt_handles(t: ResolvedTarget) -> Iterator[ResolvedTarget]:
    """The target, its run folder holding every target's handle.json and teardown.json of its
    attempt (in an object store: a local copy of just those, read-only); locally as it is."""
    store = remote_store(t.results_root)
    if store is None:
        yield t
        return
    import shutil
    import tempfile

    from llmbench.store.scratch import Mirror

    local = Path(tempfile.mkdtemp(prefix="llmbench-handles-"))
    try:
        m = Mirror(store, store.key_of(t.run_dir), local)
        for key in store.list_keys(m.prefix):
            if key.endswith(("/handle.json", "/teardown.json")):
                store.get_file(key, local / m.rel_of(key))
        yield t.model_copy(update={"run_dir": str(local)})
    finally:
        shutil.rmtree(local, ignore_errors=True)


def load_plan(run_dir: str) -> RunPlan:
    """An attempt's plan, from the results store wherever it is."""
    store = remote_store(store_root(run_dir))
    if store is None:
        return RunPlan.load(run_dir)
    return RunPlan.model_validate_json(store.get_text(f"{store.key_of(run_dir)}/plan.json"))


def earlier_attempts(target: ResolvedTarget) -> list[Path]:
    """Handles of this target that never reached teardown, left by earlier attempts of the same
    run key or by an earlier try of this very deploy (a retry, or the group cleared after a worker
    died): a worker killed mid-run (SIGKILL, lost node) leaves exactly these."""
    return sorted(
        p
        for p in Path(target.run_dir).parent.glob(f"*/{target.target_id}/handle.json")
        if not (p.parent / "teardown.json").exists()
    )


def earlier_handles_in_store(target: ResolvedTarget) -> list[tuple[Any, str]]:
    """(store, target folder key) of this target's handles without a teardown, in every attempt of
    its run key in the object store (this one's included): listed there, never globbed on a disk."""
    store = remote_store(target.results_root)
    if store is None:
        return []
    keys = set(store.list_keys(store.layout.run_key_prefix(target.run_key)))
    wanted = store.layout.target("", target.target_id).strip("/")
    folders = {k.rsplit("/", 1)[0] for k in keys if k.endswith("/handle.json")}
    return [(store, f) for f in sorted(folders) if f.rsplit("/", 1)[-1] == wanted and f"{f}/teardown.json" not in keys]
