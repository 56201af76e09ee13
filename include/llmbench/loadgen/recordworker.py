"""Per-request records built off the load generator's event loop, in a helper process that runs
only when the loop's core has nothing else to do (SCHED_IDLE).

Why: turning a response's reads into a record (decode the HTTP framing, frames, split lines, parse
JSON, compute timings) costs about 1 ms of CPU per 256-token response; undoing the chunked
transfer-encoding alone is 0.5-0.8 ms of it. In a closed loop whose streams end together (equal
lengths), 256 such responses come due at once: a quarter of a second in which no read would be
stamped, no connection made and no next request sent (make bench, benchmarks/offered_load.py:
with the decode still on the loop, the turnaround from a response's end to its stream's next send
was 53 ms p50, 93 ms p99, and the level 3.3 % below its schedule). Handing the raw reads to this
process costs the loop a pickle and a pipe write (tens of microseconds) per request.

Wire, both directions: 4-byte big-endian length, then a pickle. In: a capture (a request's raw
reads and how its exchange ended, `capture_to_record_args`), then None to end. Out: each record as
the tuple of its values (RequestRecord.values), in the order received, then {"cpu_s": CPU seconds
this process spent on them}.

Imports records and httpstream (and, in the helper process, wire): never the load generator.

  python -m llmbench.loadgen.recordworker   (started by RecordBuilder, never by hand)
"""

from __future__ import annotations

import asyncio
import collections
import fcntl
import os
import pickle
import signal
import struct
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llmbench.loadgen.httpstream import decode_response
from llmbench.schemas.records import RequestRecord, schema_problem

_LEN = struct.Struct("!I")
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)  # Linux
PIPE_BYTES = 1 << 20

# What a timed-out request hands on to its record (the first tokens' times): at most this much of
# its body, however much arrived before the deadline.
FAILED_KEEP_BYTES = 1 << 20


def first_bytes(pieces: list[tuple[int, bytes]], limit: int) -> list[tuple[int, bytes]]:
    """The first `limit` bytes of timestamped pieces."""
    out, have = [], 0
    for t_ns, data in pieces:
        if have >= limit:
            break
        out.append((t_ns, data[: limit - have]))
        have += len(out[-1][1])
    return out


# How an exchange ended, as the load generator's loop saw it without decoding anything:
#   "done"        the response ended (by its framing, or the connection closed); ended_detail names
#                 the exception the connection ended with, if any ("ConnectionGone: ...")
#   "timeout"     the request's deadline passed (reads: what arrived before it)
#   "connection"  no connection could be made (reads: none)
#   "too_large"   the response brought more than its byte budget (reads: its first bytes)
ENDINGS = ("done", "timeout", "connection", "too_large")


def classify(
    reads: list[tuple[int, bytes]], ended: str, detail: str | None
) -> tuple[int | None, list[tuple[int, bytes]], str | None, str | None]:
    """A request's raw reads and how its exchange ended -> (http_status, the decoded body's pieces,
    error_kind, error_detail): what wire.build_record takes. Pure; runs in this helper process."""
    if ended == "connection":
        return None, [], "connection", detail
    if ended == "too_large":
        return decode_response(reads[:1]).status, [], "response_too_large", detail
    resp = decode_response(reads)
    if ended == "timeout":
        return resp.status, first_bytes(resp.body, FAILED_KEEP_BYTES), "timeout", detail
    if resp.status is None:
        # what was wrong with the head first (a bad status line), then how the connection ended
        why = "; ".join(x for x in (resp.error if reads else None, detail) if x)
        return None, [], "connection" if not reads else "stream_error", why[:300]
    if resp.status != 200:
        text = b"".join(d for _, d in resp.body)[:300].decode("utf-8", "replace")
        return resp.status, [], "http_status", f"HTTP {resp.status}: {text}"
    if resp.error or not resp.complete:
        why = resp.error or f"connection closed mid-response ({detail})"
        return resp.status, resp.body, "stream_error", why[:300]
    return resp.status, resp.body, None, None


def capture_to_record_args(capture: dict[str, Any]) -> dict[str, Any]:
    """What the loop submitted -> wire.build_record's keyword arguments: a capture with `reads`
    (raw, as the connection received them) and `ended`/`ended_detail` is decoded and classified
    here; one with `lines` already is passed on as it is."""
    if "reads" not in capture:
        return capture
    args = dict(capture)
    reads, ended, detail = args.pop("reads"), args.pop("ended"), args.pop("ended_detail", None)
    args["http_status"], args["lines"], args["error_kind"], args["error_detail"] = classify(reads, ended, detail)
    return args


def build(capture: dict[str, Any]) -> RequestRecord:
    """One capture's record, always: a response no rule of classify or wire.build_record foresaw
    (an exception, or a record that would not fit request_schema) becomes a failed record
    (malformed_chunk, naming what went wrong) instead of ending the record builder and the sweep
    with it."""
    from llmbench.loadgen.wire import build_record  # here, not at the top: the loop's process never needs it

    try:
        record = build_record(**capture_to_record_args(capture))
        why = schema_problem(record)
    except Exception as e:  # noqa: BLE001 (whatever a server sent: one failed record, never a dead sweep)
        why = f"{type(e).__name__}: {e}"
    if why is None:
        return record
    args = {k: v for k, v in capture.items() if k not in ("reads", "ended", "ended_detail", "lines")}
    args.update(http_status=None, lines=[], error_kind="malformed_chunk", error_detail=f"record not built: {why}"[:300])
    return build_record(**args)


