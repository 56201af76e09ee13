"""Which code computed a published row: `computed_by` on `runs`.

The package version alone does not change when a metric definition, a validation rule or a
pricing formula does between releases, so the version carries a fingerprint of the code that
turns raw results into tables: every module of the package (the test servers under testing/
aside) and the warehouse's SQL. Two runs with the same `computed_by` were computed the same way;
the week-over-week view compares only those (v_week_over_week.comparable).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Literal

from llmbench import __version__, paths


@cache
def code_version() -> str:
    """'<version>+<12 hex digits>': the version and a SHA-256 over the computing code's files,
    in path order (read once per process)."""
    digest = hashlib.sha256()
    files = [
        p
        for p in paths.PACKAGE_DIR.rglob("*")
        if p.suffix in (".py", ".sql") and "testing" not in p.relative_to(paths.PACKAGE_DIR).parts
    ]
    for p in sorted(files):
        digest.update(str(p.relative_to(paths.PACKAGE_DIR.parent)).encode())
        digest.update(b"\0")
        digest.update(p.read_bytes())
    return f"{__version__}+{digest.hexdigest()[:12]}"


COMPUTATION_FILE = "computation.json"  # written by a reprocess: who recomputed the run's tables


@dataclass(frozen=True)
class Computation:
    """Which code computed a run's published tables, and when (columns of `runs`)."""

    computed_by: str
    computed_at: str
    computation: Literal["measure", "reprocess"]
    prices: Literal["frozen", "current"] | None = None  # a reprocess: whose prices; a measurement: None

    @classmethod
    def of_run(cls, run_dir: str | Path) -> Computation:
        """A reprocessed run's record of it; else the measurement, computed now by this code."""
        p = Path(run_dir) / COMPUTATION_FILE
        if p.exists():
            return cls(**json.loads(p.read_text()))
        return cls(code_version(), datetime.now(UTC).isoformat(), "measure")
