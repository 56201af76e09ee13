"""Calibration server: OpenAI chat-completions streaming on an exact schedule.

Token k (0-based) is due at request arrival + ttft_ms + k * itl_ms, an absolute deadline (a late
token does not push the later ones), and the server records when it actually wrote each token, so
client error is measured against what the server did, not against what it was asked to do.

  python -m llmbench.testing.calibration --port 8001 --ttft-ms 100 --itl-ms 10 --tokens 256
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import time

from aiohttp import web

SCHEDULE = web.AppKey("schedule", dict)
SENT = web.AppKey("sent", list)


def _chunk(delta: dict, finish: str | None = None) -> bytes:
    return ("data: " + json.dumps({"object": "chat.completion.chunk",
                                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n").encode()


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
    await write(_chunk({}, "length"))
    prompt_tokens = len(body["messages"][-1]["content"].split())
    await write(("data: " + json.dumps({"choices": [], "usage": {
        "prompt_tokens": prompt_tokens, "completion_tokens": n, "total_tokens": prompt_tokens + n}}) + "\n\n").encode())
    await write(b"data: [DONE]\n\n")


_TOKEN = _chunk({"content": " tok"})
_FINISH = _chunk({}, "length")
_DONE = b"data: [DONE]\n\n"


class _Ticker:
    """Every open stream's next token in one heap, written by one timer callback: one wake-up per
    due moment instead of one task step per token, so one server core keeps a schedule for about
    a thousand streams (make bench's 1024). Writes go straight to the transport; the record is the
    time each write was made."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.heap: list[tuple[float, int, "_Stream"]] = []
        self.seq = 0
        self.timer: asyncio.TimerHandle | None = None
        self.timer_at = float("inf")

    def add(self, due: float, stream: "_Stream") -> None:
        self.seq += 1
        heapq.heappush(self.heap, (due, self.seq, stream))
        if due < self.timer_at:
            self._arm()

    def _arm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.timer, self.timer_at = None, float("inf")
        if self.heap:
            due = self.heap[0][0]
            self.timer_at = due
            self.timer = self.loop.call_at(due - time.perf_counter() + self.loop.time(), self._run)

    def _run(self) -> None:
        self.timer, self.timer_at = None, float("inf")
        heap, now = self.heap, time.perf_counter()
        while heap and heap[0][0] <= now:
            _, _, stream = heapq.heappop(heap)
            due = stream.write_next()
            if due is not None:
                self.seq += 1
                heapq.heappush(heap, (due, self.seq, stream))
            now = time.perf_counter()
        self._arm()


class _Stream:
    def __init__(self, transport, arrival: float, n: int, sched: dict, tail: bytes) -> None:
        self.transport, self.arrival, self.n, self.tail = transport, arrival, n, tail
        self.ttft_s, self.itl_s = sched["ttft_ms"] / 1000, sched["itl_ms"] / 1000
        self.sent: list[float] = []
        self.done = asyncio.get_running_loop().create_future()

    def write_next(self) -> float | None:
        """Write token k; return when token k+1 is due, or None when the stream has ended."""
        if self.transport.is_closing():
            self.done.set_result(False)
            return None
        self.transport.write(_TOKEN)
        self.sent.append(time.perf_counter())
        k = len(self.sent)
        if k < self.n:
            return self.arrival + self.ttft_s + k * self.itl_s  # absolute: a late token does not push the rest
        self.transport.write(self.tail)
        self.done.set_result(True)
        return None


TICKER = web.AppKey("ticker", dict)  # {"ticker": _Ticker}, made by the first request, on the serving loop


async def chat(request: web.Request) -> web.StreamResponse:
    arrival = time.perf_counter()
    body = await request.json()
    sched = request.app[SCHEDULE]
    n = int(body.get("max_tokens") or sched["tokens"])
    prompt_tokens = len(body["messages"][-1]["content"].split())
    tail = _FINISH + ("data: " + json.dumps({"choices": [], "usage": {
        "prompt_tokens": prompt_tokens, "completion_tokens": n, "total_tokens": prompt_tokens + n}}) + "\n\n").encode() + _DONE
    # The body's length is known in advance, so it goes out unchunked, written by the ticker
    # straight to the transport after the headers.
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    resp.content_length = n * len(_TOKEN) + len(tail)
    await resp.prepare(request)
    ticker = request.app[TICKER].get("ticker") or request.app[TICKER].setdefault("ticker", _Ticker())
    stream = _Stream(request.transport, arrival, n, sched, tail)
    if n == 0:
        request.transport.write(tail)
    else:
        ticker.add(arrival + stream.ttft_s, stream)
        if not await stream.done:
            return resp  # the client went away
    await resp.write_eof()
    request.app[SENT].append({"arrival": arrival, "sent": stream.sent})
    return resp


async def _record(request: web.Request) -> web.Response:
    """GET /calibration/record: what the server really did since the last reset, in the same
    metric definitions the client uses: ttft = arrival -> first token written, itl = gaps between
    tokens written, throughput = tokens / (first arrival -> last token). POST resets it."""
    from llmbench.metrics import distribution

    if request.method == "POST":
        request.app[SENT].clear()
        return web.json_response({"reset": True})
    done = [r for r in request.app[SENT] if r["sent"]]
    if not done:
        return web.json_response({"requests": 0})
    tokens = sum(len(r["sent"]) for r in done)
    window_s = max(r["sent"][-1] for r in done) - min(r["arrival"] for r in done)
    out = {"requests": len(done), "tokens": tokens, "window_s": window_s, "output_tokens_per_s": tokens / window_s}
    out.update(distribution(((r["sent"][0] - r["arrival"]) * 1000 for r in done), "ttft_ms"))
    out.update(distribution((1000 * (b - a) for r in done for a, b in zip(r["sent"], r["sent"][1:])), "itl_ms"))
    return web.json_response(out)


async def _models(request: web.Request) -> web.Response:
    return web.json_response({"data": [{"id": "calibration"}]})


async def _health(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


def add_routes(app: web.Application, ttft_ms: float = 100.0, itl_ms: float = 10.0, tokens: int = 256) -> None:
    app[SCHEDULE] = {"ttft_ms": ttft_ms, "itl_ms": itl_ms, "tokens": tokens}
    app[SENT] = []
    app[TICKER] = {}
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", _models)
    app.router.add_route("*", "/calibration/record", _record)
    app.router.add_get("/health", _health)


def make_app(ttft_ms: float = 100.0, itl_ms: float = 10.0, tokens: int = 256) -> web.Application:
    app = web.Application()
    add_routes(app, ttft_ms, itl_ms, tokens)
    return app


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=8001)
    p.add_argument("--ttft-ms", type=float, default=100.0)
    p.add_argument("--itl-ms", type=float, default=10.0)
    p.add_argument("--tokens", type=int, default=256)
    a = p.parse_args()
    # asyncio's own loop, not uvloop: uvloop's timers have millisecond resolution and fire up to
    # a millisecond early, so a timer for a token due in 0.4 ms would spin until it is due.
    web.run_app(make_app(a.ttft_ms, a.itl_ms, a.tokens), host="127.0.0.1", port=a.port, access_log=None)


if __name__ == "__main__":
    main()
