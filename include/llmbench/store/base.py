"""ResultsStore: put, get, list and delete objects under one root, on the local disk or in an
object store, through fsspec. Keys are '/'-separated, relative to the root.

An object is whole or absent: a local write goes to a temporary file in the same folder, renamed
over the key when complete; an object-store upload is one PUT (or a multipart upload, which S3
makes visible only when completed); `writer()` stages what a caller writes in a local file and
uploads it only if the block ends without an error. A missing object is ObjectMissing, one line
naming its URI.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from llmbench.errors import LlmbenchError
from llmbench.store.layout import HIVE, LEGACY, Layout


class StoreError(LlmbenchError, RuntimeError):
    """The results store cannot be used as named (one line: the URI and what failed)."""


class ObjectMissing(StoreError, FileNotFoundError):
    """An object a task needs is not in the results store."""


# Filesystems the platform provides for store roots (the DAG: its Airflow connection's, through
# ObjectStoragePath), looked up by root URI; otherwise fsspec's default for the protocol.
_FILESYSTEMS: dict[str, Any] = {}


def use_filesystem(root: str, fs: Any) -> None:
    """Reach the store at `root` (and anything under it) with `fs` in this process."""
    _FILESYSTEMS[str(root).rstrip("/")] = fs


def _is_uri(root: str) -> bool:
    return "://" in root and not root.startswith("file://")


class ResultsStore:
    """The results store at `root` (a local folder, or a URI such as s3://bucket/prefix). `fs`:
    the fsspec filesystem to reach it with (the DAG passes its Airflow connection's); default:
    fsspec's for the URI's protocol, configured by the standard environment."""

    def __init__(self, root: str | Path, fs: Any = None, layout: Layout | None = None):
        raw = str(root).removeprefix("file://")
        self.remote = _is_uri(raw)
        if self.remote:
            import fsspec

            protocol, _, rest = raw.partition("://")
            self.protocol = protocol
            self.root = rest.strip("/")
            given = next((f for r, f in _FILESYSTEMS.items() if raw.rstrip("/").startswith(r)), None)
            self.fs = fs if fs is not None else given if given is not None else fsspec.filesystem(protocol)
        else:
            self.protocol = "file"
            self.root = str(Path(raw).absolute())
            self.fs = None
        # an object store is laid out for Athena and Glue (key=value folders); a local folder as before
        self.layout = layout or (HIVE if self.remote else LEGACY)

    # ---- names ---------------------------------------------------------------------------------

    def uri(self, key: str = "") -> str:
        """The object's URI (a local store: its absolute path)."""
        key = key.strip("/")
        if self.remote:
            return f"{self.protocol}://{self.root}/{key}" if key else f"{self.protocol}://{self.root}"
        return str(Path(self.root, key)) if key else self.root

    def key_of(self, uri: str | Path) -> str:
        """The key of a URI (or local path) under this store's root; StoreError if it is not under it."""
        text = str(uri).removeprefix("file://")
        base = self.uri()
        if text == base:
            return ""
        if not text.startswith(base.rstrip("/") + "/"):
            raise StoreError(f"{text} is not in the results store {base}")
        return text[len(base.rstrip("/")) + 1 :].strip("/")

    def _path(self, key: str) -> str:
        return f"{self.root}/{key.strip('/')}" if key.strip("/") else self.root

    def local_path(self, key: str = "") -> Path:
        """A local store's file for `key` (StoreError for an object store: copy it to scratch)."""
        if self.remote:
            raise StoreError(f"{self.uri(key)} is in an object store, not on this disk")
        return Path(self.root, key.strip("/"))

    # ---- reads ---------------------------------------------------------------------------------

    def exists(self, key: str) -> bool:
        if self.remote:
            return bool(self.fs.exists(self._path(key)))
        return self.local_path(key).exists()

    def get_bytes(self, key: str) -> bytes:
        try:
            if self.remote:
                return bytes(self.fs.cat_file(self._path(key)))
            return self.local_path(key).read_bytes()
        except FileNotFoundError:
            raise ObjectMissing(f"{self.uri(key)}: no such object in the results store") from None

    def get_text(self, key: str) -> str:
        return self.get_bytes(key).decode()

    def get_file(self, key: str, local: Path) -> Path:
        local.parent.mkdir(parents=True, exist_ok=True)
        try:
            if self.remote:
                self.fs.get_file(self._path(key), str(local))
            else:
                shutil.copy2(self.local_path(key), local)
        except FileNotFoundError:
            raise ObjectMissing(f"{self.uri(key)}: no such object in the results store") from None
        return local

    def list_keys(self, prefix: str = "") -> list[str]:
        """Every object's key under `prefix` (recursively), sorted; [] when there is none."""
        prefix = prefix.strip("/")
        if self.remote:
            base = self._path(prefix)
            try:
                found = self.fs.find(base)
            except FileNotFoundError:
                return []
            root = self.root + "/"
            return sorted(p[len(root) :] if p.startswith(root) else p for p in found)
        top = self.local_path(prefix)
        if top.is_file():
            return [prefix]
        if not top.is_dir():
            return []
        out = []
        for dirpath, _dirs, files in os.walk(top):  # symlinks to folders are not followed
            for f in files:
                if ".tmp-" in f:  # a write in progress: not an object yet
                    continue
                out.append(str(Path(dirpath, f).relative_to(self.root)))
        return sorted(out)

    def list_dirs(self, prefix: str) -> list[str]:
        """The immediate sub-folders (common prefixes) of `prefix`, as keys, sorted."""
        prefix = prefix.strip("/")
        if self.remote:
            try:
                entries = self.fs.ls(self._path(prefix), detail=True)
            except FileNotFoundError:
                return []
            root = self.root + "/"
            return sorted(e["name"][len(root) :].strip("/") for e in entries if e["type"] == "directory")
        top = self.local_path(prefix)
        if not top.is_dir():
            return []
        return sorted(f"{prefix}/{p.name}".strip("/") for p in top.iterdir() if p.is_dir() and not p.is_symlink())

    # ---- writes --------------------------------------------------------------------------------

    def put_bytes(self, key: str, data: bytes) -> str:
        """Write an object whole (or leave it as it was). Returns its URI."""
        if self.remote:
            self.fs.pipe_file(self._path(key), data)
            return self.uri(key)
        out = self.local_path(key)
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.tmp-", dir=out.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, out)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return str(out)

    def put_text(self, key: str, text: str) -> str:
        return self.put_bytes(key, text.encode())

    def put_file(self, local: Path, key: str) -> str:
        """Upload a complete local file as an object. Returns its URI."""
        if self.remote:
            self.fs.put_file(str(local), self._path(key))
            return self.uri(key)
        out = self.local_path(key)
        if out.resolve() == Path(local).resolve():
            return str(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.tmp-", dir=out.parent)
        os.close(fd)
        try:
            shutil.copy2(local, tmp)
            os.replace(tmp, out)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return str(out)

    @contextmanager
    def writer(self, key: str) -> Iterator[IO[bytes]]:
        """A file to write an object through: uploaded when the block ends, not at all if it
        raises (no half-written object, and the previous version, if any, stays)."""
        with tempfile.TemporaryDirectory(prefix="llmbench-put-") as d:
            staged = Path(d) / Path(key).name
            with staged.open("wb") as f:
                yield f
            self.put_file(staged, key)

    def delete(self, prefix: str) -> int:
        """Delete every object under `prefix` (or the object itself). Returns how many."""
        keys = self.list_keys(prefix)
        if not keys:
            return 0
        if self.remote:
            self.fs.rm([self._path(k) for k in keys])
        else:
            top = self.local_path(prefix)
            if top.is_dir() and not top.is_symlink():
                shutil.rmtree(top)
            else:
                top.unlink(missing_ok=True)
        return len(keys)


def open_store(uri: str | Path | None = None, fs: Any = None) -> ResultsStore:
    """The results store named by `uri`, else LLMBENCH_RESULTS_URI, else the local data folder."""
    from llmbench import paths
    from llmbench.settings import settings

    named = uri or settings("results_uri").results_uri
    return ResultsStore(named if named else paths.data_home(), fs)
