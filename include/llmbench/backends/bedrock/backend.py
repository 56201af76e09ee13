"""Amazon Bedrock, a per-token API: nothing is deployed or torn down; requests go to the Bedrock
runtime's ConverseStream, SigV4-signed (service name `bedrock`), and come back as AWS event-stream
frames of JSON events (decoded off the hot path by llmbench.backends.bedrock.wire.decode_converse).

  POST {runtime}/model/{model id, URL-encoded}/converse-stream

The library takes a boto3 Session (the DAG builds it from the target's Airflow AWS connection,
bedrock.aws_conn_id); without one, the standard credential chain. Credentials are frozen into the
signer (awsstream.SigV4Signer), which pickles into load-generator processes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from llmbench.backends.awsstream import EVENTSTREAM, SigV4Signer
from llmbench.backends.base import DeployError, Endpoint, EngineVersion, Handle, Readiness, Teardown
from llmbench.backends.bedrock.models import BedrockTarget
from llmbench.schemas.targets import ResolvedTarget

SIGNING_SERVICE = "bedrock"  # the SigV4 scope of bedrock-runtime's data plane


def converse_stream_url(region: str, model_id: str, base: str | None = None) -> str:
    """The ConverseStream URL of a model. The model id (with its `:` and any `/` of an ARN) is
    one path segment, percent-encoded; the signer signs exactly this URL (SigV4 canonicalises
    it by encoding it once more, as botocore's own client does)."""
    host = (base or f"https://bedrock-runtime.{region}.amazonaws.com").rstrip("/")
    return f"{host}/model/{quote(model_id, safe='')}/converse-stream"


def bedrock_headers() -> dict[str, str]:
    return {"Content-Type": "application/json", "Accept": EVENTSTREAM}


class BedrockBackend:
    kind = "bedrock"
    cost_basis: Literal["per_hour", "per_token"] = "per_token"  # $/M input and output tokens
    creates_endpoint = False  # a managed API: nothing of ours starts cold
    READY_TIMEOUT_S = 0.0  # nothing to wait for

    def __init__(self, session: Any = None):
        self.session = session  # boto3.Session; default: the standard credential chain

    def quota_busy(self, target: ResolvedTarget) -> str | None:
        return None  # no instance quota; a rate quota shows as throttled records instead

    def ready_timeout_s(self, target: ResolvedTarget) -> float:
        return self.READY_TIMEOUT_S

    def deploy(self, target: ResolvedTarget, work_dir: Path | None = None) -> Handle:
        if not isinstance(target.backend, BedrockTarget):
            raise DeployError(f"target {target.target_id} is not a bedrock target ({target.backend.kind})")
        settings = target.backend.settings
        return self.attach(settings.region, target.backend.model_id, settings.runtime_url)

    def attach(self, region: str, model_id: str, runtime_url: str | None = None) -> Handle:
        """The handle of a model: what deploy returns, without a target (the CLI, tests)."""
        return {
            "backend": self.kind,
            "region": region,
            "model_id": model_id,
            "runtime_url": runtime_url,
            "deployed_at": datetime.now(UTC).isoformat(),
        }

    def status(self, handle: Handle) -> Readiness:
        # A managed API is always there; whether this account may call this model shows in the
        # warm-up requests (403 / 400 records), which fail the sweep if every one fails.
        return Readiness("ready")

    def wait_ready(self, handle: Handle, timeout_s: float) -> None:
        return None

    def endpoint(self, handle: Handle) -> Endpoint:
        region = handle["region"]
        if self.session is None:
            import boto3

            self.session = boto3.Session(region_name=region)
        return Endpoint(
            url=converse_stream_url(region, handle["model_id"], handle.get("runtime_url")),
            model=handle["model_id"],
            headers=bedrock_headers(),
            wire="bedrock",
            signer=SigV4Signer(self.session.get_credentials(), region, SIGNING_SERVICE),
            # one TLS connection per stream, kept: a handshake per request would be measured as TTFT
            keep_alive=True,
            metrics_note="Bedrock is a per-token API: no server metrics",
        )

    def engine_version(self, handle: Handle) -> EngineVersion:
        return EngineVersion(None, "Bedrock is a per-token API: its engine is not disclosed")

    def teardown(self, handle: Handle) -> Teardown:
        return Teardown(deleted_at=None, endpoint_seconds=None)  # nothing was deployed

    def janitor(self, region: str, now: datetime | None = None) -> list[dict[str, Any]]:
        return []  # nothing is created, so nothing can leak
