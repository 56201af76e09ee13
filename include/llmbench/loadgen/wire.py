"""From the bytes a response brought to its request record, off the hot path (in the record
builder process, recordworker): AWS event-stream frames decoded (SageMaker's payload parts, or
Bedrock ConverseStream's JSON events), SSE or JSON lines split and parsed, timings computed
(metrics), the record built (records.RequestRecord).

Imports metrics and records, and botocore's event-stream decoder when a response needs it; never
the load generator or the sweep.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from llmbench.analysis import metrics
from llmbench.schemas.records import RequestRecord


@dataclass
class StreamParse:
    content_ns: list[int]
    finish_reason: str | None
    usage: dict[str, Any] | None
    error_kind: str | None = None
    error_detail: str | None = None


def split_lines(chunks: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """Timestamped byte chunks (as read) -> timestamped lines. A line's time is the arrival of
    the chunk that completed it; a last line without a newline gets the last chunk's time."""
    lines: list[tuple[int, bytes]] = []
    pending = b""
    for t_ns, data in chunks:
        pending += data
        *complete, pending = pending.split(b"\n")
        lines.extend((t_ns, line + b"\n") for line in complete)
    if pending:
        lines.append((chunks[-1][0], pending))
    return lines


def decode_eventstream(chunks: list[tuple[int, bytes]]) -> tuple[list[tuple[int, bytes]], str | None, str | None]:
    """Decode timestamped response chunks of a SageMaker InvokeEndpointWithResponseStream response
    (AWS event-stream frames) into timestamped payload lines.

    Returns (lines, error_kind, error_detail). A line's time is the arrival of the chunk that
    completed the frame that completed the line (one SSE line can span several frames).
    Exceptions in the stream (ModelStreamError, InternalStreamFailure) and undecodable frames
    (bad CRC) end decoding with stream_error.
    """
    from botocore.eventstream import EventStreamBuffer, ParserError

    buf = EventStreamBuffer()
    payloads: list[tuple[int, bytes]] = []
    try:
        for t_ns, data in chunks:
            buf.add_data(data)
            for msg in buf:
                headers = msg.headers
                mtype = headers.get(":message-type")
                if mtype in ("exception", "error"):
                    name = headers.get(":exception-type") or headers.get(":error-code") or "error"
                    detail = msg.payload[:300].decode("utf-8", "replace")
                    return split_lines(payloads), "stream_error", f"{name}: {detail}"
                if headers.get(":event-type") == "PayloadPart":
                    payloads.append((t_ns, msg.payload))
    except ParserError as e:
        return split_lines(payloads), "stream_error", f"event-stream frame rejected: {type(e).__name__}: {e}"[:300]
    return split_lines(payloads), None, None


# ConverseStream's stopReason in the OpenAI terms the other wires record ("length": the token
# budget ran out; "stop": the model ended its turn); any other reason is kept as Bedrock gives it.
CONVERSE_FINISH = {"max_tokens": "length", "end_turn": "stop", "stop_sequence": "stop"}


