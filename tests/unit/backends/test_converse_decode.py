"""Bedrock ConverseStream decoding (wire.decode_converse, build_record's wire "bedrock") from
frames encoded here, split across reads at every byte boundary; the Converse request body; the
backend's endpoint and signer."""

import pickle

import pytest
from botocore.credentials import Credentials

from llmbench.analysis import metrics
from llmbench.backends.bedrock.backend import BedrockBackend, converse_stream_url
from llmbench.backends.bedrock.wire import converse_request_body, decode_converse
from llmbench.loadgen.prompts import make_prompt
from llmbench.loadgen.wire import build_record
from llmbench.backends.bedrock.models import BedrockSettings, BedrockTarget
from llmbench.schemas.targets import ResolvedTarget
from llmbench.testing.eventstream import event_frame, exception_frame

MS = 1_000_000


def delta(text: str) -> bytes:
    return event_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": text}})


def stream(texts=("Hel", "lo", "!"), stop="max_tokens", usage=(12, 3)) -> list[bytes]:
    """One response's frames, as Bedrock sends them."""
    frames = [event_frame("messageStart", {"role": "assistant"}), *(delta(t) for t in texts),
              event_frame("contentBlockStop", {"contentBlockIndex": 0})]
    if stop is not None:
        frames.append(event_frame("messageStop", {"stopReason": stop}))
    if usage is not None:
        frames.append(event_frame("metadata", {"usage": {"inputTokens": usage[0], "outputTokens": usage[1],
                                                         "totalTokens": sum(usage)}, "metrics": {"latencyMs": 9}}))
    return frames


def record(reads, **kw):
    args = dict(concurrency=1, request_index=0, worker=0, send_ns=0, end_ns=100 * MS, send_lag_ns=0,
                http_status=200, lines=reads, error_kind=None, error_detail=None, wire="bedrock")
    return build_record(**{**args, **kw})


def test_one_frame_per_read_times_each_delta_at_its_read():
    frames = stream()
    reads = [((i + 1) * MS, f) for i, f in enumerate(frames)]
    p = decode_converse(reads)
    # frames 1..3 are the deltas (frame 0 is messageStart)
    assert p.content_ns == [2 * MS, 3 * MS, 4 * MS]
    assert p.finish_reason == "length" and p.usage == {"prompt_tokens": 12, "completion_tokens": 3}
    assert p.error_kind is None


def test_every_two_way_split_times_each_delta_at_the_read_that_completed_it():
    """The response cut in two at every byte offset (inside preludes, headers, payloads, CRCs):
    a delta whose frame ends within the first read is timed at it, every other at the second."""
    frames = stream()
    raw = b"".join(frames)
    ends = []  # end offset of each delta frame
    offset = 0
    for f in frames:
        offset += len(f)
        ends.append(offset)
    delta_ends = ends[1:4]
    for cut in range(1, len(raw)):
        p = decode_converse([(1 * MS, raw[:cut]), (2 * MS, raw[cut:])])
        expected = [1 * MS if end <= cut else 2 * MS for end in delta_ends]
        assert p.content_ns == expected, cut
        assert p.finish_reason == "length" and p.error_kind is None, cut


def test_byte_by_byte_reads():
    raw = b"".join(stream())
    p = decode_converse([(i, raw[i:i + 1]) for i in range(len(raw))])
    assert len(p.content_ns) == 3 and p.finish_reason == "length"
    assert p.content_ns[-1] < len(raw) - 1  # the last delta completes before the stop events


def test_empty_and_non_text_deltas_are_not_content():
    frames = stream(texts=("a", "", "b"))
    frames.insert(2, event_frame("contentBlockDelta", {"contentBlockIndex": 1,
                                                      "delta": {"toolUse": {"input": "{\"text\": 1"}}}))
    p = decode_converse([(i * MS, f) for i, f in enumerate(frames)])
    assert len(p.content_ns) == 2


@pytest.mark.parametrize("stop, finish", [("max_tokens", "length"), ("end_turn", "stop"),
                                          ("stop_sequence", "stop"), ("guardrail_intervened", "guardrail_intervened")])
def test_stop_reasons(stop, finish):
    assert decode_converse([(0, b"".join(stream(stop=stop)))]).finish_reason == finish


def test_record_from_usage_with_timings():
    frames = stream(texts=("a", "b", "c", "d"), usage=(40, 4))
    reads = [(10 * MS * (i + 1), f) for i, f in enumerate(frames)]
    r = record(reads, end_ns=reads[-1][0])
    assert r.ok and r.error_kind is None
    assert r.output_tokens == 4 and r.output_tokens_source == "usage" and r.input_tokens == 40
    assert r.ttft_ms == 20.0 and r.itl_ms == [10.0, 10.0, 10.0] and r.first_content_ns == 20 * MS
    assert r.finish_reason == "length" and r.content_chunks == 4


