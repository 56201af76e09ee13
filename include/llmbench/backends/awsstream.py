"""SageMaker runtime streaming data plane, the request side, without boto3 in the hot path.

InvokeEndpointWithResponseStream is a POST to
  https://runtime.sagemaker.{region}.amazonaws.com/endpoints/{name}/invocations-response-stream
signed with SigV4 (service name `sagemaker`). The response is `application/vnd.amazon.eventstream`:
binary frames whose PayloadPart payloads are raw model bytes (here: OpenAI SSE, or LMI/TGI JSON
lines), decoded off the hot path by wire.decode_eventstream (the frame encoder, for test servers,
is testing/eventstream.py).

The signer is built once per sweep from frozen credentials (a botocore session per request cost
25 % of throughput) and re-frozen when refreshable credentials change.
"""

from __future__ import annotations

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


def sagemaker_headers(accept: str = "text/event-stream", inference_component: str | None = None) -> dict[str, str]:
    h = {"Content-Type": "application/json", "X-Amzn-SageMaker-Accept": accept, "Accept": EVENTSTREAM}
    if inference_component:
        h["X-Amzn-SageMaker-Inference-Component"] = inference_component
    return h
