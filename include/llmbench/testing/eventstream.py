"""AWS event-stream frame encoding, for the wire-format test servers (testing/sagemaker_runtime,
testing/bedrock_runtime) and the tests: never the client path (the client decodes with
wire.decode_eventstream and wire.decode_converse)."""

from __future__ import annotations

import binascii
import json
import struct


def _header(name: str, value: str) -> bytes:
    n, v = name.encode(), value.encode()
    return struct.pack("!B", len(n)) + n + struct.pack("!BH", 7, len(v)) + v  # 7: string


def encode_frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event-stream message: prelude (total len, headers len, CRC), headers, payload, CRC."""
    hbytes = b"".join(_header(k, v) for k, v in headers.items())
    total = 12 + len(hbytes) + len(payload) + 4
    prelude = struct.pack("!II", total, len(hbytes))
    prelude += struct.pack("!I", binascii.crc32(prelude) & 0xFFFFFFFF)
    body = prelude + hbytes + payload
    return body + struct.pack("!I", binascii.crc32(body) & 0xFFFFFFFF)


def payload_part(data: bytes) -> bytes:
    return encode_frame(
        {":event-type": "PayloadPart", ":content-type": "application/octet-stream", ":message-type": "event"}, data
    )


def event_frame(event_type: str, payload: dict) -> bytes:
    """One event with a JSON payload, as Bedrock's ConverseStream sends them (`:event-type`
    messageStart, contentBlockDelta, contentBlockStop, messageStop, metadata)."""
    return encode_frame(
        {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"},
        json.dumps(payload, separators=(",", ":")).encode(),
    )


def exception_frame(kind: str, message: str) -> bytes:
    return encode_frame(
        {":exception-type": kind, ":content-type": "application/json", ":message-type": "exception"},
        json.dumps({"Message": message, "ErrorCode": kind}).encode(),
    )
