"""Event-stream framing and SigV4 signing (botocore does the crypto; we check our use of it)."""

import json

from botocore.credentials import Credentials

from llmbench.backends.awsstream import SigV4Signer
from llmbench.backends.sagemaker.wire import runtime_url, sagemaker_headers
from llmbench.loadgen.wire import build_record, decode_eventstream
from llmbench.testing.eventstream import exception_frame, payload_part

MS = 1_000_000
SSE = b"".join(
    b"data: " + json.dumps({"choices": [{"delta": {"content": c}, "finish_reason": None}]}).encode() + b"\n\n"
    for c in ("a", "b", "c")
) + b'data: {"choices": [{"delta": {}, "finish_reason": "stop"}]}\n\ndata: [DONE]\n\n'


def frames_of(data: bytes, size: int):
    """Payload split into frames of `size` bytes, arriving one frame per millisecond."""
    return [(i * MS, payload_part(data[o:o + size])) for i, o in enumerate(range(0, len(data), size))]


def test_lines_reassembled_across_frames_with_the_completing_frames_time():
    chunks = frames_of(SSE, 7)  # every SSE line spans several frames
    lines, kind, _ = decode_eventstream(chunks)
    assert kind is None
    assert b"".join(line for _, line in lines) == SSE
    first = next(t for t, line in lines if b'"a"' in line)
    # the first line ends at byte SSE.index(b"\n"): the frame holding that byte completes it
    assert first == SSE.index(b"\n") // 7 * MS


def test_record_from_frames_split_mid_chunk():
    # frames may also be split across network reads: join and re-split at odd offsets
    raw = b"".join(f for _, f in frames_of(SSE, 11))
    reads = [(i * MS, raw[o:o + 13]) for i, o in enumerate(range(0, len(raw), 13))]
    r = build_record(concurrency=1, request_index=0, worker=0, send_ns=0, end_ns=len(reads) * MS, send_lag_ns=0,
                     http_status=200, lines=reads, error_kind=None, error_detail=None, wire="sagemaker")
    assert r.ok and r.content_chunks == 3 and r.finish_reason == "stop" and r.ttft_ms > 0


def test_model_stream_error_and_bad_crc_are_stream_errors():
    chunks = frames_of(SSE, 40)[:2] + [(9 * MS, exception_frame("ModelStreamError", "boom"))]
    _, kind, detail = decode_eventstream(chunks)
    assert kind == "stream_error" and "ModelStreamError" in detail and "boom" in detail
    bad = payload_part(b"data: x\n")
    _, kind, detail = decode_eventstream([(0, bad[:-1] + bytes([bad[-1] ^ 1]))])
    assert kind == "stream_error" and "Checksum" in detail


def test_lmi_json_lines():
    lines = b'{"token": {"text": "Hi", "special": false}}\n{"token": {"text": "!", "special": false}}\n' \
            b'{"token": {"text": "</s>", "special": true}, "details": {"finish_reason": "eos_token", "generated_tokens": 3}}\n'
    r = build_record(concurrency=1, request_index=0, worker=0, send_ns=0, end_ns=5 * MS, send_lag_ns=0,
                     http_status=200, lines=frames_of(lines, 9), error_kind=None, error_detail=None, wire="sagemaker")
    assert r.ok and r.content_chunks == 2 and r.output_tokens == 3 and r.output_tokens_source == "usage"


def test_signer_signs_for_sagemaker_and_refreezes():
    creds = Credentials("AKIDEXAMPLE", "secret", "tok")
    s = SigV4Signer(creds, "us-west-2", "sagemaker")
    url = runtime_url("us-west-2", "my endpoint")
    assert url == "https://runtime.sagemaker.us-west-2.amazonaws.com/endpoints/my%20endpoint/invocations-response-stream"
    h = s.sign(url, b"{}", sagemaker_headers())
    assert h["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/us-west-2/sagemaker/aws4_request" in h["Authorization"]
    assert "x-amzn-sagemaker-accept" in h["Authorization"] and h["X-Amz-Security-Token"] == "tok"
    assert h["X-Amzn-SageMaker-Accept"] == "text/event-stream"
