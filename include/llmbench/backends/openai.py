"""An existing OpenAI-compatible server (vLLM on EC2, any /v1 URL): nothing to deploy."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import urllib.request

from llmbench.backends.base import DeployError
from llmbench.loadgen import Endpoint


class OpenAIBackend:
    name = "openai"

    def deploy(self, target: dict[str, Any], work_dir: Path) -> dict[str, Any]:
        url = target["serving"]["url"].rstrip("/")
        return {"backend": self.name, "base_url": url, "model": target["serving"].get("model", "default")}

    def wait_ready(self, handle: dict[str, Any], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        last = ""
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(handle["base_url"] + "/models", timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError as e:
                last = str(e)
            time.sleep(1)
        raise DeployError(f"{handle['base_url']}/models not ready within {timeout_s}s: {last}")

    def endpoint(self, handle: dict[str, Any]) -> Endpoint:
        return Endpoint(url=handle["base_url"] + "/chat/completions", model=handle.get("model", "default"))

    def teardown(self, handle: dict[str, Any]) -> dict[str, Any]:
        return {"deleted_at": None, "endpoint_seconds": None}
