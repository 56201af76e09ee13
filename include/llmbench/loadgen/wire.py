"""From the bytes a response brought to its request record, off the hot path (in the record
builder process, recordworker): the wire's framing undone (the endpoint's WireFormat, registered by
its backend: e.g. AWS event-stream frames around SSE, or a stream of JSON events), SSE or JSON
lines split and parsed, timings computed (metrics), the record built (records.RequestRecord).

Imports metrics, records, redaction and the wire registry, and botocore's event-stream decoder when a
response needs it; never the load generator or the sweep.
"""

from __future__ import annotations

import json
import re
from typing import Any

from llmbench.analysis import metrics
from llmbench.backends import registry
from llmbench.backends.awsstream import eventstream_payloads
from llmbench.backends.registry import StreamParse
from llmbench.redaction import redact
from llmbench.schemas.records import RequestRecord


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
    """Timestamped AWS event-stream chunks -> timestamped payload lines, error kind, error detail
    (backends.awsstream.eventstream_payloads, then split_lines: one SSE line can span frames)."""
    payloads, error_kind, error_detail = eventstream_payloads(chunks)
    return split_lines(payloads), error_kind, error_detail


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


# A chat chunk's `"content": "<JSON string>"` (the unrolled form: no backtracking on an unclosed string).
_CONTENT = re.compile(rb'"content"\s*:\s*("[^"\\]*(?:\\.[^"\\]*)*")')


def chat_answer_text(body: list[tuple[int, bytes]]) -> str:
    """The answer an OpenAI chat-completions SSE stream carried: its delta contents joined (""
    when it carried none, carried an error event, or does not parse). A multi-turn session with
    history "model" needs it on the load generator's own loop, between a turn's answer and the next
    turn, so it is kept cheap: the content strings are found by one regular-expression pass in C
    and decoded by one JSON parse of them alone, never the whole chunks (their ids, usage and
    finish reasons), which cost three times as much. body: the decoded body's pieces
    (recordworker.classify) of a response that ended well; one choice a request (we never ask for n)."""
    data = b"".join(piece for _, piece in body)
    if b'"error"' in data:
        return ""
    literals = _CONTENT.findall(data)
    if not literals:
        return ""
    try:
        parts = json.loads(b"[" + b",".join(literals) + b"]")
    except ValueError:
        return ""
    return "".join(parts)


def _misshapen(parse: StreamParse, what: str, value: Any) -> bool:
    """StreamParse.misshapen, answering _take_chunk's "go on?" with no."""
    parse.misshapen(what, value)
    return False


def _take_chunk(parse: StreamParse, t_ns: int, chunk: dict[str, Any]) -> bool:
    """Fold one OpenAI chat-completion chunk (arrived at t_ns) into `parse`; False (with the
    error set) when the chunk is an error event or not the shape of a chunk."""
    if "error" in chunk:
        parse.error_kind, parse.error_detail = "stream_error", json.dumps(chunk["error"])[:200]
        return False
    usage = chunk.get("usage")
    cumulative = None
    if usage:
        if not isinstance(usage, dict):
            return _misshapen(parse, "usage", usage)
        parse.usage = usage
        cumulative = _whole(usage.get("completion_tokens"))
    choices = chunk.get("choices") or []
    if not isinstance(choices, list):
        return _misshapen(parse, "choices", choices)
    if cumulative is not None and choices:
        # per-chunk usage (continuous_usage_stats): this chunk's tokens are the count's increase;
        # the closing usage-only chunk (no choices) repeats the total and carries none
        carried = cumulative - parse.completion_tokens_seen
        if carried < 0:
            return _misshapen(parse, "usage completion_tokens (went down)", cumulative)
        parse.completion_tokens_seen = cumulative
        if carried:
            parse.token_ns.append(t_ns)
            parse.token_counts.append(carried)
    for choice in choices:
        if not isinstance(choice, dict):
            return _misshapen(parse, "a choice", choice)
        delta = choice.get("delta") or {}
        if not isinstance(delta, dict):
            return _misshapen(parse, "delta", delta)
        if delta.get("content"):
            parse.content_ns.append(t_ns)
            if cumulative is None:
                parse.content_without_usage += 1
        finish = choice.get("finish_reason")
        if finish:
            if not isinstance(finish, str):
                return _misshapen(parse, "finish_reason", finish)
            parse.finish_reason = finish
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
            if not isinstance(obj, dict):
                return malformed(line)
            token = obj.get("token") or {}
            details = obj.get("details") or {}
            if not isinstance(token, dict) or not isinstance(details, dict):
                return malformed(line)
            if token.get("text") and not token.get("special"):
                parse.content_ns.append(t_ns)
            if details.get("finish_reason"):
                if not isinstance(details["finish_reason"], str):
                    _misshapen(parse, "finish_reason", details["finish_reason"])
                    return parse
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


# Bounds on a response's reported token counts. A prompt is never more tokens than its request
# has bytes, plus what a chat template adds (a default system prompt, role markers: tens of tokens;
# this allows for far more); no count exceeds a record's int32 columns.
TEMPLATE_TOKENS_ALLOWANCE = 1024
INT32_MAX = 2**31 - 1


