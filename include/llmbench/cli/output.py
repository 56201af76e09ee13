"""What every command shares: progress lines, tables, the argument types of comma lists, and a
sweep's summary (sweep and rebuild print it)."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime

from llmbench.analysis.columns import LEVEL_COLUMNS
from llmbench.errors import SomeRequestsFailed
from llmbench.redaction import for_terminal, redact


def floats(s: str) -> list[float]:
    try:
        return [float(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {s!r}") from None


def ints(s: str) -> list[int]:
    try:
        return [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {s!r}") from None


def safe(text: object) -> str:
    """Text for the terminal: no credentials, and a server's control characters (ESC sequences,
    OSC 52 clipboard writes, carriage returns) shown escaped, never acted on."""
    return for_terminal(redact(str(text)))


def say(msg: str) -> None:
    """A progress line on stderr, "[hh:mm:ss] ..." (the one-line errors never start with "[")."""
    stamp = datetime.now().strftime("%H:%M:%S")
    print(f"[{stamp}] {safe(msg)}", file=sys.stderr, flush=True)


def print_frame(df, columns: list[str]) -> None:
    import pandas as pd

    with pd.option_context("display.width", 250, "display.max_columns", 50, "display.float_format", "{:,.3f}".format):
        print(df[[c for c in columns if c in df.columns]].to_string(index=False))


def summarise(result) -> int:
    """Print a sweep's level table and files: 0 if every request succeeded, else SomeRequestsFailed
    (exit status 3), counting the failures by error_kind."""
    import pandas as pd

    print_frame(pd.DataFrame(result.levels), LEVEL_COLUMNS)
    print(f"\nrequests: {result.requests_path}\nlevels:   {result.levels_path}")
    failed = sum(lv["requests_failed"] for lv in result.levels)
    if failed == 0:
        return 0
    total = failed + sum(lv["requests_ok"] for lv in result.levels)
    kinds = pd.read_parquet(result.requests_path, columns=["error_kind"])["error_kind"].value_counts()
    why = ", ".join(f"{kind} {n}" for kind, n in kinds.items())
    raise SomeRequestsFailed(
        f"completed, but {failed} of {total} requests failed ({why}); their records say why: {result.requests_path}"
    )
