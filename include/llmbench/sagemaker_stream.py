"""SageMaker runtime streaming data plane, without boto3 in the hot path.

InvokeEndpointWithResponseStream is a POST to
  https://runtime.sagemaker.{region}.amazonaws.com/endpoints/{name}/invocations-response-stream
signed with SigV4 (service name `sagemaker`). The response is `application/vnd.amazon.eventstream`:
binary frames whose PayloadPart payloads are raw model bytes (here: OpenAI SSE, or LMI/TGI JSON
lines). One SSE line can span several frames, so lines are reassembled after decoding.

The signer is built once per sweep from frozen credentials (a botocore session per request cost
25 % of throughput) and re-frozen when refreshable credentials change.
"""

from __future__ import annotations

import binascii
import struct
import threading
from typing import Any
from urllib.parse import quote

EVENTSTREAM = "application/vnd.amazon.eventstream"


def runtime_url(region: str, endpoint_name: str, base: str | None = None) -> str:
    host = (base or f"https://runtime.sagemaker.{region}.amazonaws.com").rstrip("/")
    return f"{host}/endpoints/{quote(endpoint_name, safe='')}/invocations-response-stream"


class SigV4Signer:
    """Signs one request's headers for service `sagemaker`. Thread-safe; cheap per call."""

    def __init__(self, credentials: Any, region: str, service: str = "sagemaker"):
        # credentials: botocore Credentials (static or refreshable), e.g. boto3.Session().get_credentials()
        if credentials is None:
            raise ValueError("no AWS credentials found (standard chain: env, profile, instance role)")
        self._credentials = credentials
        self._region = region
        self._service = service
        self._lock = threading.Lock()
        self._frozen = None
        self._auth = None
        self._refresh()

    def _refresh(self) -> None:
        from botocore.auth import SigV4Auth

        frozen = self._credentials.get_frozen_credentials()
        if frozen != self._frozen:
            self._frozen = frozen
            self._auth = SigV4Auth(frozen, self._service, self._region)

    def __getstate__(self) -> dict[str, Any]:
        # For a load-generator process of its own: the credentials as they are now (a level is
        # short next to a credential's life); locks and refreshers stay behind.
        self._refresh()
        return {"frozen": tuple(self._frozen), "region": self._region, "service": self._service}

    def __setstate__(self, state: dict[str, Any]) -> None:
        from botocore.credentials import Credentials

        self.__init__(Credentials(*state["frozen"]), state["region"], state["service"])

    def sign(self, url: str, body: bytes, headers: dict[str, str]) -> dict[str, str]:
        from botocore.awsrequest import AWSRequest

        with self._lock:
            # Refreshable credentials re-freeze themselves near expiry; static ones never change.
            if getattr(self._credentials, "refresh_needed", lambda: False)():
                self._refresh()
            auth = self._auth
        req = AWSRequest(method="POST", url=url, data=body, headers=dict(headers))
        auth.add_auth(req)
        return dict(req.headers.items())


def sagemaker_headers(accept: str = "text/event-stream", inference_component: str | None = None) -> dict[str, str]:
    h = {"Content-Type": "application/json", "X-Amzn-SageMaker-Accept": accept, "Accept": EVENTSTREAM}
    if inference_component:
        h["X-Amzn-SageMaker-Inference-Component"] = inference_component
    return h


def decode_eventstream(chunks: list[tuple[int, bytes]]) -> tuple[list[tuple[int, bytes]], str | None, str | None]:
    """Decode timestamped response chunks into timestamped payload lines.

    Returns (lines, error_kind, error_detail). A line's time is the arrival of the chunk that
    completed the frame that completed the line. Exceptions in the stream (ModelStreamError,
    InternalStreamFailure) and undecodable frames (bad CRC) end decoding with stream_error.
    """
    from botocore.eventstream import EventStreamBuffer, ParserError

    from llmbench.loadgen import split_lines

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


# ---- encoding: for the wire-format test server (tests, benchmarks), never the client path ------


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


def exception_frame(kind: str, message: str) -> bytes:
    import json

    return encode_frame(
        {":exception-type": kind, ":content-type": "application/json", ":message-type": "exception"},
        json.dumps({"Message": message, "ErrorCode": kind}).encode(),
    )
