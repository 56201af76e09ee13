"""An existing OpenAI-compatible server (vLLM on a machine of yours, a gateway, any /v1 URL):
nothing to deploy or tear down. Its API key, if any, comes from the platform (the DAG reads it
from an Airflow connection) and is never part of the handle that travels through XCom."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from llmbench.backends import servermetrics
from llmbench.backends.base import DeployError, Endpoint, EngineVersion, Handle, Readiness, Teardown, poll_until_ready
from llmbench.backends.openai.models import OpenAITarget
from llmbench.redaction import add_secret
from llmbench.schemas.targets import ResolvedTarget

# What no HTTP header value may hold (CR and LF would start another header).
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class OpenAIBackend:
    kind = "openai"
    cost_basis: Literal["per_hour", "per_token"] = "per_hour"  # the $/hour the config states
    creates_endpoint = False  # it runs before and after: no cold start of ours to time
    READY_TIMEOUT_S = 300.0

    def __init__(self, api_key: str | None = None, api_key_conn_id: str | None = None):
        # Masked in every error text, event and alert from now on (redaction.redact), and refused
        # here if it cannot be a header: urllib's "Invalid header value" error quotes it whole.
        add_secret(api_key)
        if api_key and _CONTROL.search(api_key):
            where = f"connection {api_key_conn_id!r}" if api_key_conn_id else "the API key"
            raise DeployError(
                f"{where}: the API key holds a control character (a newline pasted with it?); store it again without"
            )
        self.api_key = api_key

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def quota_busy(self, target: ResolvedTarget) -> str | None:
        return None

    def ready_timeout_s(self, target: ResolvedTarget) -> float:
        return self.READY_TIMEOUT_S

    def deploy(self, target: ResolvedTarget, work_dir: Path) -> Handle:
        if not isinstance(target.backend, OpenAITarget):
            raise DeployError(f"target {target.target_id} is not an openai target")
        return self.attach(target.backend.base_url, target.backend.model_name, target.backend.keep_alive)

    def attach(self, base_url: str, model_name: str = "default", keep_alive: bool = True) -> Handle:
        """The handle of an endpoint that already runs (the CLI's openai sweep calls this)."""
        return {
            "backend": self.kind,
            "base_url": base_url.rstrip("/"),
            "model": model_name,
            "keep_alive": keep_alive,
            "deployed_at": datetime.now(UTC).isoformat(),
        }

    def status(self, handle: Handle, timeout_s: float = 5.0) -> Readiness:
        try:  # timeout_s in all, however slowly it answers (a wall-clock deadline); the key follows a
            # redirect only to the same origin (servermetrics.fetch)
            body = servermetrics.fetch(handle["base_url"] + "/models", self._headers(), timeout_s=timeout_s)
        except OSError as e:
            return Readiness("pending", str(e))
        # Ready means an OpenAI model list, not any 200: a proxy's or a login page's HTML is not a server.
        try:
            models = json.loads(body)
        except ValueError:
            models = None
        if not isinstance(models, dict) or not isinstance(models.get("data"), list):
            return Readiness("pending", f"{handle['base_url']}/models answered without an OpenAI model list")
        return Readiness("ready")

    def wait_ready(self, handle: Handle, timeout_s: float) -> None:
        poll_until_ready(
            lambda remaining_s: self.status(handle, min(5.0, remaining_s)),
            timeout_s,
            1.0,
            lambda last: f"{handle['base_url']}/models not ready within {timeout_s}s: {last}",
        )

    def endpoint(self, handle: Handle) -> Endpoint:
        return Endpoint(
            url=handle["base_url"] + "/chat/completions",
            model=handle.get("model", "default"),
            headers=self._headers(),
            keep_alive=handle.get("keep_alive", True),
            metrics_url=servermetrics.server_root(handle["base_url"]) + "/metrics",  # vLLM's Prometheus page
        )

    def engine_version(self, handle: Handle) -> EngineVersion:
        """vLLM's GET /version beside /v1; None from a server that is not vLLM."""
        root = servermetrics.server_root(handle["base_url"])
        return EngineVersion(*servermetrics.vllm_version(root, self._headers()))

    def teardown(self, handle: Handle) -> Teardown:
        return Teardown(deleted_at=None, endpoint_seconds=None)  # nothing was deployed

    def janitor(self, region: str, now: datetime | None = None) -> list[dict[str, Any]]:
        return []
