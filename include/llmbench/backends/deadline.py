"""One HTTP request under a wall-clock deadline. urllib's and http.client's `timeout` bounds each
socket wait, not the request: a server that trickles a byte a second never trips it, so a
readiness look, a /metrics or /version read, or a quality item would never end. Here the deadline,
timeout_s from the call, covers connect, head and body: each socket wait gets only what is left
of it, and a timer shuts the socket down when it passes (a read blocked in another thread wakes)."""

from __future__ import annotations

import http.client
import socket
import threading
import time
import urllib.error
from email.message import Message
from urllib.parse import urljoin, urlsplit


class Bounded(Exception):
    """A request its bounds ended: `kind` is timeout, response_too_large or error (not an http(s)
    URL); `kept` holds the first bytes of the body read before it ended."""

    def __init__(self, kind: str, detail: str, kept: bytes = b""):
        super().__init__(f"{kind}: {detail}")
        self.kind, self.kept = kind, kept


def request_bounded(
    method: str,
    url: str,
    data: bytes | None,
    headers: dict[str, str],
    timeout_s: float,
    max_bytes: int,
    response_headers: dict[str, str] | None = None,
) -> tuple[int, bytes]:
    """(status, body) with at most max_bytes of body, or Bounded; OSError or HTTPException for a
    connection that fails before the deadline. Past max_bytes the read stops (max_bytes + 1 read
    at most) and the connection is dropped."""
    u = urlsplit(url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise Bounded("error", f"not an http(s) URL: {url!r}")
    deadline = time.monotonic() + timeout_s
    conn_cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
    conn = conn_cls(u.hostname, u.port, timeout=timeout_s)
    expired = threading.Event()
    # The socket itself, kept apart: http.client drops conn.sock once a response says it closes the
    # connection (the response still reads from it), and the deadline must reach it all the same.
    held: list[socket.socket] = []

    def expire() -> None:
        expired.set()
        for sock in held:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes a read blocked in another thread
            except OSError:
                pass

    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or expired.is_set():
            raise Bounded("timeout", f"no complete response within {timeout_s:g} s")
        return remaining

    timer = threading.Timer(timeout_s, expire)
    timer.daemon = True
    timer.start()
    body = bytearray()
    try:
        try:
            conn.connect()
            held.append(conn.sock)
            if expired.is_set():  # the timer fired during connect, before the socket was held
                left()
            path = (u.path or "/") + (f"?{u.query}" if u.query else "")
            held[0].settimeout(left())
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            if response_headers is not None:
                response_headers.update({k.lower(): v for k, v in resp.getheaders()})
            while len(body) <= max_bytes:
                held[0].settimeout(left())
                chunk = resp.read1(min(1 << 16, max_bytes + 1 - len(body)))
                if not chunk:
                    break
                body += chunk
            if expired.is_set():  # a read the timer ended looks like the end of the body: it is not
                raise Bounded("timeout", f"no complete response within {timeout_s:g} s", bytes(body[:2000]))
        except (OSError, http.client.HTTPException):
            if expired.is_set() or time.monotonic() >= deadline:
                raise Bounded("timeout", f"no complete response within {timeout_s:g} s", bytes(body[:2000])) from None
            raise
        if len(body) > max_bytes:
            raise Bounded("response_too_large", f"more than {max_bytes} bytes", bytes(body[:2000]))
        return resp.status, bytes(body)
    finally:
        timer.cancel()
        conn.close()


# Headers that carry credentials: never sent on to another origin by a redirect.
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key", "api-key"})
REDIRECTS = (301, 302, 303, 307, 308)
MAX_REDIRECTS = 5


def origin(url: str) -> tuple[str, str, int | None]:
    u = urlsplit(url)
    return u.scheme.lower(), (u.hostname or "").lower(), u.port or {"http": 80, "https": 443}.get(u.scheme.lower())


def get_bounded(url: str, headers: dict[str, str] | None, timeout_s: float, max_bytes: int) -> bytes:
    """GET url under the deadline (redirects included), as urlopen's callers expect it: the body of
    a 2xx answer; urllib.error.HTTPError for another status; OSError for everything else (a deadline
    passed is TimeoutError), so `except OSError` still catches every failure. Redirects are followed
    (at most MAX_REDIRECTS), but a redirect to another origin (scheme, host, port) goes without the
    credential headers: urllib's own handler copies the API key to wherever a server points it."""
    deadline = time.monotonic() + timeout_s
    sent = dict(headers or {})
    for _ in range(MAX_REDIRECTS + 1):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"timeout: no complete response within {timeout_s:g} s")
        got: dict[str, str] = {}
        try:
            status, body = request_bounded("GET", url, None, sent, left, max_bytes, got)
        except Bounded as e:  # a timeout names the whole request's deadline, redirects included
            if e.kind == "timeout":
                raise TimeoutError(f"timeout: no complete response within {timeout_s:g} s") from None
            raise OSError(str(e)) from None
        except http.client.HTTPException as e:  # a malformed status line or headers: not an OSError itself
            raise OSError(f"{type(e).__name__}: {e}") from None
        if status in REDIRECTS and got.get("location"):
            target = urljoin(url, got["location"])
            if origin(target) != origin(url):
                sent = {k: v for k, v in sent.items() if k.lower() not in CREDENTIAL_HEADERS}
            url = target
            continue
        if not 200 <= status < 300:
            raise urllib.error.HTTPError(url, status, body[:200].decode("utf-8", "replace"), Message(), None)
        return body
    raise OSError(f"more than {MAX_REDIRECTS} redirects from {url}")
