"""Calibration server: OpenAI chat-completions streaming on an exact schedule.

Token k (0-based) is due at request arrival + ttft_ms + k * itl_ms, an absolute deadline (a late
token does not push the later ones), and the server records when it actually wrote each token, so
client error is measured against what the server did, not against what it was asked to do.

  python -m llmbench.testing.calibration --port 8001 --ttft-ms 100 --itl-ms 10 --tokens 256
"""

from __future__ import annotations

import asyncio
import heapq
import json
import socket
import time

from aiohttp import web

from llmbench.loadgen.httpstream import SO_TIMESTAMPNS, received_ns

SCHEDULE = web.AppKey("schedule", dict)
SENT = web.AppKey("sent", list)


def _chunk(delta: dict, finish: str | None = None) -> bytes:
    return (
        "data: "
        + json.dumps(
            {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        )
        + "\n\n"
    ).encode()


def _tail(n: int, prompt_tokens: int) -> list[bytes]:
    """What follows the last token: the finish reason, the usage, [DONE]."""
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": n, "total_tokens": prompt_tokens + n}
    return [
        _chunk({}, "length"),
        ("data: " + json.dumps({"choices": [], "usage": usage}) + "\n\n").encode(),
        b"data: [DONE]\n\n",
    ]


async def scheduled_stream(body: dict, sched: dict, arrival: float, write, sent: list[float]) -> None:
    """Write one OpenAI SSE stream through `write(bytes)` on the schedule; token k is due at
    arrival + ttft + k * itl (absolute deadlines). Appends each token's actual write time to `sent`."""
    n = int(body.get("max_tokens") or sched["tokens"])
    for k in range(n):
        delay = arrival + (sched["ttft_ms"] + k * sched["itl_ms"]) / 1000 - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        await write(_chunk({"content": " tok"}))
        sent.append(time.perf_counter())
    for part in _tail(n, len(body["messages"][-1]["content"].split())):
        await write(part)


async def chat(request: web.Request) -> web.StreamResponse:
    """The in-process (aiohttp) form, for tests that run the schedule beside other routes; the
    process form (`main`, what make bench uses) is CalibrationServer."""
    arrival = time.perf_counter()
    body = await request.json()
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    sent: list[float] = []
    await scheduled_stream(body, request.app[SCHEDULE], arrival, resp.write, sent)
    await resp.write_eof()
    request.app[SENT].append({"arrival": arrival, "sent": sent})
    return resp


async def _record(request: web.Request) -> web.Response:
    """GET /calibration/record: what the server really did since the last reset, in the same
    metric definitions the client uses: ttft = arrival -> first token written, itl = gaps between
    tokens written, throughput = tokens / (first arrival -> last token); with ?requests=1 also
    request by request (record_requests). POST resets it."""
    if request.method == "POST":
        request.app[SENT].clear()
        return web.json_response({"reset": True})
    return web.json_response(record_response(request.app[SENT], request.query_string))


def record_response(sent: list[dict], query: str) -> dict:
    """GET /calibration/record's answer: record_summary, and with requests=1 in the query string
    also record_requests as per_request."""
    out = record_summary(sent)
    if "requests=1" in query.split("&"):
        out["per_request"] = record_requests(sent)
    return out


def record_requests(sent: list[dict]) -> list[dict]:
    """The server's record request by request, in arrival order: arrival_s (the process form: the
    kernel's receive time of the request's first byte; the aiohttp form: its handler's start) and
    sent_s (when each token was written). Times are on time.perf_counter's clock, CLOCK_MONOTONIC
    on Linux and so the same in every process on the machine: a client's send_ns / 1e9 compares
    with them directly."""
    return [{"arrival_s": r["arrival"], "sent_s": r["sent"]} for r in sorted(sent, key=lambda r: r["arrival"])]


def fetch_record(base_url: str, reset: bool = False) -> dict:
    """A running calibration server's record with its requests (GET /calibration/record?requests=1),
    or, reset=True, clear it (POST)."""
    import urllib.request

    req = urllib.request.Request(
        base_url + "/calibration/record" + ("" if reset else "?requests=1"),
        method="POST" if reset else "GET",
        data=b"" if reset else None,
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def record_summary(sent: list[dict]) -> dict:
    """The server's record ({"arrival", "sent": [token write times]} per request) in the client's
    metric definitions."""
    from llmbench.analysis.metrics import distribution

    done = [r for r in sent if r["sent"]]
    if not done:
        return {"requests": 0}
    tokens = sum(len(r["sent"]) for r in done)
    window_s = max(r["sent"][-1] for r in done) - min(r["arrival"] for r in done)
    out = {"requests": len(done), "tokens": tokens, "window_s": window_s, "output_tokens_per_s": tokens / window_s}
    out.update(distribution(((r["sent"][0] - r["arrival"]) * 1000 for r in done), "ttft_ms"))
    out.update(
        distribution((1000 * (b - a) for r in done for a, b in zip(r["sent"], r["sent"][1:], strict=False)), "itl_ms")
    )
    return out


async def _models(request: web.Request) -> web.Response:
    return web.json_response({"data": [{"id": "calibration"}]})


async def _health(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


def add_routes(app: web.Application, ttft_ms: float = 100.0, itl_ms: float = 10.0, tokens: int = 256) -> None:
    app[SCHEDULE] = {"ttft_ms": ttft_ms, "itl_ms": itl_ms, "tokens": tokens}
    app[SENT] = []
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", _models)
    app.router.add_route("*", "/calibration/record", _record)
    app.router.add_get("/health", _health)


def make_app(ttft_ms: float = 100.0, itl_ms: float = 10.0, tokens: int = 256) -> web.Application:
    app = web.Application()
    add_routes(app, ttft_ms, itl_ms, tokens)
    return app


# ---- the process form: raw non-blocking sockets on one event loop ----------------------------
#
# Why not aiohttp here: the server's record is the truth the client is judged by, so it must see
# what the client sees. aiohttp stamps a request when its handler starts; when a thousand streams
# send at once, requests wait tens of milliseconds in its parser before that, and the client's
# TTFT would be charged for the server's queue. Here a request's arrival is the kernel's receive
# time of its first byte (SO_TIMESTAMPNS), and each token's time is taken at its send() call.

_TOKEN = _chunk({"content": " tok"})


class _Ticker:
    """Every open stream's next token in one heap, written by one timer callback: one wake-up per
    due moment instead of one task step per token."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.heap: list[tuple[float, int, _Conn]] = []
        self.seq = 0
        self.timer: asyncio.TimerHandle | None = None
        self.timer_at = float("inf")

    def add(self, due: float, conn: _Conn) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (due, self.seq, conn))
        if due < self.timer_at:
            self._arm()

    def _arm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.timer, self.timer_at = None, float("inf")
        if self.heap:
            self.timer_at = self.heap[0][0]
            self.timer = self.loop.call_at(self.timer_at - time.perf_counter() + self.loop.time(), self._run)

    def _run(self) -> None:
        self.timer, self.timer_at = None, float("inf")
        heap = self.heap
        while heap and heap[0][0] <= time.perf_counter():
            _, _, conn = heapq.heappop(heap)
            due = conn.next_token()
            if due is not None:
                self.seq += 1
                heapq.heappush(heap, (due, self.seq, conn))
        self._arm()


class _Conn:
    """One client connection: reads requests (keep-alive), answers them, streams tokens when the
    ticker says they are due."""

    def __init__(self, server: CalibrationServer, sock: socket.socket) -> None:
        self.server, self.sock = server, sock
        self.buf = b""
        self.out = b""  # what the socket would not take yet
        self.first_ns: int | None = None  # kernel receive time of the pending request's first byte
        self.stream: dict | None = None  # the response being streamed
        self.close_after = False
        server.loop.add_reader(sock, self.on_readable)

    def on_readable(self) -> None:
        try:
            data, anc, _, _ = self.sock.recvmsg(65536, 256)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return self.close()
        if not data:
            return self.close()
        if not self.buf:
            self.first_ns = received_ns(anc)
        self.buf += data
        while self.stream is None and self.buf:
            if not self._one_request():
                break

    def _one_request(self) -> bool:
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return False
        head = self.buf[:end].decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head[1:])}
        length = int(headers.get("content-length", 0))
        if len(self.buf) < end + 4 + length:
            return False
        body, self.buf = self.buf[end + 4 : end + 4 + length], self.buf[end + 4 + length :]
        arrival = (self.first_ns if self.first_ns is not None else time.perf_counter_ns()) / 1e9
        self.first_ns = time.perf_counter_ns() if self.buf else None
        method, path = (head[0].split(" ") + ["", ""])[:2]
        self.close_after = headers.get("connection", "").lower() == "close"
        self.server.handle(self, method, path, body, arrival)
        return True

    def respond(self, status: str, content_type: str, body: bytes) -> None:
        self.write(
            f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
            f"Connection: {'close' if self.close_after else 'keep-alive'}\r\n\r\n".encode()
            + body
        )
        self.finished()

    def start_stream(self, n: int, arrival: float, tail: bytes) -> None:
        length = n * len(_TOKEN) + len(tail)  # known in advance: no chunked framing to write
        self.write(
            f"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {length}\r\n"
            f"Connection: {'close' if self.close_after else 'keep-alive'}\r\n\r\n".encode()
        )
        self.stream = {"n": n, "arrival": arrival, "tail": tail, "sent": []}
        sched = self.server.schedule
        self.server.ticker.add(arrival + sched["ttft_ms"] / 1000, self)

    def next_token(self) -> float | None:
        """Write the next token; return when the one after is due, or None when the stream ended."""
        st = self.stream
        if st is None or self.sock.fileno() < 0:
            return None
        self.write(_TOKEN)
        st["sent"].append(time.perf_counter())
        k = len(st["sent"])
        if k < st["n"]:
            sched = self.server.schedule  # absolute deadlines: a late token does not push the rest
            return st["arrival"] + (sched["ttft_ms"] + k * sched["itl_ms"]) / 1000
        self.write(st["tail"])
        self.server.sent.append({"arrival": st["arrival"], "sent": st["sent"]})
        self.stream = None
        self.finished()
        return None

    def finished(self) -> None:
        if self.close_after:
            self.close()
        elif self.buf:  # a pipelined request waited behind this response
            while self.stream is None and self.buf and self._one_request():
                pass

    def write(self, data: bytes) -> None:
        if self.sock.fileno() < 0:
            return
        if not self.out:
            try:
                sent = self.sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                return self.close()
            data = data[sent:]
            if not data:
                return
            self.server.loop.add_writer(self.sock, self._flush)
        self.out += data

    def _flush(self) -> None:
        try:
            sent = self.sock.send(self.out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return self.close()
        self.out = self.out[sent:]
        if not self.out:
            self.server.loop.remove_writer(self.sock)

    def close(self) -> None:
        if self.sock.fileno() >= 0:
            self.server.loop.remove_reader(self.sock)
            self.server.loop.remove_writer(self.sock)
            self.sock.close()
        self.stream = None


class CalibrationServer:
    """The calibration schedule on raw sockets: POST /v1/chat/completions (streamed),
    GET|POST /calibration/record[?requests=1], GET /v1/models, GET /health."""

    def __init__(self, ttft_ms: float = 100.0, itl_ms: float = 10.0, tokens: int = 256) -> None:
        self.schedule = {"ttft_ms": ttft_ms, "itl_ms": itl_ms, "tokens": tokens}
        self.sent: list[dict] = []

    async def serve(self, host: str, port: int) -> None:
        self.loop = asyncio.get_running_loop()
        self.ticker = _Ticker(self.loop)
        lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lsock.bind((host, port))
        lsock.listen(4096)
        lsock.setblocking(False)
        self.loop.add_reader(lsock, self._accept, lsock)
        print(f"calibration server on http://{host}:{lsock.getsockname()[1]} {self.schedule}", flush=True)
        await asyncio.Event().wait()

    def _accept(self, lsock: socket.socket) -> None:
        while True:
            try:
                sock, _ = lsock.accept()
            except (BlockingIOError, InterruptedError):
                return
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            _Conn(self, sock)

    def handle(self, conn: _Conn, method: str, path: str, body: bytes, arrival: float) -> None:
        path, _, query = path.partition("?")
        if method == "POST" and path == "/v1/chat/completions":
            try:
                req = json.loads(body)
                n = int(req.get("max_tokens") or self.schedule["tokens"])
                prompt_tokens = len(req["messages"][-1]["content"].split())
            except (ValueError, KeyError, IndexError, TypeError) as e:
                return conn.respond("400 Bad Request", "application/json", json.dumps({"error": str(e)}).encode())
            tail = b"".join(_tail(n, prompt_tokens))
            if n <= 0:
                return conn.respond("200 OK", "text/event-stream", tail)
            return conn.start_stream(n, arrival, tail)
        if path == "/calibration/record" and method in ("GET", "POST"):
            if method == "POST":
                self.sent.clear()
                out = {"reset": True}
            else:
                out = record_response(self.sent, query)
            return conn.respond("200 OK", "application/json", json.dumps(out).encode())
        if method == "GET" and path == "/v1/models":
            return conn.respond("200 OK", "application/json", b'{"data": [{"id": "calibration"}]}')
        if method == "GET" and path == "/health":
            return conn.respond("200 OK", "application/json", b'{"status": "ok"}')
        conn.respond("404 Not Found", "text/plain", b"not found")


def main() -> None:
    from llmbench.testing._serve import schedule_parser

    a = schedule_parser(__doc__.splitlines()[0], 8001).parse_args()
    # asyncio's own loop, not uvloop: uvloop's timers have millisecond resolution and fire up to
    # a millisecond early, so a timer for a token due in 0.4 ms would spin until it is due.
    asyncio.run(CalibrationServer(a.ttft_ms, a.itl_ms, a.tokens).serve("127.0.0.1", a.port))


if __name__ == "__main__":
    main()
