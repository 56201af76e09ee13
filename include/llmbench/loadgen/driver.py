"""The load generator's driver: one level of streaming requests against an endpoint, paced by a
schedule (in the spirit of guidellm's scheduler strategies):

  ClosedLoop(concurrency)            `concurrency` streams; each sends its next request as soon as
                                     its previous one ended, until the level's requests are sent.
  PoissonArrivals(rate, cap, key)    open loop: requests arrive as a seeded Poisson process
                                     whatever the server's pace, at most `cap` in flight.

One driver (run_level) runs both: the schedule says when a request is due and how many may be in
flight; the rest (bodies, connections, the request and its record, the record builder, the client
CPU) is shared. The hot path only timestamps bytes as they arrive (httpstream: kernel receive
stamps on plain TCP, on time.perf_counter_ns's clock); parsing and metric arithmetic happen in a
helper process (recordworker, wire), off the event loop. A failed request is a record with an
error kind, never an exception that ends the level. The schedules are in schedules.py; a
closed-loop level split over several processes, in processes.py; the sweep over levels and its
files, in sweep.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import itertools
import json
import ssl
import time
from collections.abc import Callable, Iterator, Mapping

from llmbench.backends.base import Endpoint
from llmbench.loadgen.httpstream import HEAD_MAX_BYTES, DeadlinePassed, ResponseTooLarge, StreamClient
from llmbench.loadgen.prompts import (
    Prompt,
    WordSizing,
    chat_request_body,
    dataset_prompt,
    draw_prefix,
    make_prompt,
    session_turn_prompt,
    trace_prompt,
)
from llmbench.loadgen.recordworker import FAILED_KEEP_BYTES, RecordBuilder, classify, first_bytes
from llmbench.loadgen.schedules import Schedule, TraceArrivals, session_turn_key
from llmbench.schemas import registry
from llmbench.schemas.dataset import Conversation, DatasetIndex, DatasetSpec, MultiTurn
from llmbench.schemas.records import RequestRecord
from llmbench.schemas.workload import DEFAULT_BYTES_PER_REQUEST, Length, length_range, sample_length

OnRecord = Callable[[RequestRecord], None]


# Raw reads a timed-out request hands on (decoded in the record builder, which keeps at most
# recordworker.FAILED_KEEP_BYTES of its body): the head's allowance on top.
FAILED_KEEP_RAW_BYTES = FAILED_KEEP_BYTES + HEAD_MAX_BYTES

Exchange = tuple[int, int, list[tuple[int, bytes]], str, str | None]


async def send_one(
    client: StreamClient,
    endpoint: Endpoint,
    body: bytes,
    timeout_s: float,
    max_bytes: int = DEFAULT_BYTES_PER_REQUEST,
) -> Exchange:
    """Send one streaming request on this worker's connection. Returns (send_ns, end_ns, reads,
    ended, ended_detail): the connection's reads as they came, timestamped and undecoded, and how
    the exchange ended (recordworker.ENDINGS). Nothing is decoded here: the framing, status and
    body are the record builder's (recordworker.classify), so that responses ending together do
    not hold up the loop. Never raises for anything the server or network does. A response of
    more than max_bytes ends as too_large (only its first read is handed on); timeout_s is a hard
    deadline, held however fast bytes arrive."""
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream", **endpoint.headers}
    if endpoint.signer is not None:
        headers = endpoint.signer.sign(endpoint.url, body, headers)  # before the clock starts
    deadline_ns = time.perf_counter_ns() + int(timeout_s * 1e9)
    try:
        async with asyncio.timeout(timeout_s):
            send_ns, end_ns, reads, outcome = await client.post(body, headers, max_bytes, deadline_ns)
        if isinstance(outcome, DeadlinePassed):
            raise TimeoutError
    except TimeoutError:
        now = time.perf_counter_ns()
        kept = first_bytes(client.reads, FAILED_KEEP_RAW_BYTES)
        return (client.sent_ns or now), now, kept, "timeout", f"no complete response within {timeout_s}s"
    except (OSError, ssl.SSLError) as e:  # no connection could be made
        now = time.perf_counter_ns()
        return now, now, [], "connection", f"{type(e).__name__}: {e}"[:300]
    if isinstance(outcome, ResponseTooLarge):
        return send_ns, end_ns, reads[:1], "too_large", str(outcome)
    return send_ns, end_ns, reads, "done", f"{type(outcome).__name__}: {outcome}"[:300] if outcome else None


def model_answer(reads: list[tuple[int, bytes]], ended: str, ended_detail: str | None, wire: str = "sse") -> str:
    """The model's answer to one chat request, as multi_turn history "model" carries it into the
    session's next turn: the streamed content text of the response (wire.chat_answer_text), after
    the HTTP framing and the wire's own (an event-stream framing, registry.WireFormat.unframe) are undone. A failed
    response (an error event, a timeout, a cut connection, a status other than 200) or one that streamed
    no content gives "": the next turn then carries an empty assistant turn, and its history_chars
    counts nothing for it. So does a wire with a stream format of its own (WireFormat.parse), whose bodies
    carry no history anyway (stream_body sends the last user turn alone). Runs on the load
    generator's loop: about 0.45 ms of CPU for a 256-token answer, two thirds of it undoing the
    chunked framing (classify, as the record builder does)."""
    from llmbench.loadgen.wire import chat_answer_text  # here: only a model-history level needs it on this process

    _, body, error_kind, _ = classify(reads, ended, ended_detail)
    fmt = registry.wire(wire)
    if error_kind is None and fmt.unframe is not None:
        body, error_kind, _ = fmt.unframe(body)
    return "" if error_kind or fmt.parse is not None else chat_answer_text(body)


PREBUILT_BODIES = 10_000
PREBUILT_BYTES = 64 << 20


def prebuild(body: Callable[[int], bytes], n: int) -> list[bytes]:
    """Bodies 0.. of a level, built ahead: at most PREBUILT_BODIES of them and PREBUILT_BYTES."""
    bodies: list[bytes] = []
    size = 0
    for i in range(min(n, PREBUILT_BODIES)):
        if size >= PREBUILT_BYTES:
            break
        bodies.append(body(i))
        size += len(bodies[-1])
    return bodies


async def run_level(
    endpoint: Endpoint,
    schedule: Schedule,
    *,
    n_requests: int | None,
    input_tokens: Length,
    output_tokens: Length,
    seed: int,
    first_index: int,
    timeout_s: float,
    shared_prefix_tokens: int = 0,
    prompt_style: str = "words",
    on_record: OnRecord,
    next_index: Callable[[], int] | None = None,
    worker_offset: int = 0,
    duration_s: float | None = None,
    repeat: int = 0,
    max_response_bytes: int = DEFAULT_BYTES_PER_REQUEST,
    level_concurrency: int | None = None,
    dataset: tuple[DatasetSpec, DatasetIndex] | None = None,
    prefixes: tuple[int, str, float] = (1, "uniform", 1.0),
    multi_turn: MultiTurn | None = None,
    sizing: WordSizing | None = None,
    dataset_counts: Mapping[int, int] | None = None,
) -> tuple[list[RequestRecord], float]:
    """One level paced by `schedule`. Returns (records, client CPU seconds spent during the level).

    It ends after n_requests requests, or, with duration_s, when no request may start any more
    (closed loop: a free stream sends nothing once duration_s has passed since the level began;
    open loop: no arrival after duration_s); those in flight finish. next_index: where the next
    request number comes from (default: a local counter; a counter shared between processes when
    a closed-loop level is split over several, run_level_split); worker_offset: the number of this
    process's first stream. sizing: the served model's token counts (tokenizer.sizing_for) that
    size generated and trace prompts, each record then carrying its prompt's count; None: words ~
    tokens. dataset_counts: the served model's count of a dataset (or code-edit) request's prompt by request
    number (a session's turn: session_turn_key), counted before the level (sweep:
    tokenizer.count_prompts), carried by its record; a request without one carries none.
    """

    stream_body = registry.wire(endpoint.wire).stream_body  # None: an OpenAI chat body

    trace = schedule if isinstance(schedule, TraceArrivals) else None
    if trace is not None:  # a trace level is its rows (at most n_requests of them)
        n_requests = len(trace.trace) if n_requests is None else min(n_requests, len(trace.trace))

    # The client's token count of request i's prompt, from when its body is built until its record
    # is submitted (built ahead: counting costs the level nothing).
    client_counts: dict[int, int] = {}

    def body(i: int) -> bytes:
        idx = first_index + i
        if trace is not None:  # request i of the level is row i of the trace
            prompt = trace_prompt(seed, trace.trace, i, trace.block_tokens, sizing)
        elif dataset is not None:  # the user's own prompts (workload.dataset)
            prompt = dataset_prompt(*dataset, seed, idx, sample_length(output_tokens, seed, idx, "output"))
        else:
            prompt = make_prompt(
                seed,
                idx,
                sample_length(input_tokens, seed, idx, "input"),
                sample_length(output_tokens, seed, idx, "output"),
                shared_prefix_tokens,
                prompt_style,
                draw_prefix(seed, idx, *prefixes),
                sizing,
            )
        if trace is None and dataset_counts and idx in dataset_counts:  # counted before the level (sweep)
            prompt = dataclasses.replace(prompt, input_tokens_client=dataset_counts[idx])
        if prompt.input_tokens_client is not None:
            client_counts[i] = prompt.input_tokens_client
        return encode(prompt)

    def encode(prompt: Prompt) -> bytes:
        if stream_body is not None:  # the wire's own body (e.g. one whose model is in the URL)
            return json.dumps(stream_body(prompt.text, prompt.system, prompt.max_tokens, endpoint.model)).encode()
        return json.dumps(chat_request_body(prompt, endpoint.model)).encode()

    # A count-bounded level in one process builds its first bodies before the clock starts (at most
    # PREBUILT_BODIES of them, PREBUILT_BYTES in all: a huge level must not fill memory before it
    # sends anything); the rest, a timed level's, and one process's share of a split level's
    # (which requests it gets is not known in advance) are built when the request is taken.
    bodies = prebuild(body, n_requests) if n_requests is not None and next_index is None else []
    take = next_index or itertools.count().__next__
    arrivals = schedule.arrivals()  # None: closed loop
    # A split level's process drives its share of the streams; its records carry the level's.
    concurrency, rate = level_concurrency or schedule.streams, schedule.arrival_rate_rps
    streams = schedule.streams
    # Connections between requests, the most recently used last: a closed-loop stream gets its own
    # back at once (nothing runs between its request's end and its next send), an open-loop
    # arrival the warmest. See Endpoint.keep_alive.
    idle: list[StreamClient] = []
    opened: list[StreamClient] = []
    clock = asyncio.Lock()  # open loop: the free stream that waits for the next arrival holds it
    over = False  # open loop: no arrival is left
    deadline: float | None = None  # closed loop, timed: no request starts after it
    t0_ns = 0  # when the level began (set as it begins)
    max_tokens = length_range(output_tokens)[1]  # no request of the level asks for more
    if trace is not None:
        max_tokens = max(trace.trace.output_lengths)
    if dataset is not None and dataset[0].output == "data" and dataset[1].max_data_tokens:
        max_tokens = max(max_tokens, dataset[1].max_data_tokens)  # a row's own length may be longer

    async def stream(w: int, builder: RecordBuilder) -> None:
        nonlocal over
        worker = worker_offset + w if arrivals is None else -1
        while True:
            if arrivals is None:  # closed loop: the next request, now
                if deadline is not None and time.perf_counter() >= deadline:
                    return
                i = take()
                if n_requests is not None and i >= n_requests:
                    return
                payload = bodies[i] if i < len(bodies) else body(i)
                due_ns = time.perf_counter_ns()
                scheduled_ms = None
            else:  # open loop: the next arrival, at its time (late when every stream was busy)
                # Free streams queue for the clock in the order they came free (asyncio.Lock is
                # FIFO), so the one that takes an arrival was free from free_ns: lateness before
                # then was the in-flight cap's (every stream busy), after it the client's own.
                free_ns = time.perf_counter_ns()
                async with clock:
                    if over:
                        return
                    i = take()
                    offset_s = next(arrivals, None)  # None: a trace's last row was sent
                    if (
                        offset_s is None
                        or (n_requests is not None and i >= n_requests)
                        or (duration_s is not None and offset_s >= duration_s)
                    ):
                        over = True
                        return
                    due_ns = t0_ns + int(offset_s * 1e9)
                    scheduled_ms = offset_s * 1000
                    wait_s = (due_ns - time.perf_counter_ns()) / 1e9
                    if wait_s > 0:
                        await asyncio.sleep(wait_s)
                payload = bodies[i] if i < len(bodies) else body(i)
            if idle:
                client = idle.pop()
            else:
                client = StreamClient(endpoint.url, keep_alive=endpoint.keep_alive)
                opened.append(client)
            send_ns, end_ns, reads, ended, ended_detail = await send_one(
                client, endpoint, payload, timeout_s, max_response_bytes
            )
            # The record is built in the helper process; the stream goes on at once.
            submit(
                builder, i, send_ns, end_ns, due_ns, client, payload, ended, ended_detail, reads, worker=worker,
                scheduled_ms=scheduled_ms, prefix_id=prefix_of(first_index + i),
                input_tokens_client=client_counts.pop(i, None),
                stream_wait_ns=0 if arrivals is None else max(0, free_ns - due_ns),  # at most send_lag (wire)
            )  # fmt: skip
            idle.append(client)

    def prefix_of(idx: int) -> int:  # the shared prefix a generated prompt carries (draw_prefix)
        generated = trace is None and dataset is None and shared_prefix_tokens
        return draw_prefix(seed, idx, *prefixes) if generated else 0

    def submit(builder, i, send_ns, end_ns, due_ns, client, payload, ended, ended_detail, reads, **extra) -> None:
        """Hand one exchange to the record builder (the record is built there; the stream goes on)."""
        builder.submit(
            dict(
                concurrency=concurrency,
                request_index=first_index + i,
                worker=extra.pop("worker"),
                send_ns=send_ns,
                end_ns=end_ns,
                # waiting on the client itself; connecting is the server's (or network's) time
                send_lag_ns=max(0, send_ns - due_ns - client.connect_ns),
                reads=reads,
                ended=ended,
                ended_detail=ended_detail,
                wire=endpoint.wire,
                repeat=repeat,
                arrival_rate_rps=rate,
                send_retried=client.resent_last,
                # what the response's usage is checked against (wire.check_usage)
                max_tokens=max_tokens,
                request_bytes=len(payload),
                **extra,
            )
        )

    sessions = itertools.count()  # multi-turn: this process's next session
    by_model = multi_turn is not None and multi_turn.history == "model"

    def turn_body(s: int, conv: Conversation, turn: int, answers: list[str] | None) -> tuple[bytes, int, int | None]:
        """Session s's turn `turn` (one the row has): (body, characters of history it carries: the
        earlier user turns and the assistant turns actually sent, the row's or the model's; the
        client's token count of it, or None). The count was taken before the level of the row's
        own turns (dataset_counts), so a turn carrying the model's answers has none."""
        assert dataset is not None
        key = session_turn_key(s, turn)
        out = sample_length(output_tokens, seed, key, "output")
        prompt = session_turn_prompt(conv, turn, out, dataset[0], answers)
        assert prompt is not None  # turn < the row's user turns (prepare_session)
        history = sum(len(text) for role, text in (prompt.messages or ())[:-1] if role != "system")
        counted = (dataset_counts or {}).get(key) if not (by_model and turn > 0) else None
        return encode(prompt), history, counted

    def prepare_session(s: int) -> tuple[Conversation, int, list[tuple[bytes, int, int | None]]]:
        """Session s, built ahead: its row, how many turns it sends, and (body, history characters,
        client count) of each turn known before it starts: every turn with history "data"; with
        "model" only the first (it carries no answer yet), the others are built as the answers arrive."""
        assert dataset is not None and multi_turn is not None
        spec, index = dataset
        conv = index.conversation(index.row_of(seed, s, spec.sample == "with_replacement"))
        n_turns = min(multi_turn.max_turns, len(conv.user_turns()))
        ahead = min(1, n_turns) if by_model else n_turns
        return conv, n_turns, [turn_body(s, conv, turn, [] if by_model else None) for turn in range(ahead)]

    async def session_stream(w: int, builder: RecordBuilder) -> None:
        """A multi-turn stream: session after session, each a dataset row's user turns in order on
        this stream's connection, each turn carrying the turns before it, think_time_s apart. The
        next session is built while its predecessor's last turn is in flight, so a stream's
        turnaround holds no file read or encoding. With history "model", turn k + 1 can only be
        built once turn k's answer has arrived: its answer is decoded (model_answer) and the body
        encoded right then, inside the think time (which is shortened by what that took, so the
        pause between an answer and the next turn is still think_time_s; with no think time, the
        decoding is part of the stream's turnaround)."""
        assert multi_turn is not None
        client = StreamClient(endpoint.url, keep_alive=endpoint.keep_alive)
        opened.append(client)
        s = first_index + next(sessions)
        session = prepare_session(s)
        while True:
            conv, n_turns, built = session
            upcoming: tuple[int, tuple[Conversation, int, list[tuple[bytes, int, int | None]]]] | None = None
            answers: list[str] = []  # history "model": the model's answers to this session's turns so far
            for turn in range(n_turns):
                if deadline is not None and time.perf_counter() >= deadline:
                    return
                i = take()
                if n_requests is not None and i >= n_requests:
                    return
                payload, history, counted = built[turn]
                due_ns = time.perf_counter_ns()
                exchange = send_one(client, endpoint, payload, timeout_s, max_response_bytes)
                if turn == n_turns - 1:  # a task only here: the request goes out, then the next session is built
                    sending = asyncio.create_task(exchange)
                    await asyncio.sleep(0)
                    nxt = first_index + next(sessions)
                    upcoming = (nxt, prepare_session(nxt))
                    send_ns, end_ns, reads, ended, ended_detail = await sending
                else:
                    send_ns, end_ns, reads, ended, ended_detail = await exchange
                answered_s = time.perf_counter()
                submit(
                    builder, i, send_ns, end_ns, due_ns, client, payload, ended, ended_detail, reads,
                    worker=worker_offset + w, session=s, turn_index=turn, history_chars=history,
                    input_tokens_client=counted,
                )  # fmt: skip
                if by_model and turn + 1 < n_turns:
                    answers.append(model_answer(reads, ended, ended_detail, endpoint.wire))
                    built.append(turn_body(s, conv, turn + 1, answers))
                if multi_turn.think_time_s:
                    spent_s = time.perf_counter() - answered_s if by_model else 0.0
                    await asyncio.sleep(max(0.0, multi_turn.think_time_s - spent_s))
            if upcoming is None:  # a row without a turn to send (not after scan): the next one
                nxt = first_index + next(sessions)
                upcoming = (nxt, prepare_session(nxt))
            s, session = upcoming

    async def drive(builder: RecordBuilder) -> None:
        nonlocal deadline, t0_ns
        deadline = time.perf_counter() + duration_s if duration_s and arrivals is None else None
        t0_ns = time.perf_counter_ns()
        try:
            async with asyncio.TaskGroup() as tasks:
                for w in range(streams):
                    tasks.create_task((session_stream if multi_turn else stream)(w, builder))
        finally:
            for client in opened:
                client.close()

    return await _with_record_builder(on_record, drive)


