"""Records are built in a helper process off the event loop: they come back complete and in
completion order, the helper's CPU is charged to the client, and a helper that dies fails the
level loudly instead of losing records quietly."""

import asyncio
import os
import signal

import pytest

from llmbench.backends.base import Endpoint
from llmbench.loadgen.driver import run_level, run_loop
from llmbench.loadgen.recordworker import RecordBuilder
from llmbench.loadgen.schedules import ClosedLoop
from llmbench.testing._serve import ServerProcess


def _level(url, on_record, n=12):
    return run_loop(run_level(Endpoint(url, keep_alive=True), ClosedLoop(3), n_requests=n, input_tokens=16,
                              output_tokens=10, seed=1, first_index=0, timeout_s=30, on_record=on_record))


def test_records_come_back_built_and_in_completion_order(monkeypatch):
    # Completion order is the order the loop handed the captures over. end_ns is the kernel's stamp
    # of a response's last read, so two streams that end within microseconds of each other may be
    # handed over in the other order: compare with the hand-off, not with end_ns.
    handed, seen = [], []
    real_submit = RecordBuilder.submit

    def submit(self, capture):
        handed.append(capture["request_index"])
        real_submit(self, capture)

    monkeypatch.setattr(RecordBuilder, "submit", submit)
    with ServerProcess("llmbench.testing.calibration", "--ttft-ms", "20", "--itl-ms", "2") as server:
        records, cpu_s = _level(server.url + "/v1/chat/completions", seen.append)
    assert len(records) == 12 and seen == records
    assert all(r.ok and r.output_tokens == 10 and len(r.itl_ms) == 9 and r.repeat == 0 for r in records)
    assert [r.request_index for r in records] == handed
    assert sorted(r.request_index for r in records) == list(range(12)) and {r.worker for r in records} == {0, 1, 2}
    assert cpu_s > 0


def test_a_builder_that_dies_fails_the_level(monkeypatch):
    started = []
    real_start = RecordBuilder.start

    async def start(self):
        await real_start(self)
        started.append(self.proc.pid)

        async def kill_soon():
            await asyncio.sleep(0.3)
            os.kill(self.proc.pid, signal.SIGKILL)

        asyncio.get_running_loop().create_task(kill_soon())

    monkeypatch.setattr(RecordBuilder, "start", start)
    with ServerProcess("llmbench.testing.calibration", "--ttft-ms", "20", "--itl-ms", "2") as server:
        with pytest.raises(RuntimeError, match="record builder process"):
            _level(server.url + "/v1/chat/completions", lambda r: None, n=200)
    assert started
