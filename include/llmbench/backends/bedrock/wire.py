"""The bedrock wire: ConverseStream, a POST to
  {runtime}/model/{model id, URL-encoded}/converse-stream
signed with SigV4 (service name `bedrock`), with a Converse body; the response is AWS event-stream
frames of JSON events (decode_converse). The quality stage's non-streaming requests go to
/converse, with the tools as a Converse `toolConfig`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from llmbench.backends import registry
from llmbench.backends.registry import StreamParse, WireFormat


def converse_request_body(prompt: Any) -> dict[str, Any]:
    """Amazon Bedrock Converse / ConverseStream request of a prompt (.text, .system, .max_tokens;
    the model id is in the URL, not the body). There is no ignore_eos: a model may end its turn
    before maxTokens (records then carry finish_reason "stop" and the usage's shorter output_tokens)."""
    return _body(prompt.text, prompt.system, prompt.max_tokens)


def _body(text: str, system: str | None, max_tokens: int) -> dict[str, Any]:
    body: dict[str, Any] = {
        "messages": [{"role": "user", "content": [{"text": text}]}],
        "inferenceConfig": {"maxTokens": max_tokens, "temperature": 0.0},
    }
    if system:
        body["system"] = [{"text": system}]
    return body


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
                    if reason and not isinstance(reason, str):
                        return parse.misshapen("stopReason", reason)
                    parse.finish_reason = CONVERSE_FINISH.get(reason, reason) if reason else None
                elif event == "metadata":
                    usage = json.loads(msg.payload).get("usage") or {}
                    if not isinstance(usage, dict):
                        return parse.misshapen("usage", usage)
                    parse.usage = {
                        "prompt_tokens": usage.get("inputTokens"),
                        "completion_tokens": usage.get("outputTokens"),
                    }
    except ParserError as e:
        parse.error_kind = "stream_error"
        parse.error_detail = f"event-stream frame rejected: {type(e).__name__}: {e}"[:300]
    except (ValueError, TypeError, AttributeError) as e:  # a payload that is not JSON, or not an object
        parse.error_kind = "malformed_chunk"
        parse.error_detail = f"ConverseStream event payload: {type(e).__name__}: {e}"[:300]
    return parse


def tool_config(openai_tools: list[dict[str, Any]]) -> dict[str, Any]:
    """OpenAI `tools` as Converse's `toolConfig`: the same names, descriptions and JSON schemas."""
    return {
        "tools": [
            {
                "toolSpec": {
                    "name": t["function"]["name"],
                    "description": t["function"].get("description", ""),
                    "inputSchema": {"json": t["function"].get("parameters", {})},
                }
            }
            for t in openai_tools
        ]
    }


def answer_body(prompt: str, max_tokens: int, tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    body = _body(prompt, None, max_tokens)
    if tools:
        body["toolConfig"] = tool_config(tools)
    return body


def parse_answer(payload: Any) -> tuple[str, list[tuple[str, str]]]:
    """A Converse reply: its text blocks joined, and each toolUse block as (name, input JSON)."""
    blocks = ((payload.get("output") or {}).get("message") or {}).get("content") or []
    text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict))
    calls = [
        (b["toolUse"].get("name", ""), json.dumps(b["toolUse"].get("input")))
        for b in blocks
        if isinstance(b, dict) and "toolUse" in b
    ]
    return text, calls


WIRE = registry.register_wire(
    WireFormat(
        name="bedrock",
        stream_body=lambda text, system, max_tokens, model: _body(text, system, max_tokens),
        parse=decode_converse,
        throttled_statuses=frozenset({429}),  # ThrottlingException before the stream
        answer_url=lambda url: re.sub(r"/converse-stream$", "/converse", url),
        answer_body=answer_body,
        answer_parse=parse_answer,
    )
)
