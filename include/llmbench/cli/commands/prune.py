"""`llmbench prune`: delete raw results older than the retention (LLMBENCH_RAW_RESULTS_WEEKS, or
--weeks; llmbench.results.retention)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from llmbench.settings import env_var, parse_weeks


def _weeks(s: str) -> int:
    try:
        return parse_weeks(s)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_parser(sub: Any) -> None:
    pr = sub.add_parser("prune", help=f"delete raw results older than the retention ({env_var('raw_results_weeks')})")
    pr.add_argument("--weeks", type=_weeks, help="override the setting for this call (whole weeks >= 1)")
    pr.add_argument("--dry-run", action="store_true", help="list what would go; delete nothing")
    pr.set_defaults(func=run)


def run(a: argparse.Namespace) -> int:
    from llmbench.results.retention import RAW_RESULTS_WEEKS_ENV, prune_raw_results, raw_results_weeks

    weeks = a.weeks if a.weeks is not None else raw_results_weeks()  # SettingsError: exit 2
    if weeks is None:
        print(f"llmbench prune: raw results are kept for ever ({RAW_RESULTS_WEEKS_ENV} unset; or pass --weeks)")
        return 0
    removed = prune_raw_results(weeks, dry_run=a.dry_run, say=lambda m: print(m, file=sys.stderr))
    for attempt in removed:
        print(f"{'would remove' if a.dry_run else 'removed'} {attempt}")
    print(f"{len(removed)} attempt folder(s) planned more than {weeks} week(s) ago")
    return 0
