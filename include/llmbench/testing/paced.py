"""A plain aiohttp.web streaming server on a fixed schedule: the independent server the offered
load is held against (benchmarks/offered_load.py), for llmbench and its peers (AIPerf, GuideLLM)
alike.

Unlike the calibration server (raw sockets, kernel receive stamps, one timer for every stream),
this is what an ordinary Python inference stand-in looks like: aiohttp's own parser, one handler
task per request, `await resp.write` per token. It keeps the schedule of a server with a fixed
TTFT and inter-token latency: token k (0-based) is written at handler start + ttft + k * itl
(absolute deadlines: a late token does not push the later ones back). A stream carries
max_completion_tokens or max_tokens tokens when the request gives one, else --tokens; there is
no end-of-sequence here, so `ignore_eos` changes nothing but is accepted. Every token is the word
" tok" (one token to any whitespace or word-level tokenizer), so a client that counts tokens
itself counts the same number as the usage chunk says.

OpenAI chat completions, streamed as server-sent events when "stream" is true (with a usage chunk
when stream_options.include_usage is, or always with --always-usage, the default), one JSON answer
otherwise (written after the whole schedule). Also GET /v1/models, GET /health, and
GET /paced/record (POST resets it): per request, when its handler started and when its first and
last tokens were written (time.perf_counter, CLOCK_MONOTONIC: comparable with a client's
perf_counter_ns / 1e9 on the same machine).

  python -m llmbench.testing.paced --port 8002 [--ttft-ms 100 --itl-ms 10 --tokens 256] [--core 0]
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid

from aiohttp import web

SCHEDULE = web.AppKey("schedule", dict)
RECORD = web.AppKey("record", list)
MODEL = "paced"


def _sse(obj: dict) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def _chunk(rid: str, created: int, model: str, delta: dict, finish: str | None = None) -> bytes:
    return _sse(
        {
            "id": rid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
    )


def output_tokens(body: dict, default: int) -> int:
    """How many tokens a request gets: max_completion_tokens, else max_tokens, else the default."""
    for key in ("max_completion_tokens", "max_tokens"):
        v = body.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            return v
    return default


def prompt_tokens(body: dict) -> int:
    """Whitespace words of every message's text: the usage's prompt_tokens."""
    n = 0
    for m in body.get("messages") or []:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, str):
            n += len(content.split())
        elif isinstance(content, list):
            n += sum(len(str(p.get("text", "")).split()) for p in content if isinstance(p, dict))
    return n


async def chat(request: web.Request) -> web.StreamResponse:
    start = time.perf_counter()
    try:
        body = await request.json()
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            raise ValueError("messages: a list is required")
    except ValueError as e:
        return web.json_response({"error": {"message": str(e), "type": "invalid_request_error"}}, status=400)
    sched = request.app[SCHEDULE]
    n = output_tokens(body, sched["tokens"])
    ttft_s, itl_s = sched["ttft_ms"] / 1000, sched["itl_ms"] / 1000
    model = str(body.get("model") or MODEL)
    rid, created = f"chatcmpl-{uuid.uuid4().hex[:16]}", int(time.time())
    usage = {"prompt_tokens": prompt_tokens(body), "completion_tokens": n}
    usage["total_tokens"] = usage["prompt_tokens"] + n
    peer = request.transport.get_extra_info("peername") if request.transport else None
    # the client's port: which requests came on the same connection
    stamps = {"start": start, "first": None, "last": None, "tokens": 0, "port": peer[1] if peer else None}
    if not body.get("stream"):
        wait = start + ttft_s + max(0, n - 1) * itl_s - time.perf_counter()
        if wait > 0:
            await asyncio.sleep(wait)
        stamps.update(first=time.perf_counter(), last=time.perf_counter(), tokens=n)
        request.app[RECORD].append(stamps)
        message = {"role": "assistant", "content": " tok" * n}
        return web.json_response(
            {
                "id": rid,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": "length"}],
                "usage": usage,
            }
        )
    include_usage = sched["always_usage"] or bool((body.get("stream_options") or {}).get("include_usage"))
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await resp.prepare(request)
    token = _chunk(rid, created, model, {"content": " tok"})  # the same bytes every time
    try:
        await resp.write(_chunk(rid, created, model, {"role": "assistant", "content": ""}))
        for k in range(n):
            wait = start + ttft_s + k * itl_s - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            await resp.write(token)
            now = time.perf_counter()
            if k == 0:
                stamps["first"] = now
            stamps["last"], stamps["tokens"] = now, k + 1
        tail = _chunk(rid, created, model, {}, "length")
        if include_usage:
            tail += _sse({"id": rid, "object": "chat.completion.chunk", "created": created, "model": model,
                          "choices": [], "usage": usage})  # fmt: skip
        await resp.write(tail + b"data: [DONE]\n\n")
        await resp.write_eof()
    except (ConnectionError, RuntimeError):
        pass  # the client went away mid-stream
    request.app[RECORD].append(stamps)
    return resp


async def models(request: web.Request) -> web.Response:
    return web.json_response({"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "llmbench"}]})


async def health(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def record(request: web.Request) -> web.Response:
    """GET: every finished request since the last reset ({start, first, last, tokens, port}: seconds
    on time.perf_counter's clock, and the client's port of its connection) and the schedule; POST:
    reset."""
    if request.method == "POST":
        request.app[RECORD].clear()
        return web.json_response({"reset": True})
    return web.json_response({"schedule": request.app[SCHEDULE], "requests": request.app[RECORD]})


def make_app(
    ttft_ms: float = 100.0, itl_ms: float = 10.0, tokens: int = 256, always_usage: bool = True, chat_handler=None
) -> web.Application:
    """The app; chat_handler (default `chat`) lets a stand-in built on it (testing.specdecode) see
    each request before `chat` answers it."""
    app = web.Application(client_max_size=64 << 20)
    app[SCHEDULE] = {"ttft_ms": ttft_ms, "itl_ms": itl_ms, "tokens": tokens, "always_usage": always_usage}
    app[RECORD] = []
    app.router.add_post("/v1/chat/completions", chat_handler or chat)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/health", health)
    app.router.add_route("*", "/paced/record", record)
    return app


def fetch_record(base_url: str, reset: bool = False) -> dict:
    """A running paced server's record (GET /paced/record), or, reset=True, clear it (POST)."""
    import urllib.request

    req = urllib.request.Request(
        base_url + "/paced/record", method="POST" if reset else "GET", data=b"" if reset else None
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def main() -> None:
    from llmbench.testing._serve import schedule_parser

    p = schedule_parser(__doc__.splitlines()[0], 8002)
    p.add_argument("--core", type=int, default=None, help="pin the server to this core (os.sched_setaffinity)")
    p.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio",
                   help="the event loop aiohttp runs on (uvloop: as aiohttp deployments often run)")  # fmt: skip
    p.add_argument("--usage-on-request", action="store_true",
                   help="send the usage chunk only when stream_options.include_usage asks for it")  # fmt: skip
    a = p.parse_args()
    if a.core is not None:
        os.sched_setaffinity(0, {a.core})
    loop = None
    if a.loop == "uvloop":
        import uvloop

        loop = uvloop.new_event_loop()
    web.run_app(
        make_app(a.ttft_ms, a.itl_ms, a.tokens, not a.usage_on_request),
        host="127.0.0.1",
        port=a.port,
        print=None,
        access_log=None,
        backlog=4096,
        loop=loop,
    )


if __name__ == "__main__":
    main()
