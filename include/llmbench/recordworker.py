"""Per-request records built off the load generator's event loop, in a helper process that runs
only when the loop's core has nothing else to do (SCHED_IDLE).

Why: turning a response's reads into a record (decode frames, split lines, parse JSON, compute
timings) costs about 1 ms of CPU per 256-token response. In a closed loop whose streams end
together (equal lengths), 256 such records come due at once: a quarter of a second in which no
read would be stamped, every first token of the next wave stamped late. Handing the raw reads to
this process costs the loop a pickle and a pipe write (tens of microseconds) per request.

Wire, both directions: 4-byte big-endian length, then a pickle. In: wire.build_record keyword
arguments, then None to end. Out: each record as the tuple of its values (RequestRecord.values),
in the order received, then {"cpu_s": CPU seconds this process spent on them}.

Imports records (and, in the helper process, wire): never the load generator.

  python -m llmbench.recordworker   (started by RecordBuilder, never by hand)
"""

from __future__ import annotations

import asyncio
import os
import pickle
import struct
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llmbench.records import RequestRecord

_LEN = struct.Struct("!I")


def _frame(obj: Any) -> bytes:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _LEN.pack(len(data)) + data


class RecordBuilder:
    """The loop's side: submit() hands over one request's raw capture and returns at once;
    on_record(record) is called, in submission order, as records come back."""

    # Set by start(), before any submit/read/finish.
    _in: asyncio.StreamWriter
    _out: asyncio.StreamReader

    def __init__(self, on_record: Callable[[RequestRecord], None]) -> None:
        self.on_record = on_record
        self.proc: asyncio.subprocess.Process | None = None
        self.reader: asyncio.Task | None = None
        self.pending = 0
        self.cpu_s = 0.0

    async def start(self) -> None:
        import llmbench

        env = dict(os.environ)
        root = str(Path(llmbench.__file__).resolve().parents[1])  # where `import llmbench` works
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "llmbench.recordworker",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
        )
        assert proc.stdin is not None and proc.stdout is not None  # both PIPE
        self._in, self._out = proc.stdin, proc.stdout

    def submit(self, capture: dict[str, Any]) -> None:
        proc = self.proc
        if proc is None or proc.returncode is not None:
            raise RuntimeError(f"record builder process exited ({proc and proc.returncode})")
        self._in.write(_frame(capture))  # buffered by the transport: never blocks the loop
        self.pending += 1

    async def read(self) -> None:
        """Run as a task beside the workers: delivers records until the builder says it is done."""
        out = self._out
        while True:
            try:
                size = _LEN.unpack(await out.readexactly(4))[0]
                msg = pickle.loads(await out.readexactly(size))
            except asyncio.IncompleteReadError:
                raise RuntimeError(f"record builder process ended with {self.pending} record(s) unbuilt") from None
            if type(msg) is dict:
                self.cpu_s = msg["cpu_s"]
                return
            self.pending -= 1
            self.on_record(RequestRecord(*msg))

    async def finish(self) -> None:
        """No more submissions: the builder drains, reports its CPU time and exits."""
        self._in.write(_frame(None))
        await self._in.drain()
        self._in.close()

    async def close(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass
            await self.proc.wait()


def main() -> None:
    try:
        _serve()
    except BrokenPipeError:  # the load generator went away (killed): nothing to report to
        os._exit(0)


def _serve() -> None:
    import time

    from llmbench.wire import build_record

    try:  # yield the core to the load generator whenever it has anything to do
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        os.nice(19)
    src, dst = sys.stdin.buffer, sys.stdout.buffer
    cpu0 = time.process_time()  # after the imports: a level is charged for its records only
    while True:
        head = src.read(4)
        if len(head) < 4:
            return  # the load generator went away
        capture = pickle.loads(src.read(_LEN.unpack(head)[0]))
        if capture is None:
            break
        dst.write(_frame(build_record(**capture).values()))
        dst.flush()
    dst.write(_frame({"cpu_s": time.process_time() - cpu0}))
    dst.flush()


if __name__ == "__main__":
    main()
