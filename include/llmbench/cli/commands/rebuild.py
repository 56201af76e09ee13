"""`llmbench rebuild`: requests.parquet and levels.parquet of a sweep folder again, from its
requests.jsonl (after a crash or kill -9 left the tables unwritten or unreadable)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from llmbench.cli.output import say, summarise
from llmbench.errors import InputError, LlmbenchError


def add_parser(sub: Any) -> None:
    rb = sub.add_parser("rebuild", help="rebuild a sweep folder's tables from its requests.jsonl (after a crash)")
    rb.add_argument("out", help="the sweep's --out folder")
    rb.set_defaults(func=run)


def run(a: argparse.Namespace) -> int:
    from llmbench.loadgen.sweep import rebuild

    out = Path(a.out)
    if not (out / "requests.jsonl").is_file():
        raise InputError(f"{out} holds no requests.jsonl")
    try:
        result, skipped = rebuild(out)
    except OSError as e:
        raise LlmbenchError(f"cannot rebuild {out}: {e.strerror or e}") from e
    if skipped:
        say(f"skipped {skipped} unreadable line(s) of requests.jsonl (a line cut by the kill)")
    if not result.levels:
        raise LlmbenchError(f"{out}/requests.jsonl holds no record")
    return summarise(result)
