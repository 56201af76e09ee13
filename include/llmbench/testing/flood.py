"""A hostile endpoint for tests: answers every POST with 200 and a text/event-stream body that
never ends, written as fast as the connection takes it (a misbehaving server, or an attack on
the client's memory and deadlines). `python -m llmbench.testing.flood --port PORT`."""

from __future__ import annotations

import argparse
import asyncio

from aiohttp import web

LINE = b"data: " + b"x" * 65_530 + b"\n"  # 64 KiB per write: one SSE line that never parses


async def flood(request: web.Request) -> web.StreamResponse:
    await request.read()
    resp = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream"})
    if request.app[CLOSE]:
        resp.force_close()  # "Connection: close": a client may no longer count the connection as its own
    await resp.prepare(request)
    mb_per_s = request.app[RATE]
    loop = asyncio.get_running_loop()
    t0, sent = loop.time(), 0
    try:
        while True:
            await resp.write(LINE)
            sent += len(LINE)
            if mb_per_s:  # at most this pace (0: as fast as the connection takes it)
                ahead = sent / (mb_per_s * 1e6) - (loop.time() - t0)
                if ahead > 0:
                    await asyncio.sleep(ahead)
    except (ConnectionResetError, ConnectionError, RuntimeError):
        pass  # the client gave up: what it was meant to do
    return resp


RATE = web.AppKey("rate", float)
CLOSE = web.AppKey("close", bool)


def app(mb_per_s: float = 0.0, close: bool = False) -> web.Application:
    a = web.Application()
    a[RATE] = mb_per_s
    a[CLOSE] = close
    a.router.add_post("/{tail:.*}", flood)
    return a


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--mb-per-s", type=float, default=0.0, help="at most this many MB/s per response (0: unlimited)")
    p.add_argument("--close", action="store_true", help="answer with Connection: close")
    a = p.parse_args()
    web.run_app(app(a.mb_per_s, a.close), host="127.0.0.1", port=a.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