def decode_converse(chunks: list[tuple[int, bytes]]) -> StreamParse:
    """Parse timestamped response chunks of a Bedrock ConverseStream response (AWS event-stream
    frames, one JSON event each).

    A content chunk is a contentBlockDelta whose delta carries non-empty text, timed at the
    arrival of the read that completed its frame. messageStop gives the finish reason
    (CONVERSE_FINISH), metadata the usage (as prompt_tokens / completion_tokens, the keys
    build_record reads). An exception frame ends decoding: throttlingException is "throttled",
    any other "stream_error"; so does a frame botocore rejects (bad CRC, bad length).
    """
    from botocore.eventstream import EventStreamBuffer, ParserError

    buf = EventStreamBuffer()
    parse = StreamParse([], None, None)
    try:
        for t_ns, data in chunks:
            buf.add_data(data)
            for msg in buf:
                headers = msg.headers
                event = headers.get(":event-type")
                if event == "contentBlockDelta":
                    # the frequent event: a text delta always holds "text", so testing for it
                    # first spares other deltas (tool-use input) the JSON parse
                    if b'"text"' in msg.payload and (json.loads(msg.payload).get("delta") or {}).get("text"):
                        parse.content_ns.append(t_ns)
                elif headers.get(":message-type") in ("exception", "error"):
                    name = headers.get(":exception-type") or headers.get(":error-code") or "error"
                    detail = msg.payload[:300].decode("utf-8", "replace")
                    parse.error_kind = "throttled" if name == "throttlingException" else "stream_error"
                    parse.error_detail = f"{name}: {detail}"[:300]
                    return parse
                elif event == "messageStop":
                    reason = json.loads(msg.payload).get("stopReason")
                    parse.finish_reason = CONVERSE_FINISH.get(reason, reason) if reason else None
                elif event == "metadata":
                    usage = json.loads(msg.payload).get("usage") or {}
                    parse.usage = {
                        "prompt_tokens": usage.get("inputTokens"),
                        "completion_tokens": usage.get("outputTokens"),
                    }
    except ParserError as e:
        parse.error_kind = "stream_error"
        parse.error_detail = f"event-stream frame rejected: {type(e).__name__}: {e}"[:300]
    except ValueError as e:  # an event whose payload is not JSON
        parse.error_kind = "malformed_chunk"
        parse.error_detail = f"ConverseStream event payload: {e}"[:300]
    return parse


def parse_openai_sse(lines: list[tuple[int, bytes]]) -> StreamParse:
    """Parse timestamped SSE lines of an OpenAI chat-completions stream (off the hot path).

    A content chunk is a `data:` event whose first choice carries non-empty delta content; its
    arrival time is the time of the line that completed it. The `data:` payloads are parsed as
    one JSON array (one call into the C parser instead of one per token: a quarter of the CPU);
    a stream that does not parse that way, or carries JSON lines, goes line by line, which also
    finds the offending line.
    """
    data: list[tuple[int, bytes]] = []
    for t_ns, raw in lines:
        line = raw.strip()
        if line.startswith(b"data:"):
            payload = line[5:].strip()
            if payload != b"[DONE]":
                data.append((t_ns, payload))
        elif line.startswith(b"{"):
            return _parse_lines(lines)
    try:
        chunks = json.loads(b"[" + b",".join(p for _, p in data) + b"]")
    except ValueError:
        return _parse_lines(lines)
    if len(chunks) != len(data) or not all(isinstance(c, dict) for c in chunks):
        return _parse_lines(lines)
    parse = StreamParse([], None, None)
    for (t_ns, _), chunk in zip(data, chunks, strict=True):
        if not _take_chunk(parse, t_ns, chunk):
            break
    return parse


def _take_chunk(parse: StreamParse, t_ns: int, chunk: dict[str, Any]) -> bool:
    """Fold one OpenAI chat-completion chunk (arrived at t_ns) into `parse`; False (with the
    error set) when the chunk is an error event."""
    if "error" in chunk:
        parse.error_kind, parse.error_detail = "stream_error", json.dumps(chunk["error"])[:200]
        return False
    if chunk.get("usage"):
        parse.usage = chunk["usage"]
    for choice in chunk.get("choices") or []:
        delta = choice.get("delta") or {}
        if delta.get("content"):
            parse.content_ns.append(t_ns)
        if choice.get("finish_reason"):
            parse.finish_reason = choice["finish_reason"]
    return True


