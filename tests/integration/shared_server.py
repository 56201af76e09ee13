"""Servers shared by a whole pytest session live exactly as long as the session (issue 34).

A wall-clock bound cannot be right for them: the suite's length varies with the machine's load,
and the llama-server of tests/integration/conftest.py, bounded at 3600 s, was stopped by its own
guard at minute 60 of a 66-minute run; the wire servers in front of it then answered HTTP 500.
So the guard is the pytest process itself: the kernel signals the server when the thread that
started it ends, however it ends (kill -9 included), and the fixture stops it at session end.

A shared server that dies anyway (a crash, the OOM killer) must fail the next test that needs it
at once, with its exit status and the end of its log, not three layers down as an HTTP 500.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from llmbench.backends.local.backend import LocalBackend, group_members
from llmbench.backends.local.models import LocalServing

LOG_TAIL_LINES = 30


def describe_status(si_code: int, si_status: int) -> str:
    if si_code == os.CLD_EXITED:
        return f"exit status {si_status}" + (" (its `timeout` guard fired)" if si_status == 124 else "")
    try:
        return f"killed by {signal.Signals(si_status).name}"
    except ValueError:
        return f"killed by signal {si_status}"


class SharedLlamaServer:
    """A llama-server for the whole session, started by this process (and so its child)."""

    def __init__(self, serving: LocalServing, work_dir: Path):
        self.backend = LocalBackend()
        # 0 is coreutils timeout's "no bound" (model_copy skips the model's >= 60 s check on
        # purpose): this server's lifetime is the session's, through die_with_parent.
        unbounded = serving.model_copy(update={"max_lifetime_s": 0})
        self.handle = self.backend.start_server(unbounded, work_dir, die_with_parent=True)
        self.log_path = Path(self.handle["log_path"])
        self.died: str | None = None  # how it ended, once it has
        self.stopping = False
        threading.Thread(target=self._watch, name=f"watch-llama-server-{self.handle['pid']}", daemon=True).start()

    def _watch(self) -> None:
        # WNOWAIT: read the exit status without reaping, so subprocess's own clean-up of the
        # dropped Popen cannot take it from us first.
        try:
            info = os.waitid(os.P_PID, self.handle["pid"], os.WEXITED | os.WNOWAIT)
            self.died = describe_status(info.si_code, info.si_status) if info else "ended"
        except ChildProcessError:  # reaped elsewhere: the status is gone, the death is not
            self.died = "ended (exit status already collected)"

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        self.backend.wait_ready(self.handle, timeout_s)

    def check(self, when: str = "before this test") -> None:
        """Fail the calling test at once if the server is gone, with how it ended and its log."""
        if self.died is None and group_members(self.handle["pgid"]):
            return
        how = self.died or "its process group is gone"
        tail = "\n".join(self.log_path.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:])
        pytest.fail(
            f"the session's shared llama-server (pid {self.handle['pid']}, {self.handle['base_url']}) died "
            f"{when}: {how}. Every test that needs it fails here. The end of {self.log_path}:\n{tail}",
            pytrace=False,
        )

    def stop(self) -> None:
        self.stopping = True
        self.backend.teardown(self.handle)
