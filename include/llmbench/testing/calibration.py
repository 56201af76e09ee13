"""Calibration server: OpenAI chat-completions streaming on an exact schedule.

Token k (0-based) is due at request arrival + ttft_ms + k * itl_ms, an absolute deadline (a late
token does not push the later ones), and the server records when it actually wrote each token, so
client error is measured against what the server did, not against what it was asked to do.

  python -m llmbench.testing.calibration --port 8001 --ttft-ms 100 --itl-ms 10 --tokens 256
"""

from __future__ import annotations

import argparse
import asyncio
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


async def chat(request: web.Request) -> web.StreamResponse:
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
    web.run_app(make_app(a.ttft_ms, a.itl_ms, a.tokens), host="127.0.0.1", port=a.port, access_log=None)


if __name__ == "__main__":
    main()
