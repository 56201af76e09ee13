"""The sagemaker wire: InvokeEndpointWithResponseStream, a POST to
  https://runtime.sagemaker.{region}.amazonaws.com/endpoints/{name}/invocations-response-stream
signed with SigV4 (service name `sagemaker`), with an OpenAI chat body. The response is AWS
event-stream frames whose PayloadPart payloads are the model server's own bytes (OpenAI SSE, or
LMI/TGI JSON lines); the quality stage's non-streaming requests go to /invocations.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from llmbench.backends import registry
from llmbench.backends.awsstream import EVENTSTREAM, eventstream_payloads
from llmbench.backends.registry import WireFormat

SIGNING_SERVICE = "sagemaker"  # the SigV4 scope of the runtime's data plane


def runtime_url(region: str, endpoint_name: str, base: str | None = None) -> str:
    host = (base or f"https://runtime.sagemaker.{region}.amazonaws.com").rstrip("/")
    return f"{host}/endpoints/{quote(endpoint_name, safe='')}/invocations-response-stream"


def sagemaker_headers(accept: str = "text/event-stream", inference_component: str | None = None) -> dict[str, str]:
    h = {"Content-Type": "application/json", "X-Amzn-SageMaker-Accept": accept, "Accept": EVENTSTREAM}
    if inference_component:
        h["X-Amzn-SageMaker-Inference-Component"] = inference_component
    return h


WIRE = registry.register_wire(
    WireFormat(
        name="sagemaker",
        unframe=eventstream_payloads,
        answer_url=lambda url: re.sub(r"/invocations-response-stream$", "/invocations", url),
        answer_headers={"X-Amzn-SageMaker-Accept": "application/json"},
    )
)