def _parse_lines(lines: list[tuple[int, bytes]]) -> StreamParse:
    """parse_openai_sse line by line: LMI/TGI JSON lines, and the exact malformed line."""
    parse = StreamParse([], None, None)

    def malformed(text: bytes) -> StreamParse:
        parse.error_kind, parse.error_detail = "malformed_chunk", text[:200].decode("utf-8", "replace")
        return parse

    for t_ns, raw in lines:
        line = raw.strip()
        if not line or line.startswith(b":"):
            continue
        if line.startswith(b"{"):
            # LMI / TGI JSON lines: {"token": {"text": ..., "special": ...}, "details": {...}}
            try:
                obj = json.loads(line)
            except ValueError:
                return malformed(line)
            token = obj.get("token") or {}
            if token.get("text") and not token.get("special"):
                parse.content_ns.append(t_ns)
            details = obj.get("details") or {}
            if details.get("finish_reason"):
                parse.finish_reason = details["finish_reason"]
                if details.get("generated_tokens") is not None:
                    parse.usage = {"completion_tokens": details["generated_tokens"]}
            continue
        if not line.startswith(b"data:"):
            continue  # event:/id:/retry: fields carry nothing we measure
        payload = line[5:].strip()
        if payload == b"[DONE]":
            continue
        try:
            chunk = json.loads(payload)
        except ValueError:
            return malformed(payload)
        if not isinstance(chunk, dict):
            return malformed(payload)
        if not _take_chunk(parse, t_ns, chunk):
            return parse
    return parse


def build_record(
    *,
    concurrency: int,
    request_index: int,
    worker: int,
    send_ns: int,
    end_ns: int,
    send_lag_ns: int,
    http_status: int | None,
    lines: list[tuple[int, bytes]],
    error_kind: str | None,
    error_detail: str | None,
    wire: str = "sse",
    repeat: int = 0,
    arrival_rate_rps: float = 0.0,
    send_retried: bool = False,
) -> RequestRecord:
    """One request's record from what the hot path captured: the response's bytes as read (SSE;
    for wire "sagemaker" event-stream frames around them; for wire "bedrock" ConverseStream
    events)."""
    if wire == "bedrock" and error_kind == "http_status" and http_status == 429:
        error_kind = "throttled"  # ThrottlingException before the stream (http_status stays 429)
    if wire == "sagemaker" and error_kind is None:
        lines, error_kind, error_detail = decode_eventstream(lines)
    elif wire != "bedrock" and error_kind is None:
        lines = split_lines(lines)
    if error_kind is not None:
        parse = StreamParse([], None, None)
    else:
        parse = decode_converse(lines) if wire == "bedrock" else parse_openai_sse(lines)
    if error_kind is None and parse.error_kind:
        error_kind, error_detail = parse.error_kind, parse.error_detail
    if error_kind is None and not parse.content_ns:
        error_kind, error_detail = "empty_response", "stream carried no generated content"
    if error_kind is None and parse.finish_reason is None:
        error_kind, error_detail = "truncated", "stream ended without a finish reason"
    usage = parse.usage or {}
    if usage.get("completion_tokens") is not None:
        output_tokens, source = int(usage["completion_tokens"]), "usage"
    else:
        output_tokens, source = len(parse.content_ns), "counted"
    timings = metrics.request_timings(send_ns, parse.content_ns, end_ns, output_tokens)
    return RequestRecord(
        concurrency=concurrency,
        request_index=request_index,
        worker=worker,
        ok=error_kind is None,
        error_kind=error_kind,
        error_detail=error_detail,
        http_status=http_status,
        send_ns=send_ns,
        first_content_ns=parse.content_ns[0] if parse.content_ns else None,
        end_ns=end_ns,
        send_lag_ms=send_lag_ns / metrics.NS_PER_MS,
        ttft_ms=timings["ttft_ms"],
        e2e_ms=timings["e2e_ms"],
        tpot_ms=timings["tpot_ms"],
        itl_ms=timings["itl_ms"],
        content_chunks=len(parse.content_ns),
        output_tokens=output_tokens,
        output_tokens_source=source,
        output_tokens_counted=len(parse.content_ns),
        input_tokens=usage.get("prompt_tokens"),
        finish_reason=parse.finish_reason,
        repeat=repeat,
        arrival_rate_rps=arrival_rate_rps,
        send_retried=send_retried,
    )