async def _with_record_builder(on_record: OnRecord, drive) -> tuple[list[RequestRecord], float]:
    """Run a level's drive(builder) beside the record builder it submits to; every record goes to
    on_record as it comes back. Returns (records, client CPU seconds: this process's during the
    level and the builder's)."""
    records: list[RequestRecord] = []

    def deliver(rec: RequestRecord) -> None:
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
        with no_full_collections():
            async with asyncio.TaskGroup() as tg:
                tg.create_task(builder.read())
                tg.create_task(drive_then_finish())
    except BaseExceptionGroup as group:
        raise _first_failure(group) from None
    finally:
        await builder.close()
    return records, time.process_time() - cpu0 + builder.cpu_s


@contextlib.contextmanager
def no_full_collections() -> Iterator[None]:
    """No full (oldest-generation) garbage collection while a level runs: one scans every object
    the process holds (Airflow's, the imports', the level's records) and stopped the loop for 60
    to 110 ms in a 256-stream level, every stream's reads and sends waiting behind it. What
    existed before the level is frozen (never scanned again until unfrozen), the young
    generations are still collected as usual, and the full collection runs after the level."""
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(threshold[0], threshold[1], 1 << 30)
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def _first_failure(group: BaseExceptionGroup) -> BaseException:
    """The first real failure in a (nested) exception group, as itself; the rest are the
    cancellations it caused."""
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            return _first_failure(exc)
        if not isinstance(exc, asyncio.CancelledError):
            return exc
    return group.exceptions[0]


def thread_runqueue_s() -> float | None:
    """Seconds the calling thread has waited on a run queue (ready to run, no core free) since it
    started: /proc/thread-self/schedstat's second field. A level's event loop runs on the thread
    that calls run_loop, so the difference across a level is how long the client was starved of a
    core (metrics.client_starved). None where the kernel does not say (not Linux, no schedstats)."""
    try:
        with open("/proc/thread-self/schedstat", "rb") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


def run_loop(coro):
    """Run a coroutine on a fresh event loop: uvloop when installed (it is, with Airflow's API
    server), whose reads and wake-ups cost less CPU than asyncio's, else asyncio's own."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coro)
