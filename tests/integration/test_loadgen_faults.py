"""The sweep against a misbehaving HTTP server: every failure is a record with the right kind,
the sweep goes on, error_rate is exact, nothing escapes as an exception."""

import asyncio
import json
import threading

import pandas as pd
import pytest
from aiohttp import web

from llmbench.backends.base import Endpoint
from llmbench.loadgen.sweep import run_sweep
from llmbench.schemas.workload import Workload


def _chunk(d):
    return ("data: " + json.dumps(d) + "\n\n").encode()


async def _stream(request, parts, pause=0.0):
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    for p in parts:
        await resp.write(p)
        if pause:
            await asyncio.sleep(pause)
    await resp.write_eof()
    return resp


MODES = web.AppKey("modes", list)
SERVED = web.AppKey("served", list)


async def handler(request):
    body = await request.json()
    words = body["messages"][0]["content"]
    n = body["max_tokens"]
    # Faults are played in order of arrival; concurrency 1 makes that the request order.
    modes, served = request.app[MODES], request.app[SERVED]
    mode = modes[len(served) % len(modes)]
    served.append(mode)
    content = [_chunk({"choices": [{"delta": {"content": "x"}, "finish_reason": None}]}) for _ in range(n)]
    done = [_chunk({"choices": [{"delta": {}, "finish_reason": "length"}]}),
            _chunk({"choices": [], "usage": {"prompt_tokens": len(words.split()), "completion_tokens": n}}),
            b"data: [DONE]\n\n"]
    if mode == "ok":
        return await _stream(request, content + done, pause=0.001)
    if mode == "500":
        return web.Response(status=500, text="boom")
    if mode == "429":
        return web.Response(status=429, headers={"Retry-After": "1"}, text="slow down")
    if mode == "503":
        return web.Response(status=503, text="unavailable")
    if mode == "reset":  # two tokens, then the connection drops mid-stream
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for p in content[:2]:
            await resp.write(p)
        request.transport.abort()
        return resp
    if mode == "truncated":
        return await _stream(request, content[:2])
    if mode == "malformed":
        return await _stream(request, content[:1] + [b"data: {oops\n\n"] + done)
    if mode == "empty":
        return await _stream(request, done)
    if mode == "stall":
        await asyncio.sleep(5)
        return await _stream(request, content + done)
    raise AssertionError(mode)


@pytest.fixture
def fault_server():
    started = threading.Event()
    state = {}

    def serve():
        loop = asyncio.new_event_loop()
        app = web.Application()
        app[MODES], app[SERVED] = state["modes"], []
        app.router.add_post("/v1/chat/completions", handler)
        runner = web.AppRunner(app)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        state["port"] = site._server.sockets[0].getsockname()[1]
        state["loop"], state["runner"] = loop, runner
        started.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())

    def start(modes):
        state["modes"] = modes
        t = threading.Thread(target=serve, daemon=True)
        t.start()
        started.wait(10)
        state["thread"] = t
        return f"http://127.0.0.1:{state['port']}/v1/chat/completions"

    yield start
    state["loop"].call_soon_threadsafe(state["loop"].stop)
    state["thread"].join(10)


def test_every_fault_is_one_failed_record_and_the_sweep_goes_on(fault_server, tmp_path):
    modes = ["ok", "500", "429", "truncated", "malformed", "empty", "stall", "503", "reset", "ok"]
    url = fault_server(modes)
    workload = Workload.model_validate({"input_tokens": 40, "output_tokens": 5, "concurrency": [1],
                                        "requests_per_level": len(modes), "request_timeout_s": 1.0, "seed": 1})
    result = run_sweep(Endpoint(url), workload, tmp_path)
    req = pd.read_parquet(result.requests_path).sort_values("request_index")
    kinds = [k if isinstance(k, str) else None for k in req["error_kind"]]
    assert kinds == [None, "http_status", "http_status", "truncated", "malformed_chunk", "empty_response",
                     "timeout", "http_status", "stream_error", None]
    assert [req["http_status"].tolist()[i] for i in (1, 2, 7)] == [500, 429, 503]
    assert "slow down" in req["error_detail"].tolist()[2]
    lv = result.levels[0]
    assert lv["requests_attempted"] == 10 and lv["requests_failed"] == 8
    assert lv["error_rate"] == 8 / 10
    assert json.loads(lv["errors_by_kind"]) == {"http_status": 3, "truncated": 1, "malformed_chunk": 1,
                                               "empty_response": 1, "timeout": 1, "stream_error": 1}
    ok = req[req["ok"]]
    assert (ok["output_tokens"] == 5).all() and (ok["ttft_ms"] > 0).all()
    # every record reached the JSON-lines file as it completed
    assert len((tmp_path / "requests.jsonl").read_text().splitlines()) == 10


def test_connection_refused_is_a_record(tmp_path):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    workload = Workload.model_validate({"input_tokens": 40, "output_tokens": 5, "concurrency": [2],
                                        "requests_per_level": 3, "request_timeout_s": 2.0})
    result = run_sweep(Endpoint(f"http://127.0.0.1:{port}/v1/chat/completions"), workload, tmp_path)
    assert result.levels[0]["error_rate"] == 1.0
    assert set(pd.read_parquet(result.requests_path)["error_kind"]) == {"connection"}
