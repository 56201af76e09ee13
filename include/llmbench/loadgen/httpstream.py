"""A minimal HTTP/1.1 streaming client for the load generator's hot path.

Why not aiohttp's reader: every read through its StreamReader wakes a task (a future, a loop
callback, a coroutine step), about 30 us of CPU per token; at 256 streams x 100 tokens/s that is
most of one core, and every timestamp behind it arrives late (make bench measured TTFT p50 +132 ms
and output tok/s -5 % at 256 streams). Here a read is stamped and appended to a list, and nothing
else runs until the response has ended: no task wakes per token. The status line, headers,
chunked transfer-encoding and the body's lines are decoded after the stream ended.

Where reads are stamped: on plain TCP, with the kernel's receive time of the data (recvmsg with
SO_TIMESTAMPNS), so a busy event loop delays when a token is read but not the time it is given;
over TLS, when the event loop hands the read over.

The clock of a request starts when its first byte is written to an open connection: connecting
(TCP, TLS) is not the server's time and is not in TTFT.
"""

from __future__ import annotations

import asyncio
import errno
import os
import re
import socket
import ssl
import struct
import sys
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

_perf_ns = time.perf_counter_ns


class ConnectionGone(Exception):
    """The connection ended before any byte of the response arrived."""


class ResponseTooLarge(Exception):
    """The response brought more than the request's byte budget; the connection was aborted and
    only the first max_bytes were kept."""


class DeadlinePassed(Exception):
    """The request's deadline passed while bytes were still arriving; the connection was aborted."""


HEAD_MAX_BYTES = 64 * 1024  # a response head longer than this is not HTTP we can use


@dataclass
class Response:
    status: int | None
    headers: dict[str, str]
    body: list[tuple[int, bytes]]  # decoded body pieces, each stamped with its read's arrival
    complete: bool  # the framing (Content-Length, chunked terminator) says the whole body arrived
    error: str | None = None  # a framing error, or why the connection ended early


@dataclass
class Target:
    """A parsed URL: where to connect and what to put in the request line."""

    host: str
    port: int
    path: str
    ssl: ssl.SSLContext | None
    host_header: str

    @classmethod
    def parse(cls, url: str) -> Target:
        u = urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        secure = u.scheme == "https"
        port = u.port or (443 if secure else 80)
        default_port = (secure and port == 443) or (not secure and port == 80)
        return cls(
            u.hostname,
            port,
            (u.path or "/") + (f"?{u.query}" if u.query else ""),
            ssl.create_default_context() if secure else None,
            u.hostname if default_port else f"{u.hostname}:{port}",
        )


def _parse_head(raw: bytes) -> tuple[int, dict[str, str]]:
    lines = raw.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    # three ASCII digits (RFC 9110): "99999999999" or "２００" is no status (nor fits a record)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not _STATUS.fullmatch(parts[1]):
        raise ValueError(f"bad status line {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


_STATUS = re.compile(r"[1-9][0-9]{2}")
# int() takes "-5", "+5", " 5", "1_0" and "0x10" (base 16); HTTP's lengths and chunk sizes are bare digits.
_DECIMAL = re.compile(rb"[0-9]{1,18}")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,15}")


def _chunk_size(text: bytes) -> int | None:
    """A chunk-size line's size (its extensions cut off), or None when it is not hex digits."""
    text = text.split(b";", 1)[0].strip()
    return int(text, 16) if _HEX.fullmatch(text) else None


