"""A task's local working copy of what it reads from the results store, uploaded when it is done.

The code that measures, validates and tabulates reads and writes files in a run folder (the LEGACY
layout: <run dir>/<target id>/...). On a local store that folder is the store itself and nothing
is copied. On an object store a task gets a fresh temporary folder mirroring that layout: the
objects it needs are downloaded into it, the code runs on it unchanged, and every file it added or
changed is uploaded, whole, when the task ends, also when it failed (its events and the records
measured before a failure are results too). Then the folder is deleted.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from llmbench.store.base import ResultsStore

__all__ = ["Mirror", "mirror"]

log = logging.getLogger("llmbench")

# Written and read by one task on its own host; never a result (a write in progress, a socket).
NOT_UPLOADED = (".tmp", ".sock", ".lock")


# The folders of an attempt that are not a target's.
ATTEMPT_FOLDERS = ("tables",)


class Mirror:
    """A local folder (LEGACY names) <-> a prefix in the store: an attempt's (`levels`
    ("target",): its folders are targets) or a run key's (("attempt", "target")). What was
    downloaded is remembered, so that only what a task added or changed goes back up."""

    def __init__(self, store: ResultsStore, prefix: str, local: Path, levels: tuple[str, ...] = ("target",)):
        self.store, self.prefix, self.local, self.levels = store, prefix.strip("/"), local, levels
        self._seen: dict[str, tuple[int, int]] = {}

    def rel_of(self, key: str) -> str:
        """The local path (relative to the copy) of an object under the prefix."""
        return self._rel(key)

    def _rel(self, key: str) -> str:
        parts = key[len(self.prefix) :].strip("/").split("/")
        for i in range(min(len(self.levels), len(parts) - 1)):
            parts[i] = self.store.layout.name_of(parts[i])
        return "/".join(parts)

    def _key(self, rel: str) -> str:
        parts = rel.split("/")
        for i, field in enumerate(self.levels[: len(parts) - 1]):
            if field == "target" and parts[i] in ATTEMPT_FOLDERS:
                break
            if self.store.layout.hive:
                parts[i] = f"{field}={parts[i]}"
        return f"{self.prefix}/{'/'.join(parts)}"

    def pull(self, target_id: str | None = None, attempt_files: bool = False) -> int:
        """Download everything under the prefix; or (an attempt's mirror) one target's objects
        and, with attempt_files, the attempt's own files (plan.json, tables/, the report); or,
        with attempt_files and no target, those alone. Returns how many."""
        if target_id is None:
            keys = self.store.list_keys(self.prefix)
            if attempt_files:  # the attempt's own files only
                keys = [k for k in keys if self._is_attempt_file(k)]
        else:
            keys = self.store.list_keys(self.store.layout.target(self.prefix, target_id))
            if attempt_files:
                keys += [k for k in self.store.list_keys(self.prefix) if self._is_attempt_file(k)]
        for key in keys:
            rel = self._rel(key)
            path = self.local / rel
            self.store.get_file(key, path)
            st = path.stat()
            self._seen[rel] = (st.st_size, st.st_mtime_ns)
        return len(keys)

    def uri_of(self, local: str | Path) -> str:
        """The store URI of a file or folder of the local copy (anything else: as given)."""
        try:
            rel = Path(local).relative_to(self.local)
        except ValueError:
            return str(local)
        if str(rel) == ".":
            return self.store.uri(self.prefix)
        if not Path(local).is_dir():  # a file (or one not written yet): named as the file it is
            return self.store.uri(self._key(str(rel)))
        return self.store.uri(self._key(f"{rel}/_")[: -len("/_")])

    def _is_attempt_file(self, key: str) -> bool:
        parts = key[len(self.prefix) :].strip("/").split("/")
        return len(parts) == 1 or parts[0] in ATTEMPT_FOLDERS

    def push(self) -> int:
        """Upload every file added or changed since the pull, and delete the objects of files the
        task removed (or renamed). Returns how many objects it wrote or deleted."""
        n = 0
        if not self.local.is_dir():
            return 0
        for rel in [r for r in self._seen if not (self.local / r).exists()]:
            self.store.delete(self._key(rel))
            del self._seen[rel]
            n += 1
        for path in sorted(p for p in self.local.rglob("*") if p.is_file() and not p.is_symlink()):
            if path.name.endswith(NOT_UPLOADED):
                continue
            rel = str(path.relative_to(self.local))
            st = path.stat()
            if self._seen.get(rel) == (st.st_size, st.st_mtime_ns):
                continue
            self.store.put_file(path, self._key(rel))
            self._seen[rel] = (st.st_size, st.st_mtime_ns)
            n += 1
        return n


@contextmanager
def mirror(
    store: ResultsStore,
    prefix: str,
    target_id: str | None = None,
    attempt_files: bool = False,
    levels: tuple[str, ...] = ("target",),
    local_name: str = "attempt",
) -> Iterator[Mirror]:
    """A fresh local folder (named local_name, in a new temporary folder) mirroring `prefix`,
    pulled as Mirror.pull says, pushed back when the block ends whatever happened in it, then
    deleted."""
    scratch = Path(tempfile.mkdtemp(prefix="llmbench-scratch-"))
    m = Mirror(store, prefix, scratch / local_name, levels)
    m.local.mkdir(parents=True)
    try:
        m.pull(target_id, attempt_files)
        try:
            yield m
        finally:
            pushed = m.push()
            log.debug("uploaded %d file(s) to %s", pushed, store.uri(prefix))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
