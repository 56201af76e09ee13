"""Who owns a sweep's folder: each try of a sweep claims it with a fresh token (sweep.owner), and a
try whose token was replaced (a newer try took over: its worker was lost, its process lived on)
stops at its next level in one line instead of writing into the newer try's files."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from llmbench.errors import LlmbenchError

__all__ = ["OWNER_FILE", "SweepSuperseded", "claim", "own", "still_own"]

OWNER_FILE = "sweep.owner"


class SweepSuperseded(LlmbenchError, RuntimeError):
    """A newer try of this sweep took over its folder: this one stops (one line)."""


def claim(out_dir: Path, jsonl_path: Path, requests_path: Path) -> str:
    """This try owns the folder from here (sweep.owner), its requests files begun afresh: an
    earlier try of the same sweep whose worker was lost but whose process lives on (a task
    outlives its killed worker's process group) stops at its next level instead of writing into
    this try's files. Its open files are unlinked, not truncated, so what it still appends lands
    nowhere this try reads: a request is never counted twice."""
    owner = own(out_dir)
    for p in (jsonl_path, requests_path):
        p.unlink(missing_ok=True)
    jsonl_path.write_text("")
    return owner


def own(out_dir: Path) -> str:
    """Claim out_dir for this try of the sweep: a fresh token in OWNER_FILE, written whole."""
    token = f"{os.getpid()}-{uuid.uuid4().hex}"
    tmp = out_dir / f"{OWNER_FILE}.{token}"
    tmp.write_text(token)
    tmp.replace(out_dir / OWNER_FILE)
    return token


def still_own(out_dir: Path, token: str) -> None:
    try:
        now = (out_dir / OWNER_FILE).read_text()
    except OSError:
        now = ""
    if now != token:
        raise SweepSuperseded(f"{out_dir}: a newer try of this sweep ({now or 'none'}) took over its folder; stopping")