def _framing(headers: dict[str, str]) -> tuple[str, int]:
    """How the body ends: chunked, after Content-Length bytes, or at close. ValueError for a
    Content-Length that is not a number."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return "chunked", 0
    if "content-length" in headers:
        length = headers["content-length"].encode("latin-1")
        if not _DECIMAL.fullmatch(length):
            raise ValueError(f"bad Content-Length {length[:20]!r}")
        return "length", int(length)
    return "close", 0


def dechunk(pieces: list[tuple[int, bytes]]) -> tuple[list[tuple[int, bytes]], bool, str | None]:
    """Chunked transfer-encoding -> (decoded pieces, each keeping its read's timestamp; whether the
    terminating chunk arrived; a framing error or None)."""
    out: list[tuple[int, bytes]] = []
    buf = b""
    need = -1  # -1: reading a size line; -2: the CRLF after a chunk's data; n > 0: n data bytes to go
    for t_ns, data in pieces:
        buf += data
        got: list[bytes] = []
        while True:
            if need == -1:
                eol = buf.find(b"\r\n")
                if eol < 0:
                    break
                size = _chunk_size(buf[:eol])
                if size is None:
                    return out, False, f"bad chunk size {buf[:eol][:20]!r}"
                if size == 0:
                    if got:
                        out.append((t_ns, b"".join(got)))
                    return out, True, None  # trailers, if any, carry nothing we measure
                buf, need = buf[eol + 2 :], size
            elif need == -2:
                if len(buf) < 2:
                    break
                if buf[:2] != b"\r\n":
                    return out, False, "chunk data not followed by CRLF"
                buf, need = buf[2:], -1
            else:
                if not buf:
                    break
                take = buf[:need]
                got.append(take)
                buf, need = buf[len(take) :], need - len(take)
                if need == 0:
                    need = -2
        if got:
            out.append((t_ns, b"".join(got)))
    return out, False, None


def decode_response(reads: list[tuple[int, bytes]]) -> Response:
    """What the connection received for one request (timestamped reads) -> a Response."""
    raw = b""
    for i, (t_ns, data) in enumerate(reads):
        raw += data
        end = raw.find(b"\r\n\r\n")
        if end < 0:
            continue
        try:
            status, headers = _parse_head(raw[:end])
            kind, length = _framing(headers)
        except ValueError as e:
            return Response(None, {}, [], False, str(e))
        rest = raw[end + 4 :]
        body_reads = ([(t_ns, rest)] if rest else []) + reads[i + 1 :]
        if kind == "chunked":
            body, complete, error = dechunk(body_reads)
            return Response(status, headers, body, complete, error)
        if kind == "length":
            body, have = [], 0
            for t, d in body_reads:
                d = d[: max(0, length - have)]
                if d:
                    body.append((t, d))
                    have += len(d)
            return Response(status, headers, body, have == length)
        return Response(status, headers, body_reads, True)  # until close: complete when it closed
    return Response(None, {}, [], False, "no complete response head")


class _Reads:
    """One connection's reads for the request in flight, stamped; `done` resolves when the
    response ended (by its framing, on a keep-alive connection) or the connection closed."""

    def __init__(self) -> None:
        self.reads: list[tuple[int, bytes]] = []
        self.done: asyncio.Future | None = None
        self.closed = False
        self.watch_end = False  # keep-alive: find the response's end from its framing
        self._framing: tuple[str, int] | None = None
        self._body_bytes = 0
        self._chunks = ChunkScan()  # a chunked body's framing, followed read by read
        self.max_bytes: int | None = None  # the request's byte budget (None: unbounded)
        self.deadline_ns: int | None = None  # the request's hard deadline, perf_counter_ns
        self._total = 0

    def begin(self, watch_end: bool, max_bytes: int | None = None, deadline_ns: int | None = None) -> asyncio.Future:
        """Start a request: returns the future that resolves when its response ended (or brought
        more than max_bytes, or was still arriving at deadline_ns: the connection is then aborted)."""
        self.reads = []
        self.done = done = asyncio.get_running_loop().create_future()
        self.watch_end = watch_end
        self._framing, self._body_bytes = None, 0
        self.max_bytes, self.deadline_ns, self._total = max_bytes, deadline_ns, 0
        return done

    def got(self, t_ns: int, data: bytes) -> None:
        self._total += len(data)
        if self.max_bytes is not None and self._total > self.max_bytes:
            keep = len(data) - (self._total - self.max_bytes)
            if keep > 0:
                self.reads.append((t_ns, data[:keep]))
            return self._cut(ResponseTooLarge(f"the response exceeded {self.max_bytes} bytes"))
        self.reads.append((t_ns, data))
        if self.deadline_ns is not None and _perf_ns() > self.deadline_ns:
            # The event loop's timer may run late when reads never stop; the deadline holds here.
            return self._cut(DeadlinePassed("the deadline passed while bytes kept arriving"))
        if self.watch_end and self._ended(data):
            self._finish(None, t_ns)  # ended when its last byte arrived, however late the loop got to it

    def _cut(self, why: Exception) -> None:
        self._finish(why)
        self.close(abort=True)

    def close(self, abort: bool = False) -> None:
        raise NotImplementedError

    def lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._finish(exc or ConnectionGone("connection closed"))

    def _finish(self, outcome: Exception | None, end_ns: int | None = None) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_result((end_ns or _perf_ns(), outcome))

    def _ended(self, data: bytes) -> bool:
        # Cheap: a length count, or the chunked framing followed read by read (ChunkScan), never
        # a decode of the whole response on the event loop.
        if self._framing is None:
            raw = b"".join(d for _, d in self.reads)
            end = raw.find(b"\r\n\r\n")
            if end < 0:
                return len(raw) > HEAD_MAX_BYTES  # no head in sight: end here, decode_response says why
            try:
                self._framing = _framing(_parse_head(raw[:end])[1])
            except ValueError:
                return True  # undecodable: end here, decode_response says why
            self._body_bytes = len(raw) - end - 4
            self._chunks = ChunkScan()
            data = raw[end + 4 :]
        else:
            self._body_bytes += len(data)
        kind, length = self._framing
        if kind == "length":
            return self._body_bytes >= length
        return kind == "chunked" and self._chunks.feed(data)


class ChunkScan:
    """Where a chunked body's terminating chunk is, found read by read: each read is scanned once
    (chunk data is skipped by its size, only size lines and trailers are looked at), so finding a
    response's end costs the same whether it has one chunk or ten thousand. feed(data) is True
    once the last chunk and the trailer section's end have arrived, or the framing is broken
    (decode_response then says why)."""

    __slots__ = ("skip", "line", "trailers")

    def __init__(self) -> None:
        self.skip = 0  # chunk data (and its CRLF) still to come
        self.line = b""  # a size line (or the trailers) begun in an earlier read
        self.trailers = False  # the zero-size chunk arrived: waiting for the empty line

    def feed(self, data: bytes) -> bool:
        pos, n = 0, len(data)
        while pos < n:
            if self.skip:
                take = min(self.skip, n - pos)
                pos += take
                self.skip -= take
                continue
            buf = self.line + data[pos:] if self.line else data[pos:]
            if self.trailers:  # after "0\r\n": optional trailer lines, then an empty line
                if buf.startswith(b"\r\n") or b"\r\n\r\n" in buf:
                    return True
                self.line = buf[-(HEAD_MAX_BYTES):]
                return len(buf) > HEAD_MAX_BYTES
            eol = buf.find(b"\r\n")
            if eol < 0:
                self.line = buf
                return len(buf) > 1024  # no chunk size line is this long
            consumed = eol + 2 - len(self.line)  # of this read
            size = _chunk_size(buf[:eol])
            self.line = b""
            pos += consumed
            if size is None:
                return True
            if size == 0:
                self.trailers = True
                if pos < n:
                    continue
                return False
            self.skip = size + 2
        return False


class _Stream(_Reads, asyncio.Protocol):
    """TLS (or any transport): each read stamped when the event loop hands it over."""

    def __init__(self) -> None:
        super().__init__()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.got(_perf_ns(), data)

    def eof_received(self) -> bool:
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost(exc)

    def send(self, data: bytes) -> None:
        if self.transport is None:
            raise ConnectionGone("not connected")
        self.transport.write(data)

    def close(self, abort: bool = False) -> None:
        if self.transport is None:
            return
        if abort:
            self.transport.abort()
        else:
            self.transport.close()


SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux (Python 3.11's socket module does not name it)
# Plain TCP reads carry the kernel's receive stamps on Linux. (Until issue 17 this asked the socket
# module for SO_TIMESTAMPNS, which Python 3.11 does not name: every read was stamped by the loop.)
KERNEL_STAMPS = sys.platform.startswith("linux")
_TS = struct.Struct("qq")


def received_ns(ancillary) -> int:
    """When a recvmsg's data arrived, on perf_counter_ns's clock: the kernel's receive stamp
    (SO_TIMESTAMPNS, CLOCK_REALTIME, shifted by the offset of this moment), else now."""
    for level, kind, raw in ancillary or ():
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(raw) >= 16:
            sec, nsec = _TS.unpack_from(raw)
            return sec * 1_000_000_000 + nsec - (time.time_ns() - _perf_ns())
    return _perf_ns()


class _KernelStamped(_Reads):
    """Plain TCP, read with recvmsg: each read stamped with the kernel's receive time
    (SO_TIMESTAMPNS), so a token's time is when it reached this machine, however busy the event
    loop was when it got to the socket. A read of several segments carries the last one's stamp."""

    READ_BYTES = 65536

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self._buf = bytearray(self.READ_BYTES)
        self._view = memoryview(self._buf)
        self._into = [self._view]
        self.sock = sock
        self.loop = asyncio.get_running_loop()
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.loop.add_reader(sock.fileno(), self._readable)

    def _readable(self) -> None:
        # Into one buffer per connection: recvmsg(262144) would allocate (and the allocator map
        # and unmap) 256 KiB for every read of a few hundred bytes, a token's worth.
        try:
            n, anc, _, _ = self.sock.recvmsg_into(self._into, 64)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            return self._gone(e)
        if not n:
            return self._gone(None)
        self.got(received_ns(anc), bytes(self._view[:n]))  # more waiting: the loop calls again

    def _gone(self, exc: Exception | None) -> None:
        self.close()
        self.lost(exc)

    def send(self, data: bytes) -> None:
        try:
            sent = self.sock.send(data)  # a request fits the socket's buffer; if not, the rest follows
        except (BlockingIOError, InterruptedError):
            sent = 0
        if sent < len(data):
            self.loop.create_task(self.loop.sock_sendall(self.sock, data[sent:]))

    def close(self, abort: bool = False) -> None:
        if self.sock.fileno() >= 0:
            self.loop.remove_reader(self.sock.fileno())
            if abort:
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.sock.close()
        self.closed = True


