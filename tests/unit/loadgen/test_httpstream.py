"""The hot-path HTTP client: decoding what was read, and a real socket server for keep-alive,
retry of a send on a connection the server had closed, and framing."""

import asyncio

import pytest

from llmbench.loadgen.httpstream import StreamClient, Target, dechunk, decode_response

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def _chunked(*parts: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def test_dechunk_keeps_each_reads_time_across_split_sizes_and_crlfs():
    raw = _chunked(b"data: a\n\n", b"data: bb\n\n")
    # split everywhere: inside a size line, inside data, between data and its CRLF
    reads = [(i, raw[i:i + 3]) for i in range(0, len(raw), 3)]
    body, complete, error = dechunk(reads)
    assert complete and error is None
    assert b"".join(d for _, d in body) == b"data: a\n\ndata: bb\n\n"
    # a piece is stamped with the read it came in: times never run ahead of the bytes
    assert [t for t, _ in body] == sorted(t for t, _ in body)
    assert body[-1][0] <= len(raw)


def test_dechunk_without_terminator_is_incomplete_and_bad_size_is_an_error():
    assert dechunk([(1, b"5\r\nhello\r\n")])[1:] == (False, None)
    assert dechunk([(1, b"zz\r\nhello\r\n")])[2] == "bad chunk size b'zz'"
    assert dechunk([(1, b"5\r\nhelloXX")])[2] == "chunk data not followed by CRLF"


def test_decode_response_head_split_over_reads_and_content_length():
    raw = b"HTTP/1.1 429 Too Many Requests\r\nContent-Length: 9\r\nRetry-After: 1\r\n\r\nslow down"
    resp = decode_response([(1, raw[:10]), (2, raw[10:40]), (3, raw[40:])])
    assert resp.status == 429 and resp.headers["retry-after"] == "1" and resp.complete
    assert b"".join(d for _, d in resp.body) == b"slow down"
    assert decode_response([(1, raw[:-3])]).complete is False
    assert decode_response([(1, b"garbage\r\n\r\n")]).error.startswith("bad status line")
    assert decode_response([(1, b"HTTP/1.1 200 OK\r\n")]).error == "no complete response head"


def test_target_host_header_and_path():
    t = Target.parse("https://runtime.sagemaker.us-east-1.amazonaws.com/endpoints/e-1/invocations-response-stream")
    assert (t.host, t.port, t.host_header, t.ssl is not None) == ("runtime.sagemaker.us-east-1.amazonaws.com", 443,
                                                                  "runtime.sagemaker.us-east-1.amazonaws.com", True)
    t = Target.parse("http://127.0.0.1:8080/v1/chat/completions?x=1")
    assert (t.host_header, t.path, t.ssl) == ("127.0.0.1:8080", "/v1/chat/completions?x=1", None)
    with pytest.raises(ValueError):
        Target.parse("ftp://x/y")


async def _server(behaviour):
    """A raw HTTP/1.1 server on a real socket: behaviour(n, writer) answers the n-th request of
    its connection."""
    seen = {"connections": 0, "requests": 0, "heads": []}

    async def handle(reader, writer):
        seen["connections"] += 1
        n = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int([ln for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length")][0]
                             .split(b":")[1])
                await reader.readexactly(length)
                seen["requests"] += 1
                seen["heads"].append(head)
                n += 1
                if not await behaviour(n, writer) or b"connection: close" in head.lower():
                    break  # as HTTP/1.1 says, a request that asks for Connection: close gets it
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/chat/completions", seen


def test_keep_alive_reuses_the_connection_and_ends_each_response_by_its_framing():
    async def answer(n, writer):
        writer.write(HEAD + _chunked(b"data: %d\n\n" % n))
        await writer.drain()
        return True  # keep the connection open

    async def main():
        server, url, seen = await _server(answer)
        client = StreamClient(url, keep_alive=True)
        outs = [await asyncio.wait_for(client.post(b"{}", {"Content-Type": "application/json"}), 5) for _ in range(3)]
        client.close()
        server.close()
        return outs, seen

    outs, seen = asyncio.run(main())
    assert seen["connections"] == 1 and seen["requests"] == 3
    assert all(b"Connection: keep-alive" in h and b"Host: 127.0.0.1:" in h for h in seen["heads"])
    for n, (send_ns, end_ns, reads, outcome) in enumerate(outs, 1):
        assert outcome is None and end_ns >= send_ns
        resp = decode_response(reads)
        assert resp.complete and b"".join(d for _, d in resp.body) == b"data: %d\n\n" % n


def test_a_send_on_a_connection_the_server_closed_is_sent_again_once_and_counted():
    async def answer(n, writer):
        writer.write(HEAD + _chunked(b"data: %d\n\n" % n))
        await writer.drain()
        return False  # close after every response, as llama-server does with reused connections

    async def main():
        server, url, seen = await _server(answer)
        client = StreamClient(url, keep_alive=True)
        first = await asyncio.wait_for(client.post(b"{}", {}), 5)
        await asyncio.sleep(0.1)  # the server's close has not been noticed by nobody reading
        second = await asyncio.wait_for(client.post(b"{}", {}), 5)
        later = [await asyncio.wait_for(client.post(b"{}", {}), 5) for _ in range(3)]
        client.close()
        server.close()
        return first, second, later, client, seen

    first, second, later, client, seen = asyncio.run(main())
    assert all(decode_response(out[2]).complete for out in (first, second, *later))
    assert seen["connections"] == 5 and seen["requests"] == 5
    assert client.resent in (0, 1)  # 0 when the close was seen before the second send, 1 when it raced it
    # Refused once, the client stops asking: no resend per request against such a server.
    assert not client.keep_alive and client.reuse_refused == 1
    assert [b"Connection: close" in h for h in seen["heads"]] == [False, False, True, True, True]


def test_connection_close_mode_ends_at_close_and_reports_a_mid_stream_drop():
    async def answer(n, writer):
        writer.write(HEAD + b"a\r\ndata: x\n\n\r\n")  # one chunk, then the connection drops
        await writer.drain()
        return False

    async def main():
        server, url, seen = await _server(answer)
        client = StreamClient(url, keep_alive=False)
        out = await asyncio.wait_for(client.post(b"{}", {}), 5)
        server.close()
        return out, seen

    (send_ns, end_ns, reads, outcome), seen = asyncio.run(main())
    assert b"Connection: close" in seen["heads"][0]
    resp = decode_response(reads)
    assert resp.status == 200 and not resp.complete and outcome is not None


def _hangs_up_on_every_second_request_of_a_connection():
    async def answer(n, writer):
        if n % 2 == 0:  # read the request, then close without a byte: the kept-alive connection died
            return False
        writer.write(HEAD + _chunked(b'data: {"choices":[{"delta":{"content":"x"},"finish_reason":null}]}\n\n',
                                     b'data: {"choices":[{"delta":{},"finish_reason":"length"}]}\n\n'))
        await writer.drain()
        return True
    return answer


def test_a_request_whose_kept_alive_connection_died_unanswered_is_sent_again_and_counted():
    async def main():
        server, url, seen = await _server(_hangs_up_on_every_second_request_of_a_connection())
        client = StreamClient(url, keep_alive=True)
        first = await asyncio.wait_for(client.post(b"{}", {}), 5)
        retried_first = client.resent_last
        second = await asyncio.wait_for(client.post(b"{}", {}), 5)
        client.close()
        server.close()
        return first, retried_first, second, client.resent_last, client.resent, seen

    first, retried_first, second, retried_second, resent, seen = asyncio.run(main())
    assert decode_response(first[2]).complete and decode_response(second[2]).complete
    assert (retried_first, retried_second, resent) == (False, True, 1)
    assert seen["connections"] == 2 and seen["requests"] == 3  # the unanswered one, then its resend


def test_the_sweep_records_and_counts_the_resent_requests(tmp_path):
    # a thread of its own serving the same raw server to the sweep's event loops
    import threading

    import pandas as pd

    from llmbench.backends.base import Endpoint
    from llmbench.loadgen.sweep import run_sweep
    from llmbench.schemas.workload import Workload

    ready, box = threading.Event(), {}

    def serve():
        async def run():
            server, url, seen = await _server(_hangs_up_on_every_second_request_of_a_connection())
            box.update(url=url, loop=asyncio.get_running_loop(), stop=asyncio.Event())
            ready.set()
            await box["stop"].wait()
            server.close()
        asyncio.run(run())

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    ready.wait(5)
    try:
        workload = Workload.model_validate({"input_tokens": 8, "output_tokens": 1, "concurrency": [1],
                                            "requests_per_level": 3, "request_timeout_s": 5})
        result = run_sweep(Endpoint(box["url"], keep_alive=True), workload, tmp_path)
    finally:
        box["loop"].call_soon_threadsafe(box["stop"].set)
        t.join(5)
    (level,) = result.levels
    rq = pd.read_parquet(result.requests_path).sort_values("request_index")
    assert level["requests_ok"] == 3
    # request 0 opens a connection; request 1 reuses it, is hung up on, and goes again on a new
    # one; request 2 asks for a fresh connection (the server refused a reuse once): no resend
    assert rq["send_retried"].tolist() == [False, True, False] and level["sends_retried"] == 1