def _whole(value: Any) -> int | None:
    """A JSON count as an int: ints, and floats with a whole finite value (8.0); None otherwise
    (a string, a list, NaN, true)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def check_usage(
    usage: dict[str, Any], content_chunks: int, max_tokens: int | None, request_bytes: int | None
) -> tuple[int | None, int | None, str | None, str | None]:
    """A response's reported usage against what its request asked for and what arrived:
    (completion_tokens, prompt_tokens, error_kind, error_detail). A count that is not a whole
    number is malformed_chunk; one that cannot be true is implausible_usage: negative, more output
    tokens than max_tokens allowed, fewer than the content chunks that arrived (each carried at
    least one), more prompt tokens than the request could hold, or beyond int32."""
    raw_out, raw_in = usage.get("completion_tokens"), usage.get("prompt_tokens")
    out, inp = _whole(raw_out), _whole(raw_in)
    for name, raw, v in (("completion_tokens", raw_out, out), ("prompt_tokens", raw_in, inp)):
        if raw is not None and v is None:
            return None, None, "malformed_chunk", f"usage {name} is {type(raw).__name__} {json.dumps(raw)[:60]}"
    why = None
    if out is not None:
        if out < 0:
            why = f"completion_tokens {out}"
        elif max_tokens is not None and out > max_tokens:
            why = f"completion_tokens {out} > max_tokens {max_tokens}"
        elif out > INT32_MAX:
            why = f"completion_tokens {out}"
        elif out < content_chunks:
            why = f"completion_tokens {out} < the {content_chunks} content chunks that arrived"
    if why is None and inp is not None:
        bound = INT32_MAX if request_bytes is None else request_bytes + TEMPLATE_TOKENS_ALLOWANCE
        if not 0 <= inp <= min(bound, INT32_MAX):
            over = inp > 0 and request_bytes is not None
            why = f"prompt_tokens {inp}" + (
                f" > the request's {request_bytes} bytes + {TEMPLATE_TOKENS_ALLOWANCE}" if over else ""
            )
    if why is not None:
        return None, None, "implausible_usage", f"the server reported {why}"
    return out, inp, None, None


def _parse_stream(
    wire: str, lines: list[tuple[int, bytes]], http_status: int | None, error_kind: str | None, error_detail: str | None
) -> tuple[StreamParse, str | None, str | None]:
    """(the response's parse on its wire, its error kind and detail): the hot path's error, else
    the wire's framing or parse error, else an empty or truncated stream; a throttling status is
    `throttled`."""
    fmt = registry.wire(wire)
    if error_kind == "http_status" and http_status in fmt.throttled_statuses:
        error_kind = "throttled"  # a rate refusal before the stream (http_status stays as sent)
    if fmt.unframe is not None and error_kind is None:
        payloads, error_kind, error_detail = fmt.unframe(lines)
        lines = split_lines(payloads)
    elif fmt.parse is None and error_kind is None:
        lines = split_lines(lines)
    if error_kind is not None:
        parse = StreamParse([], None, None)
    else:
        parse = fmt.parse(lines) if fmt.parse is not None else parse_openai_sse(lines)
    if error_kind is None and parse.error_kind:
        error_kind, error_detail = parse.error_kind, parse.error_detail
    if error_kind is None and not parse.content_ns:
        error_kind, error_detail = "empty_response", "stream carried no generated content"
    if error_kind is None and parse.finish_reason is None:
        error_kind, error_detail = "truncated", "stream ended without a finish reason"
    return parse, error_kind, error_detail


def _chunks(parse: StreamParse) -> tuple[list[int], list[int], str]:
    """(arrival times, tokens each, source) of the chunks that carried tokens: from per-chunk usage
    when every content chunk carried it; otherwise (llama-server, a wire of its own) one token per
    non-empty content chunk."""
    if parse.token_ns and parse.content_ns and not parse.content_without_usage:
        return parse.token_ns, parse.token_counts, "usage"
    return parse.content_ns, [1] * len(parse.content_ns), "content"


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
    max_tokens: int | None = None,
    request_bytes: int | None = None,
    session: int = -1,
    turn_index: int = 0,
    history_chars: int = 0,
    prefix_id: int = 0,
    scheduled_ms: float | None = None,
    input_tokens_client: int | None = None,
    stream_wait_ns: int = 0,
) -> RequestRecord:
    """One request's record from what the hot path captured: the response's bytes as read, on the
    endpoint's wire (registry.WireFormat: SSE, or a framing around it, or a parse of its own).
    max_tokens (the most its request may have asked for) and request_bytes (its body's size) bound
    the usage it may report (check_usage); None: unknown (an older capture)."""
    parse, error_kind, error_detail = _parse_stream(wire, lines, http_status, error_kind, error_detail)
    reported_out, input_tokens, usage_kind, usage_detail = check_usage(
        parse.usage or {}, len(parse.content_ns), max_tokens, request_bytes
    )
    if error_kind is None and usage_kind is not None:
        error_kind, error_detail = usage_kind, usage_detail
    output_tokens = len(parse.content_ns) if reported_out is None else reported_out
    source = "counted" if reported_out is None else "usage"
    chunk_ns, chunk_tokens, chunk_source = _chunks(parse)
    timings = metrics.request_timings(send_ns, parse.content_ns, end_ns, output_tokens, chunk_ns)
    return RequestRecord(
        concurrency=concurrency,
        request_index=request_index,
        worker=worker,
        ok=error_kind is None,
        error_kind=error_kind,
        # a server (or a proxy) may echo the request's Authorization header in its error body
        error_detail=redact(error_detail) if error_detail else error_detail,
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
        input_tokens=input_tokens,
        finish_reason=parse.finish_reason,
        repeat=repeat,
        arrival_rate_rps=arrival_rate_rps,
        send_retried=send_retried,
        session=session,
        turn_index=turn_index,
        history_chars=history_chars,
        prefix_id=prefix_id,
        scheduled_ms=scheduled_ms,
        chunk_tokens=chunk_tokens,
        chunk_tokens_source=chunk_source,
        input_tokens_client=input_tokens_client,
        stream_wait_ms=min(stream_wait_ns, send_lag_ns) / metrics.NS_PER_MS,
    )
