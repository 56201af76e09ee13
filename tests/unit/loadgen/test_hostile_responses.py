"""issue 26 #3, #4: a server's malformed or lying responses are each one failed record with its
kind, never the end of the sweep; every record fits the requests table (to_table); usage a request
could not have produced (implausible_usage) fails the record and the target's validation.

The server is a raw socket server (asyncio) that answers the n-th request with the n-th canned
response, byte for byte; the requests go through the real load generator (driver.run_level) and
its record builder process."""

import asyncio
import json

import pandas as pd

from llmbench.backends.base import Endpoint
from llmbench.loadgen.driver import run_level
from llmbench.loadgen.schedules import ClosedLoop
from llmbench.results.validation import validate_results
from llmbench.schemas.records import to_table

MAX_TOKENS = 8


def _events(*events: object) -> bytes:
    return b"".join(b"data: " + (e if isinstance(e, bytes) else json.dumps(e).encode()) + b"\n\n" for e in events)


def _content(n: int = 3) -> list[dict]:
    return [{"choices": [{"index": 0, "delta": {"content": f" w{i}"}, "finish_reason": None}]} for i in range(n)]


FINISH = {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}


def _sse(*events: object, status: bytes = b"200 OK", length: bytes | None = None) -> bytes:
    body = _events(*events) + b"data: [DONE]\n\n"
    head = b"HTTP/1.1 " + status + b"\r\nContent-Type: text/event-stream\r\n"
    head += b"Content-Length: " + (length if length is not None else str(len(body)).encode()) + b"\r\n"
    return head + b"Connection: close\r\n\r\n" + body


def _usage(**counts: object) -> dict:
    return {"choices": [], "usage": counts}