def test_without_metadata_tokens_are_counted():
    r = record([(MS, b"".join(stream(usage=None)))])
    assert r.ok and r.output_tokens == 3 and r.output_tokens_source == "counted" and r.input_tokens is None


def test_throttling_frame_is_throttled_other_exceptions_are_stream_errors():
    frames = stream()[:3]
    r = record([(MS, b"".join(frames)), (2 * MS, exception_frame("throttlingException", "slow down"))])
    assert not r.ok and r.error_kind == "throttled" and "throttlingException" in r.error_detail
    assert "slow down" in r.error_detail
    r = record([(MS, b"".join(frames) + exception_frame("modelStreamErrorException", "boom"))])
    assert r.error_kind == "stream_error" and r.error_detail.startswith("modelStreamErrorException")
    assert "throttled" in metrics.ERROR_KINDS


def test_bad_crc_is_a_stream_error():
    frames = stream()
    bad = frames[2][:-1] + bytes([frames[2][-1] ^ 0x01])
    r = record([(MS, frames[0] + frames[1]), (2 * MS, bad + b"".join(frames[3:]))])
    assert r.error_kind == "stream_error" and "Checksum" in r.error_detail


def test_missing_stop_is_truncated_and_no_delta_is_empty():
    assert record([(MS, b"".join(stream(stop=None)))]).error_kind == "truncated"
    assert record([(MS, b"".join(stream(texts=())))]).error_kind == "empty_response"


def test_http_429_is_throttled_for_bedrock_only():
    kw = dict(http_status=429, error_kind="http_status", error_detail="HTTP 429: ThrottlingException")
    r = record([], **kw)
    assert r.error_kind == "throttled" and r.http_status == 429 and r.error_detail.startswith("HTTP 429")
    assert record([], **kw, wire="sse").error_kind == "http_status"
    assert record([], **{**kw, "http_status": 403}).error_kind == "http_status"


def test_converse_body_system_only_with_a_shared_prefix():
    body = converse_request_body(make_prompt(0, 3, 100, 17))
    assert body["inferenceConfig"] == {"maxTokens": 17, "temperature": 0.0} and "system" not in body
    assert body["messages"][0]["role"] == "user" and body["messages"][0]["content"][0]["text"].startswith("Continue")
    shared = converse_request_body(make_prompt(0, 3, 100, 17, shared_prefix_tokens=20))
    assert len(shared["system"][0]["text"].split()) == 20


class _Session:
    def get_credentials(self):
        return Credentials("AKIDEXAMPLE", "secret")


def test_endpoint_signs_for_bedrock_the_encoded_model_path():
    target = ResolvedTarget.model_construct(
        target_id="nova", backend=BedrockTarget(settings=BedrockSettings(region="eu-west-1"),
                                                model_id="eu.amazon.nova-micro-v1:0"))
    backend = BedrockBackend(_Session())
    handle = backend.deploy(target, None)
    assert {k: handle[k] for k in ("backend", "region", "model_id", "runtime_url")} == {
        "backend": "bedrock", "region": "eu-west-1", "model_id": "eu.amazon.nova-micro-v1:0", "runtime_url": None}
    assert backend.status(handle).state == "ready" and backend.teardown(handle).endpoint_seconds is None
    assert backend.janitor("eu-west-1") == [] and backend.cost_basis == "per_token"
    ep = backend.endpoint(handle)
    assert ep.url == "https://bedrock-runtime.eu-west-1.amazonaws.com/model/eu.amazon.nova-micro-v1%3A0/converse-stream"
    assert ep.wire == "bedrock" and ep.keep_alive and ep.model == "eu.amazon.nova-micro-v1:0"
    assert ep.headers["Accept"] == "application/vnd.amazon.eventstream"
    signer = pickle.loads(pickle.dumps(ep.signer))  # as a load-generator process receives it
    auth = signer.sign(ep.url, b"{}", dict(ep.headers))["Authorization"]
    assert "/eu-west-1/bedrock/aws4_request" in auth
    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.x:0"
    assert converse_stream_url("us-east-1", arn, "http://h:1/").endswith("/model/arn%3Aaws%3Abedrock%3Aus-east-1"
                                                                        "%3A123456789012%3Ainference-profile%2Fus.x%3A0"
                                                                        "/converse-stream")