async def _connect_socket(loop: asyncio.AbstractEventLoop, sock: socket.socket, addr) -> None:
    """A non-blocking connect to a resolved address, waiting for writability only if it did not
    complete at once (loop.sock_connect resolves the address again, every time)."""
    err = sock.connect_ex(addr)
    if err == 0:
        return
    if err not in (errno.EINPROGRESS, errno.EAGAIN, errno.EWOULDBLOCK):
        raise OSError(err, os.strerror(err))
    done = loop.create_future()
    fd = sock.fileno()

    def writable() -> None:
        if not done.done():
            done.set_result(None)

    loop.add_writer(fd, writable)
    try:
        await done
    finally:
        loop.remove_writer(fd)
    err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if err:
        raise OSError(err, f"connect to {addr}: {os.strerror(err)}")


@dataclass
class StreamClient:
    """One worker's connection to one endpoint, reused across its requests when keep_alive (and
    the server leaves it open), else a fresh connection per request (`Connection: close`)."""

    url: str
    keep_alive: bool = False
    target: Target = field(init=False)
    _conn: _Stream | _KernelStamped | None = field(default=None, init=False)
    resent: int = field(default=0, init=False)  # sends retried because a reused connection had closed
    resent_last: bool = field(default=False, init=False)  # the last request was one of them
    sent_ns: int | None = field(default=None, init=False)
    connect_ns: int = field(default=0, init=False)  # the last request's connecting time (0: reused)
    reads: list = field(default_factory=list, init=False)
    _addrinfo: tuple | None = field(default=None, init=False)  # where target resolved to
    # A reuse that found the connection closed by the server (seen while idle, or as a resend)
    # turns keep_alive off for this client's later requests: a server that closes every connection
    # after its response (llama-server does, though it answers "Keep-Alive: timeout=5, max=100")
    # would otherwise cost a resend per request, and one that closes idle connections gains nothing
    # from our keeping them.
    reuse_refused: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self.target = Target.parse(self.url)

    async def _connect(self) -> _Stream | _KernelStamped:
        loop = asyncio.get_running_loop()
        t = self.target
        if t.ssl is not None or not KERNEL_STAMPS:
            _, stream = await loop.create_connection(
                _Stream, t.host, t.port, ssl=t.ssl, server_hostname=t.host if t.ssl else None
            )
            return stream
        if self._addrinfo is None:  # resolved once: a fresh connection per request pays no lookup
            self._addrinfo = (await loop.getaddrinfo(t.host, t.port, type=socket.SOCK_STREAM))[0]
        family, kind, proto_no, _, addr = self._addrinfo
        sock = socket.socket(family, kind, proto_no)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            await _connect_socket(loop, sock, addr)
        except BaseException:
            sock.close()
            raise
        return _KernelStamped(sock)

    def _request_bytes(self, body: bytes, headers: dict[str, str], keep_alive: bool) -> bytes:
        lower = {k.lower() for k in headers}
        head = [f"POST {self.target.path} HTTP/1.1"]
        if "host" not in lower:
            head.append(f"Host: {self.target.host_header}")
        head.extend(f"{k}: {v}" for k, v in headers.items() if k.lower() not in ("content-length", "connection"))
        head.append(f"Content-Length: {len(body)}")
        head.append("Connection: " + ("keep-alive" if keep_alive else "close"))
        return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body

    async def post(
        self,
        body: bytes,
        headers: dict[str, str],
        max_bytes: int | None = None,
        deadline_ns: int | None = None,
    ) -> tuple[int, int, list[tuple[int, bytes]], Exception | None]:
        """Send one request and wait for its response to end. Returns (send_ns, end_ns, reads,
        how the connection ended early or None: ResponseTooLarge past max_bytes, DeadlinePassed
        when bytes were still arriving at deadline_ns). Raises OSError when no connection can be
        made. Cancelled (a timeout), it aborts the connection; `sent_ns` and `reads` then say what
        the request got so far."""
        keep_alive = self.keep_alive  # this request's, whatever a refusal below decides for the next
        request = self._request_bytes(body, headers, keep_alive)
        self.sent_ns, self.reads, self.connect_ns, self.resent_last = None, [], 0, False
        for attempt in (0, 1):
            conn = self._conn
            if attempt == 0 and conn is not None and conn.closed:
                self._refused()  # the server closed it while it was idle
            reused = conn is not None and not conn.closed
            if conn is None or conn.closed:
                t0 = _perf_ns()
                conn = self._conn = await self._connect()
                self.connect_ns += _perf_ns() - t0
            done = conn.begin(watch_end=keep_alive, max_bytes=max_bytes, deadline_ns=deadline_ns)
            self.sent_ns, self.reads = _perf_ns(), conn.reads
            try:
                conn.send(request)
            except OSError as e:
                conn.close()
                conn.lost(e)
            try:
                end_ns, outcome = await done
            except asyncio.CancelledError:
                self.abort()
                raise
            if reused and attempt == 0 and not conn.reads and isinstance(outcome, (ConnectionGone, OSError)):
                # The server had closed the idle connection as we reused it: nothing was received,
                # so nothing was measured; send again on a fresh one (counted).
                self._conn = None
                self.resent += 1
                self.resent_last = True
                self._refused()
                continue
            if not (self.keep_alive and not conn.closed):
                self.close()
            return self.sent_ns, end_ns, conn.reads, outcome
        raise AssertionError("unreachable")

    def _refused(self) -> None:
        if self.keep_alive:
            self.reuse_refused += 1
            self.keep_alive = False

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = None

    def abort(self) -> None:
        if self._conn is not None:
            self._conn.close(abort=True)
        self._conn = None
