"""A closed-loop level split over several client processes (run_level_split), so the client is not
held to one core: how many (client_processes), each process's share (its own event loop and
connections, request numbers from one shared counter), and the O_APPEND lines every process writes
its records to the sweep's requests.jsonl with (append_line, open_append)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from llmbench.backends.base import Endpoint
from llmbench.lifetime import die_with_parent
from llmbench.loadgen.driver import OnRecord, run_level, run_loop
from llmbench.loadgen.schedules import ClosedLoop
from llmbench.schemas.records import RequestRecord

STREAMS_PER_PROCESS = 128  # streams one client process drives before its core becomes the limit


def client_processes(concurrency: int, configured: int | None = None) -> int:
    """How many load-generator processes a level uses: the config's number, else one per
    STREAMS_PER_PROCESS streams, at most one per core this process may run on, at least one."""
    if configured:
        return max(1, min(configured, concurrency))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, -(-concurrency // STREAMS_PER_PROCESS), concurrency))


def append_line(fd: int, row: dict[str, Any]) -> None:
    """One record as one JSON line, in one write to a file opened O_APPEND: the sweep and the
    processes of a split level append to the same requests.jsonl without interleaving lines."""
    data = (json.dumps(row) + "\n").encode()
    while data:
        data = data[os.write(fd, data) :]


def open_append(path: Path | str) -> int:
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def _child_level(
    endpoint: Endpoint,
    level_kwargs: dict[str, Any],
    concurrency: int,
    worker_offset: int,
    counter,
    ready,
    go,
    results,
    jsonl_path: str,
    level_concurrency: int,
) -> None:
    """One process's share of a split level: its own event loop and connections, the request
    numbers taken from the shared counter, each record appended to the sweep's requests.jsonl as
    it completes; the records and CPU time go back to the parent. It dies with the parent."""
    import pickle

    die_with_parent()

    def take() -> int:
        with counter.get_lock():
            i = counter.value
            counter.value += 1
            return i

    try:
        sink = open_append(jsonl_path)
        try:

            def on_record(rec: RequestRecord) -> None:
                append_line(sink, rec.to_row())

            ready.release()
            go.wait()
            recs, cpu_s = run_loop(
                run_level(
                    endpoint,
                    ClosedLoop(concurrency),
                    on_record=on_record,
                    next_index=take,
                    worker_offset=worker_offset,
                    level_concurrency=level_concurrency,
                    **level_kwargs,
                )
            )
        finally:
            os.close(sink)
        results.put(pickle.dumps(([r.values() for r in recs], cpu_s, None)))
    except BaseException as e:  # noqa: BLE001 (reported to the parent, which raises)
        results.put(pickle.dumps(([], 0.0, f"{type(e).__name__}: {e}")))


def run_level_split(
    endpoint: Endpoint,
    schedule: ClosedLoop,
    *,
    processes: int,
    on_record: OnRecord,
    jsonl_path: Path,
    **level_kwargs: Any,
) -> tuple[list[RequestRecord], float]:
    """One closed-loop level driven by `processes` processes (each with its own event loop and a
    share of the streams), so the client is not held to one core. All start together (a barrier),
    take request numbers from one shared counter, and stamp time with the same system-wide
    monotonic clock (perf_counter_ns is CLOCK_MONOTONIC on Linux), so their records merge into
    one level. Each process appends its records to jsonl_path as they complete (the caller's own
    records must go there with append_line too); on_record sees them all, in completion order,
    when the level ends. The processes die with this one. Returns (records, client CPU seconds
    per core the processes may use: processes sharing one core saturate it together)."""
    import multiprocessing as mp
    import pickle

    if not isinstance(schedule, ClosedLoop):
        raise TypeError(f"only a closed-loop level is split over processes, not {schedule!r}")
    concurrency = schedule.concurrency
    ctx = mp.get_context("spawn")  # no fork of a process that may hold threads (Airflow, botocore)
    counter, go, ready, results = ctx.Value("q", 0), ctx.Event(), ctx.Semaphore(0), ctx.Queue()
    shares = [concurrency // processes + (1 if k < concurrency % processes else 0) for k in range(processes)]
    children = []
    offset = 0
    for share in shares:
        children.append(
            ctx.Process(
                target=_child_level,
                args=(endpoint, level_kwargs, share, offset, counter, ready, go, results, str(jsonl_path), concurrency),
                daemon=True,
            )
        )
        offset += share
    for c in children:
        c.start()
    try:
        for _ in children:
            if not ready.acquire(timeout=120):
                raise RuntimeError("a load-generator process did not start within 120 s")
        go.set()
        outcomes = [pickle.loads(results.get()) for _ in children]
    finally:
        for c in children:
            c.join(10)
            if c.is_alive():
                c.kill()
    errors = [e for _, _, e in outcomes if e]
    records = sorted((RequestRecord(*v) for recs, _, _ in outcomes for v in recs), key=lambda r: r.end_ns)
    for rec in records:  # already in jsonl_path: the caller's hook, in completion order
        on_record(rec)
    if errors:
        raise RuntimeError(f"load-generator process failed: {errors[0]}")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return records, sum(cpu for _, cpu, _ in outcomes) / min(processes, cores)
