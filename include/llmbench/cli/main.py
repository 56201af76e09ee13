"""`llmbench`: ad-hoc sweeps outside Airflow, plan checks, and a look at published results.

  llmbench sweep --backend openai --url http://HOST:PORT/v1 --concurrency 1,16,64 \\
                 --requests-per-level 32 --input-tokens 512 --output-tokens 128 --out DIR
  llmbench sweep --backend local --parallel 4 ...     # starts and stops llama-server itself
  llmbench sweep --backend KIND --endpoint NAME --region us-west-2 [--runtime-url URL] ...  # an existing one
  llmbench plan  --config local [--targets ID,ID] [--concurrency 1,2]
  llmbench show  [--run-key KEY | --config local --date 2026-11-30] [--warehouse PATH]
  llmbench history [--warehouse PATH|DSN] [--out FILE]  # the weekly history page
  llmbench publish RUN_DIR [--warehouse PATH|DSN]   # again, after the warehouse was unreachable
  llmbench rebuild OUT                              # a killed sweep's tables, from its requests.jsonl
  llmbench settings                                 # the LLMBENCH_* variables and their values

This module is the parser and main(); each command is a module of llmbench.cli.commands (its
flags and its run). main() is the one place that turns what a command raised into an exit status
and one line on stderr: an LlmbenchError's exit_code (llmbench.errors), 128 + the signal number
on SIGINT or SIGTERM.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time

from llmbench.cli.commands import COMMANDS
from llmbench.cli.output import safe, say
from llmbench.errors import LlmbenchError, exit_status_help

EXIT_CODES = exit_status_help()
ENVIRONMENT = (
    "environment: LLMBENCH_* variables set the data folder, the cache, the raw-results retention and more;\n"
    "`llmbench settings` lists each with its value and default."
)


class OneLineParser(argparse.ArgumentParser):
    """argparse, whose usage errors are one line (exit status 2) like every other refusal."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="llmbench",
        description="LLM serving price-performance benchmarks.",
        epilog=f"{EXIT_CODES}\n\n{ENVIRONMENT}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for command in COMMANDS:
        command.add_parser(sub)
    return p


class Interrupted(KeyboardInterrupt):
    """SIGTERM, raised like SIGINT so that every `finally` (the server's teardown) runs."""

    signum = signal.SIGTERM


def _on_sigterm(signum, frame) -> None:
    raise Interrupted()


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    t0 = time.monotonic()
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if main_thread else None
    try:
        rc = a.func(a)
    except LlmbenchError as e:  # the command's refusal or failure: its exit status, one line
        print(f"llmbench {a.command}: {safe(e.line())}", file=sys.stderr)
        rc = e.exit_code
    except KeyboardInterrupt as e:
        signum = getattr(e, "signum", signal.SIGINT)
        where = f"; the records so far are in {a.out}/requests.jsonl" if a.command == "sweep" else ""
        print(f"llmbench {a.command}: interrupted ({signal.Signals(signum).name}){where}", file=sys.stderr)
        return 128 + signum
    finally:
        if main_thread and previous is not None:
            signal.signal(signal.SIGTERM, previous)
    if a.command == "sweep" and rc in (0, 3):
        say(f"done in {time.monotonic() - t0:.1f}s")
    return rc


if __name__ == "__main__":
    sys.exit(main())
