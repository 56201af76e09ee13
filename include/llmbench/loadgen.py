"""The load generator: a closed-loop concurrency sweep against an OpenAI-compatible
streaming endpoint.

Closed loop: at level C, C workers each send their next request as soon as their previous one
ends, until the level's request count is reached. The hot path only timestamps bytes as they
arrive (httpstream: kernel receive stamps on plain TCP, on time.perf_counter_ns's clock); parsing
and metric arithmetic happen in a helper process (recordworker), off the event loop. A failed request is a record with an error kind, never an exception that ends the sweep.
Every record is appended to a JSON-lines file the moment it completes, so nothing measured is
lost if the process dies mid-sweep; the Parquet files are written from it at the end.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import ssl

from llmbench import metrics
from llmbench.httpstream import StreamClient, decode_response
from llmbench.recordworker import RecordBuilder
from llmbench.workload import chat_request_body, make_prompt, sample_length

ProgressFn = Callable[[str], None]


@dataclass(frozen=True)
class Endpoint:
    """Where to send chat completions, and how the response comes back.

    wire: "sse" (OpenAI chat completions over HTTP) or "sagemaker" (InvokeEndpointWithResponseStream:
    AWS event-stream frames carrying the model's bytes). signer: an object whose
    .sign(url, body, headers) returns signed headers (SigV4 for SageMaker), or None.
    """

    url: str
    model: str = "default"
    headers: dict[str, str] = field(default_factory=dict)
    wire: str = "sse"
    signer: Any = field(default=None, compare=False)
    # False: a fresh connection per request (`Connection: close`; llama-server closes reused
    # keep-alive connections). True: each worker keeps its connection (managed HTTPS endpoints,
    # where a TLS handshake per request would cost a round trip between requests); a send on a
    # connection the server had closed, before any response byte, is sent again once on a fresh one.
    keep_alive: bool = False


@dataclass
class StreamParse:
    content_ns: list[int]
    finish_reason: str | None
    usage: dict[str, Any] | None
    error_kind: str | None = None
    error_detail: str | None = None


def split_lines(chunks: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """Timestamped byte chunks (as read) -> timestamped lines. A line's time is the arrival of
    the chunk that completed it; a last line without a newline gets the last chunk's time."""
    lines: list[tuple[int, bytes]] = []
    pending = b""
    for t_ns, data in chunks:
        pending += data
        *complete, pending = pending.split(b"\n")
        lines.extend((t_ns, line + b"\n") for line in complete)
    if pending:
        lines.append((chunks[-1][0], pending))
    return lines


def parse_openai_sse(lines: list[tuple[int, bytes]]) -> StreamParse:
    """Parse timestamped SSE lines of an OpenAI chat-completions stream (off the hot path).

    A content chunk is a `data:` event whose first choice carries non-empty delta content; its
    arrival time is the time of the line that completed it. The `data:` payloads are parsed as
    one JSON array (one call into the C parser instead of one per token: a quarter of the CPU);
    a stream that does not parse that way, or carries JSON lines, goes line by line, which also
    finds the offending line.
    """
    data: list[tuple[int, bytes]] = []
    for t_ns, raw in lines:
        line = raw.strip()
        if line.startswith(b"data:"):
            payload = line[5:].strip()
            if payload != b"[DONE]":
                data.append((t_ns, payload))
        elif line.startswith(b"{"):
            return _parse_lines(lines)
    try:
        chunks = json.loads(b"[" + b",".join(p for _, p in data) + b"]")
    except ValueError:
        return _parse_lines(lines)
    if len(chunks) != len(data) or not all(isinstance(c, dict) for c in chunks):
        return _parse_lines(lines)
    parse = StreamParse([], None, None)
    for (t_ns, _), chunk in zip(data, chunks):
        if not _take_chunk(parse, t_ns, chunk):
            break
    return parse


def _take_chunk(parse: StreamParse, t_ns: int, chunk: dict[str, Any]) -> bool:
    """Fold one OpenAI chat-completion chunk (arrived at t_ns) into `parse`; False (with the
    error set) when the chunk is an error event."""
    if "error" in chunk:
        parse.error_kind, parse.error_detail = "stream_error", json.dumps(chunk["error"])[:200]
        return False
    if chunk.get("usage"):
        parse.usage = chunk["usage"]
    for choice in chunk.get("choices") or []:
        delta = choice.get("delta") or {}
        if delta.get("content"):
            parse.content_ns.append(t_ns)
        if choice.get("finish_reason"):
            parse.finish_reason = choice["finish_reason"]
    return True


def _parse_lines(lines: list[tuple[int, bytes]]) -> StreamParse:
    """parse_openai_sse line by line: LMI/TGI JSON lines, and the exact malformed line."""
    parse = StreamParse([], None, None)

    def malformed(text: bytes) -> StreamParse:
        parse.error_kind, parse.error_detail = "malformed_chunk", text[:200].decode("utf-8", "replace")
        return parse

    for t_ns, raw in lines:
        line = raw.strip()
        if not line or line.startswith(b":"):
            continue
        if line.startswith(b"{"):
            # LMI / TGI JSON lines: {"token": {"text": ..., "special": ...}, "details": {...}}
            try:
                obj = json.loads(line)
            except ValueError:
                return malformed(line)
            token = obj.get("token") or {}
            if token.get("text") and not token.get("special"):
                parse.content_ns.append(t_ns)
            details = obj.get("details") or {}
            if details.get("finish_reason"):
                parse.finish_reason = details["finish_reason"]
                if details.get("generated_tokens") is not None:
                    parse.usage = {"completion_tokens": details["generated_tokens"]}
            continue
        if not line.startswith(b"data:"):
            continue  # event:/id:/retry: fields carry nothing we measure
        payload = line[5:].strip()
        if payload == b"[DONE]":
            continue
        try:
            chunk = json.loads(payload)
        except ValueError:
            return malformed(payload)
        if not isinstance(chunk, dict):
            return malformed(payload)
        if not _take_chunk(parse, t_ns, chunk):
            return parse
    return parse


def build_record(
    *,
    concurrency: int,
    request_index: int,
    worker: int,
    send_ns: int,
    end_ns: int,
    send_lag_ns: int,
    http_status: int | None,
    lines: list[tuple[int, bytes]],
    error_kind: str | None,
    error_detail: str | None,
    wire: str = "sse",
) -> dict[str, Any]:
    """One per-request record (a row of requests.parquet) from what the hot path captured: the
    response's bytes as read (SSE, or for wire "sagemaker" event-stream frames around them)."""
    if wire == "sagemaker" and error_kind is None:
        from llmbench.sagemaker_stream import decode_eventstream

        lines, error_kind, error_detail = decode_eventstream(lines)
    elif error_kind is None:
        lines = split_lines(lines)
    parse = parse_openai_sse(lines) if error_kind is None else StreamParse([], None, None)
    if error_kind is None and parse.error_kind:
        error_kind, error_detail = parse.error_kind, parse.error_detail
    if error_kind is None and not parse.content_ns:
        error_kind, error_detail = "empty_response", "stream carried no generated content"
    if error_kind is None and parse.finish_reason is None:
        error_kind, error_detail = "truncated", "stream ended without a finish reason"
    usage = parse.usage or {}
    if usage.get("completion_tokens") is not None:
        output_tokens, source = int(usage["completion_tokens"]), "usage"
    else:
        output_tokens, source = len(parse.content_ns), "counted"
    timings = metrics.request_timings(send_ns, parse.content_ns, end_ns, output_tokens)
    return {
        "concurrency": concurrency,
        "request_index": request_index,
        "worker": worker,
        "ok": error_kind is None,
        "error_kind": error_kind,
        "error_detail": error_detail,
        "http_status": http_status,
        "send_ns": send_ns,
        "first_content_ns": parse.content_ns[0] if parse.content_ns else None,
        "end_ns": end_ns,
        "send_lag_ms": send_lag_ns / metrics.NS_PER_MS,
        "ttft_ms": timings["ttft_ms"],
        "e2e_ms": timings["e2e_ms"],
        "tpot_ms": timings["tpot_ms"],
        "itl_ms": timings["itl_ms"],
        "content_chunks": len(parse.content_ns),
        "output_tokens": output_tokens,
        "output_tokens_source": source,
        "output_tokens_counted": len(parse.content_ns),
        "input_tokens": usage.get("prompt_tokens"),
        "finish_reason": parse.finish_reason,
    }


async def send_one(
    client: StreamClient,
    endpoint: Endpoint,
    body: bytes,
    timeout_s: float,
) -> tuple[int, int, int | None, list[tuple[int, bytes]], str | None, str | None]:
    """Send one streaming request on this worker's connection. Returns (send_ns, end_ns,
    http_status, chunks, error_kind, error_detail); `chunks` are the response body's bytes as
    read, timestamped (httpstream: one stamp per read, decoded after the response ended). Never
    raises for anything the server or network does."""
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream", **endpoint.headers}
    if endpoint.signer is not None:
        headers = endpoint.signer.sign(endpoint.url, body, headers)  # before the clock starts
    try:
        async with asyncio.timeout(timeout_s):
            send_ns, end_ns, reads, outcome = await client.post(body, headers)
    except TimeoutError:
        now = time.perf_counter_ns()
        resp = decode_response(client.reads)
        return (client.sent_ns or now), now, resp.status, resp.body, "timeout", f"no complete response within {timeout_s}s"
    except (OSError, ssl.SSLError) as e:  # no connection could be made
        now = time.perf_counter_ns()
        return now, now, None, [], "connection", f"{type(e).__name__}: {e}"[:300]
    resp = decode_response(reads)
    if resp.status is None:
        kind = "connection" if not reads else "stream_error"
        return send_ns, end_ns, None, [], kind, f"{type(outcome).__name__}: {outcome}"[:300] if outcome else resp.error
    if resp.status != 200:
        text = b"".join(d for _, d in resp.body)[:300].decode("utf-8", "replace")
        return send_ns, end_ns, resp.status, [], "http_status", f"HTTP {resp.status}: {text}"
    if resp.error or not resp.complete:
        why = resp.error or f"connection closed mid-response ({type(outcome).__name__}: {outcome})"
        return send_ns, end_ns, resp.status, resp.body, "stream_error", why[:300]
    return send_ns, end_ns, resp.status, resp.body, None, None


async def run_level(
    endpoint: Endpoint,
    *,
    concurrency: int,
    n_requests: int | None,
    input_tokens: int | dict,
    output_tokens: int | dict,
    seed: int,
    first_index: int,
    timeout_s: float,
    shared_prefix_tokens: int = 0,
    on_record: Callable[[dict[str, Any]], None],
    next_index: Callable[[], int] | None = None,
    worker_offset: int = 0,
    duration_s: float | None = None,
    repeat: int = 0,
) -> tuple[list[dict[str, Any]], float]:
    """One closed-loop level. Returns (records, client CPU seconds spent during the level).
    It ends after n_requests requests, or, with duration_s, when no request may start any more
    (a free worker sends nothing once duration_s has passed since the level began; those in
    flight finish). next_index: where a free worker takes its next request number (default: a
    local counter; a counter shared between processes when the level is split over several)."""

    def body(i: int) -> bytes:
        idx = first_index + i
        prompt = make_prompt(seed, idx, sample_length(input_tokens, seed, idx, "input"),
                             sample_length(output_tokens, seed, idx, "output"), shared_prefix_tokens)
        return json.dumps(chat_request_body(prompt, endpoint.model)).encode()

    # A count-bounded level in one process builds its bodies before the clock starts; a timed
    # level, or one process's share of a split level (which requests it gets is not known in
    # advance), builds each body when it takes the request.
    bodies = [body(i) for i in range(n_requests)] if n_requests is not None and next_index is None else None
    take = next_index or itertools.count().__next__

    async def worker(w: int, builder: RecordBuilder, deadline: float | None) -> None:
        # One connection per worker; see Endpoint.keep_alive.
        client = StreamClient(endpoint.url, keep_alive=endpoint.keep_alive)
        try:
            await _work(w, client, builder, deadline)
        finally:
            client.close()

    async def _work(w: int, client: StreamClient, builder: RecordBuilder, deadline: float | None) -> None:
        while True:
            if deadline is not None and time.perf_counter() >= deadline:
                return
            i = take()
            if n_requests is not None and i >= n_requests:
                return
            payload = bodies[i] if bodies is not None else body(i)
            ready_ns = time.perf_counter_ns()
            send_ns, end_ns, status, lines, kind, detail = await send_one(client, endpoint, payload, timeout_s)
            # The record is built in the helper process; the worker sends its next request now.
            builder.submit(dict(
                concurrency=concurrency,
                request_index=first_index + i,
                worker=worker_offset + w,
                send_ns=send_ns,
                end_ns=end_ns,
                # waiting on the client itself; connecting is the server's (or network's) time
                send_lag_ns=max(0, send_ns - ready_ns - client.connect_ns),
                http_status=status,
                lines=lines,
                error_kind=kind,
                error_detail=detail,
                wire=endpoint.wire,
                extra={"repeat": repeat, "arrival_rate_rps": 0.0, "send_retried": client.resent_last},
            ))

    async def drive(builder: RecordBuilder) -> None:
        deadline = time.perf_counter() + duration_s if duration_s else None
        async with asyncio.TaskGroup() as workers:
            for w in range(concurrency):
                workers.create_task(worker(w, builder, deadline))

    return await _with_record_builder(on_record, drive)


async def _with_record_builder(on_record: Callable[[dict[str, Any]], None], drive) -> tuple[list[dict[str, Any]], float]:
    """Run a level's drive(builder) beside the record builder it submits to; every record goes to
    on_record as it comes back. Returns (records, client CPU seconds: this process's during the
    level and the builder's)."""
    records: list[dict[str, Any]] = []

    def deliver(rec: dict[str, Any]) -> None:
        records.append(rec)
        on_record(rec)

    async def drive_then_finish() -> None:
        await drive(builder)
        await builder.finish()

    builder = RecordBuilder(deliver)
    await builder.start()  # before the clock: the helper's start-up is nobody's level
    cpu0 = time.process_time()
    # TaskGroups, not gather: if a request or the record delivery raises (disk full, a drill),
    # everything else is cancelled at once instead of measuring on after the sweep has failed.
    try:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(builder.read())
            tg.create_task(drive_then_finish())
    except BaseExceptionGroup as group:
        raise _first_failure(group) from None
    finally:
        await builder.close()
    return records, time.process_time() - cpu0 + builder.cpu_s


def poisson_offsets_s(rate_rps: float, key: str):
    """Arrival times (seconds after the level starts) of a Poisson process of rate_rps: the sum of
    exponential gaps of mean 1 / rate_rps. Seeded by key, so a level's arrivals are the same on
    every run of the same config."""
    import random

    rng = random.Random(key)
    t = 0.0
    while True:
        t += rng.expovariate(rate_rps)
        yield t


async def run_open_level(
    endpoint: Endpoint,
    *,
    arrival_rate_rps: float,
    max_in_flight: int,
    n_requests: int | None,
    input_tokens: int | dict,
    output_tokens: int | dict,
    seed: int,
    first_index: int,
    timeout_s: float,
    shared_prefix_tokens: int = 0,
    on_record: Callable[[dict[str, Any]], None],
    duration_s: float | None = None,
    repeat: int = 0,
) -> tuple[list[dict[str, Any]], float]:
    """One open-loop level: requests arrive as a Poisson process of `arrival_rate_rps` (exponential
    gaps, seeded: the same seed gives the same arrival times), whatever the server's pace, at most
    `max_in_flight` at once. It ends after n_requests arrivals, or when duration_s has passed.
    A request's send lag is how late it went out against its arrival time: the client's own
    lateness plus any wait for the in-flight cap. Records carry concurrency = max_in_flight and
    arrival_rate_rps. Returns (records, client CPU seconds)."""
    arrivals = poisson_offsets_s(arrival_rate_rps, f"{seed}:{first_index}:{arrival_rate_rps}")
    idle: list[StreamClient] = []  # connections of finished requests, reused by later ones
    slots = asyncio.Semaphore(max_in_flight)

    async def one(i: int, due_ns: int, builder: RecordBuilder) -> None:
        idx = first_index + i
        prompt = make_prompt(seed, idx, sample_length(input_tokens, seed, idx, "input"),
                             sample_length(output_tokens, seed, idx, "output"), shared_prefix_tokens)
        payload = json.dumps(chat_request_body(prompt, endpoint.model)).encode()
        async with slots:
            client = idle.pop() if idle else StreamClient(endpoint.url, keep_alive=endpoint.keep_alive)
            send_ns, end_ns, status, lines, kind, detail = await send_one(client, endpoint, payload, timeout_s)
            idle.append(client)
        builder.submit(dict(
            concurrency=max_in_flight, request_index=idx, worker=-1, send_ns=send_ns, end_ns=end_ns,
            send_lag_ns=max(0, send_ns - due_ns - client.connect_ns), http_status=status, lines=lines,
            error_kind=kind, error_detail=detail, wire=endpoint.wire,
            extra={"repeat": repeat, "arrival_rate_rps": arrival_rate_rps, "send_retried": client.resent_last},
        ))

    async def drive(builder: RecordBuilder) -> None:
        async with asyncio.TaskGroup() as requests:
            t0 = time.perf_counter_ns()
            i = 0
            while n_requests is None or i < n_requests:
                offset_s = next(arrivals)
                if duration_s is not None and offset_s >= duration_s:
                    break
                due_ns = t0 + int(offset_s * 1e9)
                wait_s = (due_ns - time.perf_counter_ns()) / 1e9
                if wait_s > 0:
                    await asyncio.sleep(wait_s)
                requests.create_task(one(i, due_ns, builder))
                i += 1
        for client in idle:
            client.close()

    return await _with_record_builder(on_record, drive)


def _first_failure(group: BaseExceptionGroup) -> BaseException:
    """The first real failure in a (nested) exception group, as itself; the rest are the
    cancellations it caused."""
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            return _first_failure(exc)
        if not isinstance(exc, asyncio.CancelledError):
            return exc
    return group.exceptions[0]



def run_loop(coro):
    """Run a coroutine on a fresh event loop: uvloop when installed (it is, with Airflow's API
    server), whose reads and wake-ups cost less CPU than asyncio's, else asyncio's own."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coro)


STREAMS_PER_PROCESS = 128  # streams one client process drives before its core becomes the limit


def client_processes(concurrency: int, configured: int | None = None) -> int:
    """How many load-generator processes a level uses: the config's number, else one per
    STREAMS_PER_PROCESS streams, at most one per core this process may run on, at least one."""
    if configured:
        return max(1, min(configured, concurrency))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, -(-concurrency // STREAMS_PER_PROCESS), concurrency))


def _child_level(endpoint: Endpoint, level_kwargs: dict[str, Any], concurrency: int, worker_offset: int,
                 counter, ready, go, results, part_path: str) -> None:
    """One process's share of a split level: its own event loop and connections, the request
    numbers taken from the shared counter, each record appended to its own part file as it
    completes; the records and CPU time go back to the parent."""
    import pickle

    def take() -> int:
        with counter.get_lock():
            i = counter.value
            counter.value += 1
            return i

    try:
        with open(part_path, "w") as sink:
            def on_record(rec: dict[str, Any]) -> None:
                sink.write(json.dumps(rec) + "\n")
                sink.flush()

            ready.release()
            go.wait()
            recs, cpu_s = run_loop(run_level(endpoint, concurrency=concurrency, on_record=on_record,
                                                next_index=take, worker_offset=worker_offset, **level_kwargs))
        results.put(pickle.dumps((recs, cpu_s, None)))
    except BaseException as e:  # noqa: BLE001 (reported to the parent, which raises)
        results.put(pickle.dumps(([], 0.0, f"{type(e).__name__}: {e}")))


def run_level_split(endpoint: Endpoint, *, concurrency: int, processes: int, on_record, part_dir: Path,
                    **level_kwargs: Any) -> tuple[list[dict[str, Any]], float]:
    """One closed-loop level driven by `processes` processes (each with its own event loop and a
    share of the streams), so the client is not held to one core. All start together (a barrier),
    take request numbers from one shared counter, and stamp time with the same system-wide
    monotonic clock (perf_counter_ns is CLOCK_MONOTONIC on Linux), so their records merge into
    one level. Returns (records, client CPU seconds per core the processes may use: processes
    sharing one core saturate it together)."""
    import multiprocessing as mp
    import pickle

    ctx = mp.get_context("spawn")  # no fork of a process that may hold threads (Airflow, botocore)
    counter, go, ready, results = ctx.Value("q", 0), ctx.Event(), ctx.Semaphore(0), ctx.Queue()
    shares = [concurrency // processes + (1 if k < concurrency % processes else 0) for k in range(processes)]
    parts = [part_dir / f"requests.part{k}.jsonl" for k in range(processes)]
    children = []
    offset = 0
    for k, share in enumerate(shares):
        children.append(ctx.Process(target=_child_level, args=(endpoint, level_kwargs, share, offset, counter, ready,
                                                              go, results, str(parts[k])), daemon=True))
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
    records = sorted((r for recs, _, _ in outcomes for r in recs), key=lambda r: r["end_ns"])
    for rec in records:  # into the sweep's own stream, in completion order
        on_record(rec)
    for p in parts:
        p.unlink(missing_ok=True)
    if errors:
        raise RuntimeError(f"load-generator process failed: {errors[0]}")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return records, sum(cpu for _, cpu, _ in outcomes) / min(processes, cores)


def request_schema():
    """The Parquet schema of requests.parquet (explicit, so every level's batch has the same types
    whatever its values: a level with no failure still has a string error_kind column)."""
    import pyarrow as pa

    return pa.schema([
        ("concurrency", pa.int32()), ("request_index", pa.int32()), ("worker", pa.int32()), ("ok", pa.bool_()),
        ("error_kind", pa.string()), ("error_detail", pa.string()), ("http_status", pa.int32()),
        ("send_ns", pa.int64()), ("first_content_ns", pa.int64()), ("end_ns", pa.int64()),
        ("send_lag_ms", pa.float64()), ("ttft_ms", pa.float64()), ("e2e_ms", pa.float64()),
        ("tpot_ms", pa.float64()), ("itl_ms", pa.list_(pa.float64())), ("content_chunks", pa.int32()),
        ("output_tokens", pa.int32()), ("output_tokens_source", pa.string()), ("output_tokens_counted", pa.int32()),
        ("input_tokens", pa.int32()), ("finish_reason", pa.string()), ("repeat", pa.int32()),
        ("arrival_rate_rps", pa.float64()), ("send_retried", pa.bool_()),
    ])


@dataclass
class SweepResult:
    requests_path: Path
    levels_path: Path
    levels: list[dict[str, Any]]


def _level_args(workload: dict[str, Any]) -> dict[str, Any]:
    return dict(
        input_tokens=workload["input_tokens"],  # a number of tokens, or a distribution (workload.sample_length)
        output_tokens=workload["output_tokens"],
        seed=int(workload.get("seed", 0)),
        timeout_s=float(workload.get("request_timeout_s", 120)),
        shared_prefix_tokens=int(workload.get("shared_prefix_tokens", 0)),
    )


def run_warmup(endpoint: Endpoint, workload: dict[str, Any], progress: ProgressFn | None = None) -> dict[str, Any]:
    """Requests whose timings are thrown away: the first requests pay for lazy loading, cache
    allocation and compilation. Raises if every warm-up request failed: the endpoint is unusable."""
    n = int(workload.get("warmup_requests", 0))
    if n == 0:
        return {"warmup_requests": 0, "failed": 0}
    (progress or (lambda _m: None))(f"warm-up: {n} request(s), timings discarded")
    recs, _ = run_loop(
        run_level(endpoint, concurrency=1, n_requests=n, first_index=-n, on_record=lambda r: None, **_level_args(workload))
    )
    failed = [r for r in recs if not r["ok"]]
    if len(failed) == n:
        raise RuntimeError(f"every warm-up request failed; first: {failed[0]['error_kind']}: {failed[0]['error_detail']}")
    return {"warmup_requests": n, "failed": len(failed)}


def run_sweep(
    endpoint: Endpoint,
    workload: dict[str, Any],
    out_dir: Path,
    slo: dict[str, float] | None = None,
    progress: ProgressFn | None = None,
    record_hook: Callable[[dict[str, Any]], None] | None = None,
) -> SweepResult:
    """One closed-loop level per configured concurrency, or one open-loop level per Poisson
    arrival rate (workload arrival_rates_rps) (warm-up is run_warmup's job); writes
    out_dir/requests.jsonl (each record as it completes), requests.parquet (a row group per level,
    written when the level ends) and levels.parquet (rewritten as each level ends, so a sweep that
    fails part-way keeps its finished levels). Only the current level's records are held in memory.
    record_hook, if given, sees each record after it was written."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    out_dir.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda _msg: None)
    # Closed loop: one level per concurrency. Open loop (arrival_rates_rps): one level per Poisson
    # arrival rate, each with the in-flight cap max_in_flight (default 256).
    rates = [float(r) for r in workload.get("arrival_rates_rps") or []]
    levels = [int(workload.get("max_in_flight") or 256)] * len(rates) if rates else list(workload["concurrency"])
    duration_s = workload.get("level_duration_s")
    # A timed level has no request count; request numbers stay apart across levels all the same.
    n = None if duration_s else int(workload["requests_per_level"])
    stride = 10**6 if duration_s else n
    repeats = int(workload.get("repeats") or 1)
    common = _level_args(workload)
    slo = slo or {}
    jsonl_path = out_dir / "requests.jsonl"
    requests_path = out_dir / "requests.parquet"
    levels_path = out_dir / "levels.parquet"
    level_rows: list[dict[str, Any]] = []
    schema = request_schema()

    with jsonl_path.open("w") as sink, pq.ParquetWriter(requests_path, schema) as writer:

        def on_record(rec: dict[str, Any]) -> None:
            sink.write(json.dumps(rec) + "\n")
            sink.flush()
            if record_hook is not None:
                record_hook(rec)

        for li, c in enumerate(levels):
            rate = rates[li] if rates else None
            say(f"level {li + 1}/{len(levels)}: " + (f"Poisson arrivals at {rate:g} req/s, at most {c} in flight, "
                                                     if rate else f"concurrency {c}, ") +
                (f"{duration_s:g} s" if duration_s else f"{n} requests"))
            procs = 1 if rate else client_processes(c, workload.get("client_processes"))
            recs, cpu_s, per_repeat = [], 0.0, []
            for rep in range(repeats):  # repeated runs of the level: confidence intervals
                first = (li * repeats + rep) * stride
                if rate:
                    r_recs, r_cpu = run_loop(
                        run_open_level(endpoint, arrival_rate_rps=rate, max_in_flight=c, n_requests=n,
                                       first_index=first, on_record=on_record, duration_s=duration_s,
                                       repeat=rep, **common))
                elif procs == 1:
                    r_recs, r_cpu = run_loop(
                        run_level(endpoint, concurrency=c, n_requests=n, first_index=first, on_record=on_record,
                                  duration_s=duration_s, repeat=rep, **common)
                    )
                else:  # record_hook fires as the merged records are written
                    r_recs, r_cpu = run_level_split(endpoint, concurrency=c, processes=procs, n_requests=n,
                                                    first_index=first, on_record=on_record, part_dir=out_dir,
                                                    duration_s=duration_s, repeat=rep, **common)
                recs.extend(r_recs)
                cpu_s += r_cpu
                per_repeat.append(metrics.summarize_level(r_recs, c))
            row = metrics.summarize_level(recs, c, slo.get("ttft_ms"), slo.get("tpot_ms"), cpu_s)
            row["repeats"] = repeats
            for metric in ("output_tokens_per_s", "ttft_ms_p50"):
                row[f"{metric}_ci95_low"], row[f"{metric}_ci95_high"] = metrics.confidence_interval(
                    [r[metric] for r in per_repeat])
            row["client_processes"] = procs
            # open loop: the offered load is the level's key, concurrency its in-flight cap
            row["load_mode"], row["arrival_rate_rps"] = ("poisson", rate) if rate else ("closed", 0.0)
            level_rows.append(row)
            writer.write_table(pa.Table.from_pylist(recs, schema=schema))
            pd.DataFrame(level_rows).to_parquet(levels_path, index=False)
            say(
                f"level {li + 1}/{len(levels)}: concurrency {c}: {row['requests_ok']}/{row['requests_attempted']} ok, "
                f"{_fmt(row['output_tokens_per_s'])} output tok/s, TTFT p50 {_fmt(row['ttft_ms_p50'])} ms"
            )

    return SweepResult(requests_path, levels_path, level_rows)


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"
