"""AWS runtime data planes, shared by the backends that stream from one: requests signed with SigV4
without boto3 in the hot path (SigV4Signer), and responses framed as AWS event-stream
(`application/vnd.amazon.eventstream`: binary frames whose payloads carry the model's bytes or
JSON events), decoded off the hot path (eventstream_payloads; the frame encoder, for test servers,
is testing/eventstream.py).

The signer is built once per sweep from frozen credentials (a botocore session per request cost
25 % of throughput) and re-frozen when refreshable credentials change.
"""

from __future__ import annotations

import threading
from typing import Any

EVENTSTREAM = "application/vnd.amazon.eventstream"


class SigV4Signer:
    """Signs one request's headers for one AWS service (its SigV4 scope, e.g. the runtime's signing
    name). Thread-safe; cheap per call."""

    def __init__(self, credentials: Any, region: str, service: str):
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
        return {"frozen": tuple(self._frozen or ()), "region": self._region, "service": self._service}

    def __setstate__(self, state: dict[str, Any]) -> None:
        from botocore.credentials import Credentials

        SigV4Signer.__init__(self, Credentials(*state["frozen"]), state["region"], state["service"])

    def sign(self, url: str, body: bytes, headers: dict[str, str]) -> dict[str, str]:
        from botocore.awsrequest import AWSRequest

        with self._lock:
            # Refreshable credentials re-freeze themselves near expiry; static ones never change.
            if getattr(self._credentials, "refresh_needed", lambda: False)():
                self._refresh()
            auth = self._auth
        assert auth is not None  # _refresh() in __init__ set it
        req = AWSRequest(method="POST", url=url, data=body, headers=dict(headers))
        auth.add_auth(req)
        return dict(req.headers.items())


def eventstream_payloads(chunks: list[tuple[int, bytes]]) -> tuple[list[tuple[int, bytes]], str | None, str | None]:
    """Timestamped response chunks of AWS event-stream frames -> the timestamped payloads of their
    PayloadPart events, error kind, error detail. A payload's time is the arrival of the chunk that
    completed its frame. An exception frame (ModelStreamError, InternalStreamFailure) or an
    undecodable one (bad CRC) ends decoding with stream_error."""
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
                    return payloads, "stream_error", f"{name}: {detail}"
                if headers.get(":event-type") == "PayloadPart":
                    payloads.append((t_ns, msg.payload))
    except ParserError as e:
        return payloads, "stream_error", f"event-stream frame rejected: {type(e).__name__}: {e}"[:300]
    return payloads, None, None
