"""Run an aiohttp app on 127.0.0.1 in a background thread (tests) and stop it again."""

from __future__ import annotations

import argparse
import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager

import aiohttp
from aiohttp import web


def upstream_session(
    session_key: web.AppKey[aiohttp.ClientSession], config_key: web.AppKey[dict]
) -> Callable[[web.Application], AsyncIterator[None]]:
    """A cleanup context that gives a proxying test server one client session to its upstream for
    its lifetime. Keep-alive keeps the extra hop cheap; llama-server closes reused connections, so
    the app's config `upstream_keep_alive=False` proxies it with a fresh connection per request."""

    async def ctx(app: web.Application) -> AsyncIterator[None]:
        fresh = not app[config_key].get("upstream_keep_alive", True)
        app[session_key] = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, force_close=fresh), timeout=aiohttp.ClientTimeout(total=None)
        )
        yield
        await app[session_key].close()

    return ctx


class BackgroundServer:
    def __init__(self, app: web.Application, host: str = "127.0.0.1", port: int = 0):
        self.app, self.host, self.port = app, host, port
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._error: BaseException | None = None

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._runner = web.AppRunner(self.app, access_log=None)
            self._loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, self.host, self.port)
            self._loop.run_until_complete(site.start())
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        except BaseException as e:  # surfaced by start()
            self._error = e
            self._started.set()
            return
        self._started.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._runner.cleanup())
        self._loop.close()

    def start(self) -> BackgroundServer:
        self._thread.start()
        self._started.wait(30)
        if self._error:
            raise self._error
        return self

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stop(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(30)

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class ServerProcess:
    """`python -m MODULE --port PORT ...` in a process of its own (no GIL shared with the client
    under test), on a free loopback port; stopped and waited for on exit."""

    def __init__(self, module: str, *args: str):
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.cmd = [__import__("sys").executable, "-m", module, "--port", str(self.port), *args]
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServerProcess:
        import signal
        import socket
        import subprocess
        import time

        from llmbench.lifetime import libc, set_parent_death_signal

        libc()  # loaded before the fork: the preexec_fn only calls it
        # Dies with the test process, however that ends (a killed pytest left these listening).
        self.proc = subprocess.Popen(
            self.cmd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=lambda: set_parent_death_signal(signal.SIGTERM),
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise RuntimeError(f"{self.cmd} exited: {err[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError:
                time.sleep(0.1)
        self.__exit__()
        raise RuntimeError(f"{self.cmd} did not listen within 60 s")

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is not None:  # died under the test: say so, with its stderr
            err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
            raise RuntimeError(f"{self.cmd} died during the test (exit {self.proc.returncode}): {err[-2000:]}")
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except Exception:
            self.proc.kill()
            self.proc.wait(10)


def schedule_parser(description: str, port: int) -> argparse.ArgumentParser:
    """The command line every schedule server takes (calibration, paced): where to listen and
    the token schedule (--ttft-ms, --itl-ms, --tokens)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--port", type=int, default=port)
    p.add_argument("--ttft-ms", type=float, default=100.0)
    p.add_argument("--itl-ms", type=float, default=10.0)
    p.add_argument("--tokens", type=int, default=256)
    return p


@contextmanager
def alert_webhook() -> Iterator[tuple[str, list[dict]]]:
    """A local webhook receiver for the Notifier (plugins/llmbench_airflow): yields the value of
    AIRFLOW_CONN_LLMBENCH_ALERTS that points at it, and the alerts it received, in order."""
    import json

    alerts: list[dict] = []

    async def hook(request: web.Request) -> web.Response:
        alerts.append(await request.json())
        return web.json_response({})

    app = web.Application()
    app.router.add_post("/alerts", hook)
    with BackgroundServer(app) as webhook:
        yield json.dumps({"conn_type": "http", "host": webhook.url + "/alerts"}), alerts
