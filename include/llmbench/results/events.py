"""A target's stage log: every stage appends its start and outcome to <target dir>/events.jsonl,
so a failed target says where and why, whichever process ran it."""

from __future__ import annotations

import json
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from llmbench import chaos
from llmbench.redaction import redact
from llmbench.schemas.targets import ResolvedTarget

STAGES = ("deploy", "wait_ready", "warm_up", "sweep", "validate", "teardown")


def record_event(target: ResolvedTarget, stage_name: str, status: str, **extra: Any) -> None:
    """Append one event; its text values are redacted (an error may quote a key or a DSN)."""
    target.dir.mkdir(parents=True, exist_ok=True)
    at = datetime.now(UTC).isoformat()
    extra = {k: redact(v) if isinstance(v, str) else v for k, v in extra.items()}
    with (target.dir / "events.jsonl").open("a") as f:
        f.write(json.dumps({"stage": stage_name, "status": status, "at": at, **extra}) + "\n")


def record_failure(target: ResolvedTarget, stage_name: str, e: BaseException) -> None:
    # redacted before it is cut: a cut through a key would leave part of it
    error, trace = redact(f"{type(e).__name__}: {e}"), redact(traceback.format_exc())
    record_event(target, stage_name, "failed", error=error[:2000], traceback=trace[-4000:])


@contextmanager
def stage(target: ResolvedTarget, name: str) -> Iterator[None]:
    """Record a stage's start and outcome; re-raise failures after recording them."""
    record_event(target, name, "started")
    try:
        chaos.at_stage(target.target_id, name)  # a no-op unless LLMBENCH_CHAOS asks for a drill
        yield
    except BaseException as e:  # KeyboardInterrupt / task timeouts too: record, then re-raise
        record_failure(target, name, e)
        raise
    record_event(target, name, "succeeded")


def read_events(target: ResolvedTarget) -> list[dict[str, Any]]:
    p = target.dir / "events.jsonl"
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
