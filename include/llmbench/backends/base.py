"""The backend contract. A handle is a small JSON-able dict: it travels through XCom between the
deploy, sweep and teardown tasks, which may run in different processes."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from llmbench.loadgen import Endpoint


class DeployError(RuntimeError):
    """Deploy or readiness failed. Whatever the deploy created has been removed already."""


class Backend(Protocol):
    name: str

    def deploy(self, target: dict[str, Any], work_dir: Path) -> dict[str, Any]:
        """Create the endpoint; return its handle. On failure, remove what was created, then raise."""

    def wait_ready(self, handle: dict[str, Any], timeout_s: float) -> None:
        """Block until the endpoint serves requests; raise DeployError on failure or timeout."""

    def endpoint(self, handle: dict[str, Any]) -> Endpoint:
        """Where the load generator sends requests."""

    def teardown(self, handle: dict[str, Any]) -> dict[str, Any]:
        """Delete everything deploy created and wait until it is gone. Tolerates 'already gone'.
        Returns {"deleted_at": iso, "endpoint_seconds": float}."""
