"""The one root of llmbench's own exceptions, and the exit status each kind means to the CLI.

Every error a user can meet is an `LlmbenchError`: its message is one line meant for them, and its
class says what kind of failure it is (`exit_code`, the contract in docs/operations.md#the-cli).
The classes stay beside the code that raises them (planning.config.ConfigError,
backends.base.DeployError, ...) and subclass one of these; `llmbench.cli.main` is the one place
that turns them into an exit status and a line on stderr. Exceptions that never leave the module
that raises them (the HTTP client's ConnectionGone, say) are not part of this tree.
"""

from __future__ import annotations

from typing import ClassVar


class LlmbenchError(Exception):
    """The run failed: an endpoint unreachable or unusable, a warehouse unreadable or busy, a
    deploy or a smoke check that failed. Exit status 1."""

    exit_code: ClassVar[int] = 1
    meaning: ClassVar[str] = (
        "the run failed: endpoint unreachable or unusable, warehouse unreadable or busy, run not succeeded"
    )

    def line(self) -> str:
        """The message as the CLI prints it (one_line)."""
        return one_line(self)


def one_line(e: BaseException) -> str:
    """An exception's message as one line: its first line, or its class name when it has none. Cut
    at "\n" only: splitlines() also cuts at a lone "\r" a server's text may hold, hiding what follows."""
    text = str(e)
    return text.strip().split("\n")[0].rstrip("\r") if text.strip() else type(e).__name__


class InputError(LlmbenchError):
    """Bad input: a flag, a config, a date, a folder or a setting was refused. Exit status 2."""

    exit_code = 2
    meaning = "bad input: a flag, config, date or folder refused, in one line naming it"


class SomeRequestsFailed(LlmbenchError):
    """A sweep completed, but some of its requests failed (their records say why). Exit status 3."""

    exit_code = 3
    meaning = "sweep completed, but some requests failed (their records say why)"


class SettingsError(InputError, ValueError):
    """An LLMBENCH_* environment variable holds a value llmbench cannot use (llmbench.settings)."""


# The CLI's exit statuses, in order: what `llmbench --help` prints and docs/operations.md tabulates.
EXIT_STATUSES: tuple[tuple[str, str], ...] = (
    ("0", "done (sweep: every request succeeded)"),
    (str(LlmbenchError.exit_code), LlmbenchError.meaning),
    (str(InputError.exit_code), InputError.meaning),
    (str(SomeRequestsFailed.exit_code), SomeRequestsFailed.meaning),
    ("130", "interrupted (SIGINT), 143 terminated (SIGTERM): a local server is torn down first"),
)


def exit_status_help() -> str:
    """The exit-status contract as `llmbench --help` prints it."""
    return "exit status (every command):\n" + "\n".join(f"  {code:<4} {meaning}" for code, meaning in EXIT_STATUSES)