def _frame(obj: Any) -> bytes:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _LEN.pack(len(data)) + data


class RecordBuilder:
    """The loop's side: submit() hands over one request's raw capture and returns at once;
    on_record(record) is called, in submission order, as records come back.

    The bookkeeping yields to the hot path. A closed loop's streams end together, and what each
    one does between its response's end and its next send (a connection, a send) must not queue
    behind the others' bookkeeping: pickling and writing a capture (about 150 us for a 256-token
    response) and delivering its record (about 100 us: the caller's on_record writes a JSON line)
    are done one capture and one record per event-loop iteration, by tasks that yield between
    them, so a stream's next send waits for at most one of them instead of every stream's."""

    # Set by start(), before any submit/read/finish.
    _in: asyncio.StreamWriter
    _out: asyncio.StreamReader

    def __init__(self, on_record: Callable[[RequestRecord], None]) -> None:
        self.on_record = on_record
        self.proc: asyncio.subprocess.Process | None = None
        self.reader: asyncio.Task | None = None
        self.pending = 0
        self.cpu_s = 0.0
        self._queue: collections.deque[dict[str, Any]] = collections.deque()
        self._wake: asyncio.Event | None = None
        self._finishing = False
        self._flushed: asyncio.Future | None = None

    async def start(self) -> None:
        import llmbench

        env = dict(os.environ)
        root = str(Path(llmbench.__file__).resolve().parents[1])  # where `import llmbench` works
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "llmbench.loadgen.recordworker",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
        )
        assert proc.stdin is not None and proc.stdout is not None  # both PIPE
        self._in, self._out = proc.stdin, proc.stdout
        self._wake = asyncio.Event()
        self._flushed = asyncio.get_running_loop().create_future()

    def submit(self, capture: dict[str, Any]) -> None:
        proc = self.proc
        if proc is None or proc.returncode is not None:
            raise RuntimeError(f"record builder process exited ({proc and proc.returncode})")
        self._queue.append(capture)  # sent by _send, one per loop iteration
        self.pending += 1
        assert self._wake is not None
        self._wake.set()

    async def read(self) -> None:
        """Run as a task beside the workers: sends the captures and delivers records until the
        builder says it is done."""
        async with asyncio.TaskGroup() as tg:
            tg.create_task(self._send())
            tg.create_task(self._receive())

    async def _send(self) -> None:
        assert self._wake is not None and self._flushed is not None
        queue, wake, writer = self._queue, self._wake, self._in
        while True:
            if queue:
                writer.write(_frame(queue.popleft()))  # buffered by the transport: never blocks the loop
                await asyncio.sleep(0)  # one capture per loop iteration: the streams' sends go first
                continue
            if self._finishing:
                break
            wake.clear()
            await wake.wait()
        writer.write(_frame(None))
        await writer.drain()
        writer.close()
        self._flushed.set_result(None)

    async def _receive(self) -> None:
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
            await asyncio.sleep(0)  # one record per loop iteration (readexactly does not yield when data waits)

    async def finish(self) -> None:
        """No more submissions: the captures still queued are sent, then the builder drains,
        reports its CPU time and exits."""
        assert self._wake is not None and self._flushed is not None
        self._finishing = True
        self._wake.set()
        await asyncio.shield(self._flushed)

    async def close(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass
            await self.proc.wait()


def main() -> None:
    # Ctrl-C reaches the whole foreground group: the load generator decides when this process
    # ends (its stdin closes, or it is killed), not a KeyboardInterrupt half-way through a record.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _serve()
    except BrokenPipeError:  # the load generator went away (killed): nothing to report to
        os._exit(0)


def _serve() -> None:
    import time

    import llmbench.loadgen.wire  # noqa: F401 (imported before the CPU clock starts, used by build)

    try:  # yield the core to the load generator whenever it has anything to do
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        os.nice(19)
    for fd in (0, 1):  # pipes that hold a whole response's capture (the default is 64 KiB)
        try:
            fcntl.fcntl(fd, F_SETPIPE_SZ, PIPE_BYTES)
        except OSError:  # above /proc/sys/fs/pipe-max-size, or not a pipe: the default will do
            pass
    src, dst = sys.stdin.buffer, sys.stdout.buffer
    cpu0 = time.process_time()  # after the imports: a level is charged for its records only
    while True:
        head = src.read(4)
        if len(head) < 4:
            return  # the load generator went away
        capture = pickle.loads(src.read(_LEN.unpack(head)[0]))
        if capture is None:
            break
        dst.write(_frame(build(capture).values()))
        dst.flush()
    dst.write(_frame({"cpu_s": time.process_time() - cpu0}))
    dst.flush()


if __name__ == "__main__":
    main()
