"""The load generator's driver: one level of streaming requests against an endpoint, paced by a
strategy (schedules.Strategy, in the spirit of guidellm's scheduler strategies):

  ClosedLoop(concurrency)            `concurrency` streams; each sends its next request as soon as
                                     its previous one ended, until the level's requests are sent.
  PoissonArrivals(rate, cap, key)    open loop: requests arrive as a seeded Poisson process
                                     whatever the server's pace, at most `cap` in flight (and
                                     GammaArrivals, ConstantArrivals, RateShape, TraceArrivals).

One driver (run_level) runs them all: the strategy says when a request is due and how many may be
in flight; the rest (bodies, connections, the request and its record, the record builder, the client
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
from dataclasses import dataclass
from typing import Any

from llmbench.backends import registry
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
from llmbench.loadgen.schedules import Strategy, TraceArrivals, session_turn_key
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
    schedule: Strategy,
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
    a closed-loop level is split over several, processes.run_level_split); worker_offset: the number of this
    process's first stream. sizing: the served model's token counts (tokenizer.sizing_for) that
    size generated and trace prompts, each record then carrying its prompt's count; None: words ~
    tokens. dataset_counts: the served model's count of a dataset (or code-edit) request's prompt by request
    number (a session's turn: session_turn_key), counted before the level (sweep:
    tokenizer.count_prompts), carried by its record; a request without one carries none.
    """
    level = _Level(
        endpoint, schedule, n_requests, _Prompts(input_tokens, output_tokens, seed, first_index, shared_prefix_tokens,
        prompt_style, dataset, prefixes, sizing, dataset_counts), timeout_s, next_index, worker_offset, duration_s,
        repeat, max_response_bytes, level_concurrency, multi_turn,
    )  # fmt: skip
    return await _with_record_builder(on_record, level.drive)


@dataclass
class _Prompts:
    """What a level's prompts are made from (run_level's arguments of the same names)."""

    input_tokens: Length
    output_tokens: Length
    seed: int
    first_index: int
    shared_prefix_tokens: int
    prompt_style: str
    dataset: tuple[DatasetSpec, DatasetIndex] | None
    prefixes: tuple[int, str, float]
    sizing: WordSizing | None
    dataset_counts: Mapping[int, int] | None


