"""`llmbench settings`: every LLMBENCH_* environment variable (llmbench.settings), its value here
and now (or its default), and what it does. An unusable value is refused in one line (exit 2)."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    st = sub.add_parser("settings", help="list the LLMBENCH_* environment variables: value, default, meaning")
    st.set_defaults(func=run)


def run(a: argparse.Namespace) -> int:
    from llmbench.settings import describe

    rows = describe()  # SettingsError: exit 2
    width = max(len(var) for var, _, _ in rows)
    for var, value, description in rows:
        print(f"{var:<{width}}  {value}\n{'':<{width}}  {description}")
    return 0