def _chunked(size_line: bytes) -> bytes:
    body = _events(*_content(), FINISH)
    return (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: close\r\n\r\n" + size_line + b"\r\n" + body + b"\r\n0\r\n\r\n")


# (name, the response's bytes, the record's error_kind: None for an ok record)
CASES = [
    ("plausible usage", _sse(*_content(), FINISH, _usage(prompt_tokens=30, completion_tokens=3)), None),
    ("usage as a string", _sse(*_content(), FINISH, b'{"choices": [], "usage": "lots"}'), "malformed_chunk"),
    ("usage as a list", _sse(*_content(), FINISH, b'{"choices": [], "usage": [1, 2]}'), "malformed_chunk"),
    ("NaN completion_tokens", _sse(*_content(), FINISH, b'{"choices": [], "usage": {"completion_tokens": NaN}}'),
     "malformed_chunk"),
    ("completion_tokens as a string", _sse(*_content(), FINISH, _usage(completion_tokens="3")), "malformed_chunk"),
    ("10^12 completion_tokens, max_tokens 8, nine chunks",
     _sse(*_content(9), FINISH, _usage(prompt_tokens=30, completion_tokens=10**12)), "implausible_usage"),
    ("completion_tokens 9 > max_tokens 8", _sse(*_content(9), FINISH, _usage(completion_tokens=9)),
     "implausible_usage"),
    ("negative completion_tokens", _sse(*_content(), FINISH, _usage(prompt_tokens=30, completion_tokens=-5)),
     "implausible_usage"),
    ("fewer tokens than content chunks", _sse(*_content(3), FINISH, _usage(completion_tokens=1)),
     "implausible_usage"),
    ("10^12 prompt_tokens", _sse(*_content(), FINISH, _usage(prompt_tokens=10**12, completion_tokens=3)),
     "implausible_usage"),
    ("negative prompt_tokens", _sse(*_content(), FINISH, _usage(prompt_tokens=-1, completion_tokens=3)),
     "implausible_usage"),
    ("choices as a dict", _sse(*_content(), {"choices": {"0": {"delta": {"content": "x"}}}}), "malformed_chunk"),
    ("choices as an int", _sse(*_content(), {"choices": 7}), "malformed_chunk"),
    ("a choice as a string", _sse(*_content(), {"choices": ["x"]}), "malformed_chunk"),
    ("delta as a string", _sse({"choices": [{"delta": "hello", "finish_reason": None}]}, FINISH), "malformed_chunk"),
    ("finish_reason as an int", _sse(*_content(), {"choices": [{"delta": {}, "finish_reason": 1}]}),
     "malformed_chunk"),
    ("finish_reason as an object", _sse(*_content(), {"choices": [{"delta": {}, "finish_reason": {"a": 1}}]}),
     "malformed_chunk"),
    ("a chunk as a JSON list", _sse(*_content(), b"[1, 2]"), "malformed_chunk"),
    ("chunk-size line 12xyz", _chunked(b"12xyz"), "stream_error"),
    ("chunk-size line -5", _chunked(b"-5"), "stream_error"),
    ("chunk-size line 0x10", _chunked(b"0x10"), "stream_error"),
    ("Content-Length 12abc", _sse(*_content(), FINISH, length=b"12abc"), "stream_error"),
    ("Content-Length -3", _sse(*_content(), FINISH, length=b"-3"), "stream_error"),
    ("HTTP status 99999999999", _sse(*_content(), FINISH, status=b"99999999999 OK"), "stream_error"),
    ("HTTP status 2000", _sse(*_content(), FINISH, status=b"2000 OK"), "stream_error"),
    ("a 401 echoing the key", b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 58\r\nConnection: close\r\n\r\n"
     b"bad key in 'Authorization: Bearer sk-h26aECHOED0123456789'", "http_status"),
]


async def _canned_server(responses: list[bytes]):
    """Answers its n-th request with responses[n], then closes the connection."""
    served = iter(responses)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(int(ln.split(b":")[1]) for ln in head.split(b"\r\n")
                          if ln.lower().startswith(b"content-length"))
            await reader.readexactly(length)
            writer.write(next(served))
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/chat/completions"


async def _sweep(responses: list[bytes]):
    server, url = await _canned_server(responses)
    async with server:
        records, _ = await run_level(
            Endpoint(url=url), ClosedLoop(1), n_requests=len(responses), input_tokens=8, output_tokens=MAX_TOKENS,
            seed=1, first_index=0, timeout_s=10, on_record=lambda r: None)
    return records


def test_every_malformed_response_is_one_failed_record_with_its_kind_and_every_record_fits_the_table():
    records = asyncio.run(_sweep([c[1] for c in CASES]))  # before: "record builder process ended ..."
    got = {name: r.error_kind for (name, _, _), r in zip(CASES, sorted(records, key=lambda r: r.request_index),
                                                           strict=True)}
    assert got == {name: kind for name, _, kind in CASES}
    table = to_table(records)  # before: ArrowInvalid "Value 1000000000000 too large", ArrowTypeError
    assert table.num_rows == len(CASES)
    ok = [r for r in records if r.ok]
    assert len(ok) == 1 and ok[0].output_tokens == 3 and ok[0].input_tokens == 30
    detail = {name: r.error_detail for (name, _, _), r in zip(CASES, sorted(records, key=lambda r: r.request_index),
                                                              strict=True)}
    assert detail["10^12 completion_tokens, max_tokens 8, nine chunks"] == (
        "the server reported completion_tokens 1000000000000 > max_tokens 8")
    assert detail["10^12 prompt_tokens"].startswith("the server reported prompt_tokens 1000000000000 > the request's ")
    assert detail["HTTP status 99999999999"].startswith("bad status line 'HTTP/1.1 99999999999 OK'")
    echoed = next(r for r in records if r.http_status == 401)
    assert echoed.error_detail == "HTTP 401: bad key in 'Authorization: Bearer ***'"  # the table holds no key
    for r in records:
        if not r.ok:
            assert r.error_detail  # says why
            assert r.output_tokens_source == "counted" and r.input_tokens is None  # the server's counts are not kept


def test_a_level_with_implausible_usage_fails_validation(tmp_path):
    records = asyncio.run(_sweep([CASES[0][1]] * 3 + [CASES[5][1]]))
    assert sorted(r.error_kind or "" for r in records) == ["", "", "", "implausible_usage"]
    requests_path, levels_path = tmp_path / "requests.parquet", tmp_path / "levels.parquet"
    import pyarrow.parquet as pq

    pq.write_table(to_table(records), requests_path)
    pd.DataFrame([{
        "arrival_rate_rps": 0.0, "concurrency": 1, "error_rate": 0.25, "output_tokens_per_s": 100.0,
        "client_saturated": False,
        **{f"{m}_{p}": 1.0 for m in ("ttft_ms", "e2e_ms", "itl_ms", "tpot_ms") for p in ("p50", "p90", "p99")},
    }]).to_parquet(levels_path)
    result = validate_results(requests_path, levels_path, [1], 0.5, tmp_path / "validation.json")
    assert not result["validation_passed"]
    assert result["failures"] == [f for f in result["failures"] if "implausible_usage" in f] != []


def test_rebuild_skips_a_record_that_does_not_fit_the_table(tmp_path):
    """A requests.jsonl written before the fix holds the 10^12 count that ended the sweep:
    `llmbench rebuild` skips that line (counted) instead of failing on it again."""
    from llmbench.loadgen.sweep import rebuild

    good = asyncio.run(_sweep([CASES[0][1]] * 2))
    bad = good[1].to_row() | {"output_tokens": 10**12}
    (tmp_path / "requests.jsonl").write_text(json.dumps(good[0].to_row()) + "\n" + json.dumps(bad) + "\n")
    result, skipped = rebuild(tmp_path)  # before: ArrowInvalid
    assert skipped == 1 and result.levels[0]["requests_attempted"] == 1

    from llmbench.schemas.records import schema_problem

    assert schema_problem(type(good[0]).from_row(bad)) == "output_tokens '1000000000000' is not int32"
    assert schema_problem(good[0]) is None