class _Level:
    """One running level (run_level): its bodies, its streams (closed loop, open loop, multi-turn
    sessions), and the exchanges it hands to the record builder. One object per level; its
    attributes are what the level's streams share."""

    def __init__(
        self,
        endpoint: Endpoint,
        schedule: Strategy,
        n_requests: int | None,
        prompts: _Prompts,
        timeout_s: float,
        next_index: Callable[[], int] | None,
        worker_offset: int,
        duration_s: float | None,
        repeat: int,
        max_response_bytes: int,
        level_concurrency: int | None,
        multi_turn: MultiTurn | None,
    ) -> None:
        self.endpoint, self.p, self.timeout_s = endpoint, prompts, timeout_s
        self.worker_offset, self.duration_s, self.repeat = worker_offset, duration_s, repeat
        self.max_response_bytes, self.multi_turn = max_response_bytes, multi_turn
        self.stream_body = registry.wire(endpoint.wire).stream_body  # None: an OpenAI chat body
        self.trace = trace = schedule if isinstance(schedule, TraceArrivals) else None
        if trace is not None:  # a trace level is its rows (at most n_requests of them)
            n_requests = len(trace.trace) if n_requests is None else min(n_requests, len(trace.trace))
        self.n_requests = n_requests
        # The client's token count of request i's prompt, from when its body is built until its
        # record is submitted (built ahead: counting costs the level nothing).
        self.client_counts: dict[int, int] = {}
        # A count-bounded level in one process builds its first bodies before the clock starts (at
        # most PREBUILT_BODIES of them, PREBUILT_BYTES in all: a huge level must not fill memory
        # before it sends anything); the rest, a timed level's, and one process's share of a split
        # level's (which requests it gets is not known in advance) are built when the request is taken.
        self.bodies = prebuild(self.body, n_requests) if n_requests is not None and next_index is None else []
        self.take = next_index or itertools.count().__next__
        self.arrivals = None if schedule.closed else schedule.arrivals()  # None: due when a stream is free
        # A split level's process drives its share of the streams; its records carry the level's.
        self.concurrency, self.rate = level_concurrency or schedule.streams, schedule.arrival_rate_rps
        self.streams = schedule.streams
        # Connections between requests, the most recently used last: a closed-loop stream gets its
        # own back at once (nothing runs between its request's end and its next send), an open-loop
        # arrival the warmest. See Endpoint.keep_alive.
        self.idle: list[StreamClient] = []
        self.opened: list[StreamClient] = []
        self.clock = asyncio.Lock()  # open loop: the free stream that waits for the next arrival holds it
        self.over = False  # open loop: no arrival is left
        self.deadline: float | None = None  # closed loop, timed: no request starts after it
        self.t0_ns = 0  # when the level began (set as it begins)
        max_tokens = length_range(prompts.output_tokens)[1]  # no request of the level asks for more
        if trace is not None:
            max_tokens = max(trace.trace.output_lengths)
        dataset = prompts.dataset
        if dataset is not None and dataset[0].output == "data" and dataset[1].max_data_tokens:
            max_tokens = max(max_tokens, dataset[1].max_data_tokens)  # a row's own length may be longer
        self.max_tokens = max_tokens
        self.sessions = itertools.count()  # multi-turn: this process's next session
        self.by_model = multi_turn is not None and multi_turn.history == "model"

    def body(self, i: int) -> bytes:
        p, trace = self.p, self.trace
        idx = p.first_index + i
        if trace is not None:  # request i of the level is row i of the trace
            prompt = trace_prompt(p.seed, trace.trace, i, trace.block_tokens, p.sizing)
        elif p.dataset is not None:  # the user's own prompts (workload.dataset)
            prompt = dataset_prompt(*p.dataset, p.seed, idx, sample_length(p.output_tokens, p.seed, idx, "output"))
        else:
            prompt = make_prompt(
                p.seed,
                idx,
                sample_length(p.input_tokens, p.seed, idx, "input"),
                sample_length(p.output_tokens, p.seed, idx, "output"),
                p.shared_prefix_tokens,
                p.prompt_style,
                draw_prefix(p.seed, idx, *p.prefixes),
                p.sizing,
            )
        if trace is None and p.dataset_counts and idx in p.dataset_counts:  # counted before the level (sweep)
            prompt = dataclasses.replace(prompt, input_tokens_client=p.dataset_counts[idx])
        if prompt.input_tokens_client is not None:
            self.client_counts[i] = prompt.input_tokens_client
        return self.encode(prompt)

    def encode(self, prompt: Prompt) -> bytes:
        if self.stream_body is not None:  # the wire's own body (e.g. one whose model is in the URL)
            body = self.stream_body(prompt.text, prompt.system, prompt.max_tokens, self.endpoint.model)
            return json.dumps(body).encode()
        return json.dumps(chat_request_body(prompt, self.endpoint.model)).encode()

    def _next_closed(self) -> tuple[int, bytes, int] | None:
        """Closed loop: (request number, body, due ns) of the next request, now; None: the level is done."""
        if self.deadline is not None and time.perf_counter() >= self.deadline:
            return None
        i = self.take()
        if self.n_requests is not None and i >= self.n_requests:
            return None
        return i, self.bodies[i] if i < len(self.bodies) else self.body(i), time.perf_counter_ns()

    async def _next_arrival(self) -> tuple[int, bytes, int, float, int] | None:
        """Open loop: (request number, body, due ns, scheduled ms, free ns) of the next arrival, at
        its time (late when every stream was busy); None: no arrival is left."""
        # Free streams queue for the clock in the order they came free (asyncio.Lock is FIFO), so
        # the one that takes an arrival was free from free_ns: lateness before then was the
        # in-flight cap's (every stream busy), after it the client's own.
        free_ns = time.perf_counter_ns()
        async with self.clock:
            if self.over:
                return None
            i = self.take()
            assert self.arrivals is not None
            offset_s = next(self.arrivals, None)  # None: a trace's last row was sent
            if (
                offset_s is None
                or (self.n_requests is not None and i >= self.n_requests)
                or (self.duration_s is not None and offset_s >= self.duration_s)
            ):
                self.over = True
                return None
            due_ns = self.t0_ns + int(offset_s * 1e9)
            wait_s = (due_ns - time.perf_counter_ns()) / 1e9
            if wait_s > 0:
                await asyncio.sleep(wait_s)
        return i, self.bodies[i] if i < len(self.bodies) else self.body(i), due_ns, offset_s * 1000, free_ns

    async def stream(self, w: int, builder: RecordBuilder) -> None:
        closed = self.arrivals is None
        worker = self.worker_offset + w if closed else -1
        endpoint = self.endpoint
        while True:
            if closed:
                nxt = self._next_closed()
                if nxt is None:
                    return
                i, payload, due_ns = nxt
                scheduled_ms, free_ns = None, due_ns
            else:
                arrival = await self._next_arrival()
                if arrival is None:
                    return
                i, payload, due_ns, scheduled_ms, free_ns = arrival
            if self.idle:
                client = self.idle.pop()
            else:
                client = StreamClient(endpoint.url, keep_alive=endpoint.keep_alive)
                self.opened.append(client)
            exchange = await send_one(client, endpoint, payload, self.timeout_s, self.max_response_bytes)
            # The record is built in the helper process; the stream goes on at once.
            self.submit(
                builder, i, due_ns, client, payload, exchange, worker=worker, scheduled_ms=scheduled_ms,
                prefix_id=self.prefix_of(self.p.first_index + i), input_tokens_client=self.client_counts.pop(i, None),
                stream_wait_ns=0 if closed else max(0, free_ns - due_ns),  # at most send_lag (wire)
            )  # fmt: skip
            self.idle.append(client)

    def prefix_of(self, idx: int) -> int:  # the shared prefix a generated prompt carries (draw_prefix)
        p = self.p
        generated = self.trace is None and p.dataset is None and p.shared_prefix_tokens
        return draw_prefix(p.seed, idx, *p.prefixes) if generated else 0

    def submit(self, builder: RecordBuilder, i: int, due_ns: int, client: StreamClient, payload: bytes,
               exchange: Exchange, **extra: Any) -> None:  # fmt: skip
        """Hand one exchange to the record builder (the record is built there; the stream goes on)."""
        send_ns, end_ns, reads, ended, ended_detail = exchange
        builder.submit(
            dict(
                concurrency=self.concurrency,
                request_index=self.p.first_index + i,
                worker=extra.pop("worker"),
                send_ns=send_ns,
                end_ns=end_ns,
                # waiting on the client itself; connecting is the server's (or network's) time
                send_lag_ns=max(0, send_ns - due_ns - client.connect_ns),
                reads=reads,
                ended=ended,
                ended_detail=ended_detail,
                wire=self.endpoint.wire,
                repeat=self.repeat,
                arrival_rate_rps=self.rate,
                send_retried=client.resent_last,
                # what the response's usage is checked against (wire.check_usage)
                max_tokens=self.max_tokens,
                request_bytes=len(payload),
                **extra,
            )
        )

    def turn_body(
        self, s: int, conv: Conversation, turn: int, answers: list[str] | None
    ) -> tuple[bytes, int, int | None]:
        """Session s's turn `turn` (one the row has): (body, characters of history it carries: the
        earlier user turns and the assistant turns actually sent, the row's or the model's; the
        client's token count of it, or None). The count was taken before the level of the row's
        own turns (dataset_counts), so a turn carrying the model's answers has none."""
        p = self.p
        assert p.dataset is not None
        key = session_turn_key(s, turn)
        out = sample_length(p.output_tokens, p.seed, key, "output")
        prompt = session_turn_prompt(conv, turn, out, p.dataset[0], answers)
        assert prompt is not None  # turn < the row's user turns (prepare_session)
        history = sum(len(text) for role, text in (prompt.messages or ())[:-1] if role != "system")
        counted = (p.dataset_counts or {}).get(key) if not (self.by_model and turn > 0) else None
        return self.encode(prompt), history, counted

    def prepare_session(self, s: int) -> tuple[Conversation, int, list[tuple[bytes, int, int | None]]]:
        """Session s, built ahead: its row, how many turns it sends, and (body, history characters,
        client count) of each turn known before it starts: every turn with history "data"; with
        "model" only the first (it carries no answer yet), the others are built as the answers arrive."""
        assert self.p.dataset is not None and self.multi_turn is not None
        spec, index = self.p.dataset
        conv = index.conversation(index.row_of(self.p.seed, s, spec.sample == "with_replacement"))
        n_turns = min(self.multi_turn.max_turns, len(conv.user_turns()))
        ahead = min(1, n_turns) if self.by_model else n_turns
        return conv, n_turns, [self.turn_body(s, conv, turn, [] if self.by_model else None) for turn in range(ahead)]

    def _next_session(self) -> tuple[int, tuple[Conversation, int, list[tuple[bytes, int, int | None]]]]:
        s = self.p.first_index + next(self.sessions)
        return s, self.prepare_session(s)

    async def session_stream(self, w: int, builder: RecordBuilder) -> None:
        """A multi-turn stream: session after session, each a dataset row's user turns in order on
        this stream's connection, each turn carrying the turns before it, think_time_s apart. The
        next session is built while its predecessor's last turn is in flight, so a stream's
        turnaround holds no file read or encoding. With history "model", turn k + 1 can only be
        built once turn k's answer has arrived: its answer is decoded (model_answer) and the body
        encoded right then, inside the think time (which is shortened by what that took, so the
        pause between an answer and the next turn is still think_time_s; with no think time, the
        decoding is part of the stream's turnaround)."""
        assert self.multi_turn is not None
        endpoint, think_s = self.endpoint, self.multi_turn.think_time_s
        client = StreamClient(endpoint.url, keep_alive=endpoint.keep_alive)
        self.opened.append(client)
        s, session = self._next_session()
        while True:
            conv, n_turns, built = session
            upcoming: tuple[int, tuple[Conversation, int, list[tuple[bytes, int, int | None]]]] | None = None
            answers: list[str] = []  # history "model": the model's answers to this session's turns so far
            for turn in range(n_turns):
                if self.deadline is not None and time.perf_counter() >= self.deadline:
                    return
                i = self.take()
                if self.n_requests is not None and i >= self.n_requests:
                    return
                payload, history, counted = built[turn]
                due_ns = time.perf_counter_ns()
                exchange = send_one(client, endpoint, payload, self.timeout_s, self.max_response_bytes)
                if turn == n_turns - 1:  # a task only here: the request goes out, then the next session is built
                    sending = asyncio.create_task(exchange)
                    await asyncio.sleep(0)
                    upcoming = self._next_session()
                    done = await sending
                else:
                    done = await exchange
                answered_s = time.perf_counter()
                self.submit(builder, i, due_ns, client, payload, done, worker=self.worker_offset + w, session=s,
                            turn_index=turn, history_chars=history, input_tokens_client=counted)  # fmt: skip
                if self.by_model and turn + 1 < n_turns:
                    answers.append(model_answer(done[2], done[3], done[4], endpoint.wire))
                    built.append(self.turn_body(s, conv, turn + 1, answers))
                if think_s:
                    spent_s = time.perf_counter() - answered_s if self.by_model else 0.0
                    await asyncio.sleep(max(0.0, think_s - spent_s))
            if upcoming is None:  # a row without a turn to send (not after scan): the next one
                upcoming = self._next_session()
            s, session = upcoming

    async def drive(self, builder: RecordBuilder) -> None:
        self.deadline = time.perf_counter() + self.duration_s if self.duration_s and self.arrivals is None else None
        self.t0_ns = time.perf_counter_ns()
        try:
            async with asyncio.TaskGroup() as tasks:
                for w in range(self.streams):
                    tasks.create_task((self.session_stream if self.multi_turn else self.stream)(w, builder))
        finally:
            for client in self.opened:
                client.close()


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
