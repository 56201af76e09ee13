"""SSE parsing and record building: every stream shape gives the right record (no server here;
the streams are the bytes an OpenAI-compatible server sends)."""

import json

from llmbench.loadgen.wire import build_record, chat_answer_text, parse_openai_sse

MS = 1_000_000


def chunk(content=None, finish=None, usage=None):
    d = {"choices": [{"index": 0, "delta": {"content": content} if content else {}, "finish_reason": finish}]}
    if usage:
        d = {"choices": [], "usage": usage}
    return b"data: " + json.dumps(d).encode() + b"\n"


def lines(*items):
    """items: (t_ms, bytes) -> timestamped lines with the blank separators SSE puts between events."""
    out = []
    for t, b in items:
        out += [(t * MS, b), (t * MS, b"\n")]
    return out


def record(ls, kind=None):
    return build_record(concurrency=2, request_index=7, worker=1, send_ns=0, end_ns=200 * MS, send_lag_ns=MS // 2,
                        http_status=200 if kind is None else None, lines=ls, error_kind=kind, error_detail=None)


GOOD = lines(
    (50, b": keep-alive comment\n"),
    (100, chunk("Hel")),
    (120, chunk("lo")),
    (150, chunk("!")),
    (160, chunk(finish="length")),
    (170, chunk(usage={"prompt_tokens": 30, "completion_tokens": 3})),
    (180, b"data: [DONE]\n"),
)


def test_good_stream():
    r = record(GOOD)
    assert r.ok and r.error_kind is None
    assert r.ttft_ms == 100 and r.itl_ms == [20, 30] and r.e2e_ms == 200
    assert r.tpot_ms == (200 - 100) / 2
    assert r.output_tokens == 3 and r.output_tokens_source == "usage" and r.input_tokens == 30
    assert r.finish_reason == "length" and r.send_lag_ms == 0.5
    assert (r.concurrency, r.request_index, r.worker) == (2, 7, 1)
    assert (r.repeat, r.arrival_rate_rps, r.send_retried) == (0, 0.0, False)


def test_counted_tokens_without_usage():
    r = record([x for x in GOOD if b"usage" not in x[1]])
    assert r.ok and r.output_tokens == 3 and r.output_tokens_source == "counted"


def test_no_finish_reason_is_truncated():
    r = record(lines((100, chunk("a")), (110, chunk("b"))))
    assert not r.ok and r.error_kind == "truncated"


def test_no_content_is_empty_response():
    r = record(lines((100, chunk(finish="stop")), (110, b"data: [DONE]\n")))
    assert not r.ok and r.error_kind == "empty_response"


def test_malformed_chunk():
    r = record(lines((100, chunk("a")), (110, b"data: {not json\n")))
    assert not r.ok and r.error_kind == "malformed_chunk" and "not json" in r.error_detail


def test_error_event_in_stream():
    r = record(lines((100, b'data: {"error": {"message": "slot unavailable"}}\n')))
    assert not r.ok and r.error_kind == "stream_error"


def test_transport_error_kind_is_kept():
    r = record([], kind="timeout")
    assert not r.ok and r.error_kind == "timeout" and r.ttft_ms is None and r.e2e_ms == 200


def test_parse_reports_content_times():
    p = parse_openai_sse(GOOD)
    assert p.content_ns == [100 * MS, 120 * MS, 150 * MS] and p.finish_reason == "length"


def test_a_huge_level_prebuilds_a_bounded_number_of_bodies():
    """issue 18 #8: 10^8 requests must not build 10^8 bodies before the first is sent."""
    from llmbench.loadgen import driver as loadgen

    built = []

    def body(i: int) -> bytes:
        built.append(i)
        return b"x" * 1000

    bodies = loadgen.prebuild(body, 10**8)
    assert len(bodies) == len(built) <= loadgen.PREBUILT_BODIES
    big = loadgen.prebuild(lambda i: b"x" * (1 << 20), 10**8)  # 1 MiB bodies: the byte cap
    assert sum(map(len, big)) <= loadgen.PREBUILT_BYTES + (1 << 20)
    assert loadgen.prebuild(body, 3) == [b"x" * 1000] * 3


def test_the_answer_text_is_the_streamed_content_joined():
    assert chat_answer_text(GOOD) == "Hello!"
    # split across reads anywhere, CRLF line ends, a role-only first chunk, unicode
    raw = b"".join(d for _, d in GOOD).replace(b"\n", b"\r\n")
    role = b'data: {"choices": [{"index": 0, "delta": {"role": "assistant"}}]}\r\n\r\n'
    utf8 = b"data: " + json.dumps({"choices": [{"delta": {"content": " caf\u00e9"}}]}).encode() + b"\r\n\r\n"
    whole = role + raw[: raw.index(b"data: [DONE]")] + utf8 + b"data: [DONE]\r\n\r\n"
    assert chat_answer_text([(k, whole[k : k + 7]) for k in range(0, len(whole), 7)]) == "Hello! caf\u00e9"
    # nothing streamed, or not a stream we can read: no answer
    assert chat_answer_text([]) == ""
    assert chat_answer_text([(0, b"data: {not json\n\n")]) == ""
    assert chat_answer_text([(0, b'data: {"error": {"message": "boom"}}\n\n')]) == ""
    assert chat_answer_text(GOOD[:4] + [(0, b'data: {"error": {"message": "cut"}}\n')]) == ""  # an error mid-stream
    # escapes decoded; reasoning, a null content and quotes inside the text are not content keys
    tricky = [
        {"choices": [{"delta": {"role": "assistant", "content": None}}]},
        {"choices": [{"delta": {"reasoning_content": "think"}}]},
        {"choices": [{"delta": {"content": 'say "content": "no"\\'}}]},
        {"choices": [{"delta": {"content": "\n\u00e9\t"}}], "id": 'x"content":"y'},
    ]
    sse = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in tricky)
    assert chat_answer_text([(0, sse)]) == 'say "content": "no"\\\n\u00e9\t'


def test_the_model_answer_comes_from_the_raw_reads_and_a_failed_one_is_empty():
    from llmbench.loadgen.driver import model_answer

    body = b"".join(d for _, d in GOOD)
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (body[:30], body[30:])) + b"0\r\n\r\n"
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    reads = [(1, head + chunked[:50]), (2, chunked[50:])]
    assert model_answer(reads, "done", None) == "Hello!"
    assert model_answer(reads, "timeout", "no complete response within 1s") == ""
    assert model_answer(reads[:1], "done", "ConnectionGone: closed") == ""  # cut mid-response
    assert model_answer([(1, b"HTTP/1.1 500 Oops\r\nContent-Length: 4\r\n\r\noops")], "done", None) == ""
    assert model_answer([], "connection", "ConnectionRefusedError") == ""
