"""The backend contract: what every way of serving a model implements (deploy, readiness, status,
capacity, the endpoint to drive, teardown, janitor, and how its cost accrues), and `Endpoint`,
where the load generator sends requests. A handle is a small JSON-able dict owned by its backend:
it travels through XCom between the deploy, sweep and teardown tasks, which may run in different
processes."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from llmbench.errors import LlmbenchError

if TYPE_CHECKING:
    from llmbench.schemas.targets import ResolvedTarget


@dataclass(frozen=True)
class Endpoint:
    """Where to send chat completions, and how the response comes back.

    wire: "sse" (OpenAI chat completions over HTTP) or a wire a backend registered
    (llmbench.backends.registry.WireFormat: its request body and its response framing). signer: an
    object whose .sign(url, body, headers) returns signed headers (SigV4 for an AWS runtime), or None.
    """

    url: str
    model: str = "default"
    headers: dict[str, str] = field(default_factory=dict)
    wire: str = "sse"
    signer: Any = field(default=None, compare=False)
    # False: a fresh connection per request (`Connection: close`; the local backend's llama-server
    # closes reused keep-alive connections). True: each worker keeps its connection (an OpenAI
    # server, vLLM on an instance of ours, managed HTTPS endpoints: a connection, or a TLS handshake, per request
    # would cost time between requests); a send on a connection the server had closed, before any
    # response byte, is sent again once on a fresh one, and that worker stops asking to keep it.
    keep_alive: bool = False
    # The server's Prometheus page (vLLM: <root>/metrics), read before and after each level for its
    # speculative-decoding counters (servermetrics); None where the backend cannot reach one, with
    # the reason in metrics_note (a managed runtime invokes a model, not a server).
    metrics_url: str | None = None
    metrics_note: str | None = None
    # Whose tokenize API the server answers, where the backend knows its engine (loadgen.tokenizer):
    # "llama-server" (POST /apply-template and /tokenize {content}) or "vllm" (POST /tokenize
    # {model, messages | prompt}); None: unknown, llama-server's is tried, then vLLM's if absent.
    tokenize_api: str | None = None


class DeployError(LlmbenchError, RuntimeError):
    """Deploy or readiness failed. Whatever the deploy created has been removed already."""


@dataclass(frozen=True)
class Readiness:
    """One look at a deployed endpoint: "ready", "pending" (still starting) or "failed"."""

    state: Literal["ready", "pending", "failed"]
    detail: str | None = None


def poll_until_ready(
    look: Callable[[float], Readiness], timeout_s: float, poll_s: float, not_ready: Callable[[str], str]
) -> None:
    """Look until ready, every poll_s: DeployError at once when a look says failed, or after
    timeout_s with not_ready(the last look's detail) as its message. look(remaining_s) may bound
    its own wait by the time left. Every backend's blocking wait_ready is this loop."""
    deadline = time.monotonic() + timeout_s
    last = "no look yet"
    while (remaining_s := deadline - time.monotonic()) > 0:
        r = look(remaining_s)
        if r.state == "ready":
            return
        if r.state == "failed":
            raise DeployError(r.detail or "failed")
        last = r.detail or r.state
        time.sleep(max(0.0, min(poll_s, deadline - time.monotonic())))
    raise DeployError(not_ready(last))


@dataclass(frozen=True)
class EngineVersion:
    """The serving engine's version as the server reports it (vLLM: GET /version; llama-server:
    GET /props `build_info`), read once after it is ready, best effort: version None when it did
    not say, and `source` says what was asked (or why nothing could be)."""

    version: str | None
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"engine_version": self.version, "engine_version_source": self.source}


@dataclass(frozen=True)
class Teardown:
    """What tearing a target down found: when it was gone, and how long it had existed (the
    endpoint-seconds a per-hour price is charged for; None where nothing was deployed)."""

    deleted_at: str | None
    endpoint_seconds: float | None

    def to_json(self) -> dict[str, Any]:
        return {"deleted_at": self.deleted_at, "endpoint_seconds": self.endpoint_seconds}


# Tags on every cloud resource a backend creates: the janitor finds what a killed worker left
# behind by managed-by, and removes it once its expiry has passed.
MANAGED_BY = ("managed-by", "llmbench")
TAG_RUN_KEY = "llmbench:run-key"
TAG_TARGET = "llmbench:target-id"
TAG_EXPIRES = "llmbench:expires-at"
TAG_INSTANCE = "llmbench:instance-type"  # what a per-instance-type quota counts


Handle = dict[str, Any]  # JSON-able, owned by the backend that made it; travels through XCom


def seconds_since(iso: str) -> float:
    return (datetime.now(UTC) - datetime.fromisoformat(iso)).total_seconds()


def torn_down(deployed_at: str | None) -> Teardown:
    """The Teardown of an endpoint deleted now, deployed at `deployed_at` (None: never deployed)."""
    now = datetime.now(UTC)
    seconds = (now - datetime.fromisoformat(deployed_at)).total_seconds() if deployed_at else None
    return Teardown(deleted_at=now.isoformat(), endpoint_seconds=seconds)


class Backend(Protocol):
    """Every backend implements all of it; pipeline.py calls nothing else.

    kind: the backend's name in configs and in the warehouse's `backend` column.
    cost_basis: how its cost accrues: "per_hour" (an endpoint's $/hour x endpoint-seconds) or
      "per_token" (a per-token API: $/M input and output tokens).
    creates_endpoint: True when deploy creates what serves (a cold start: targets.time_to_ready_s);
      False when it only attaches to something that already runs (an endpoint you run, a per-token API).
    """

    kind: str
    cost_basis: Literal["per_hour", "per_token"]
    creates_endpoint: bool

    def quota_busy(self, target: ResolvedTarget) -> str | None:
        """None when a deploy may start now; else why not yet (a quota in use). Callers serialise
        the check and the deploy that follows it, so two targets cannot take the last unit."""

    def deploy(self, target: ResolvedTarget, work_dir: Path) -> Handle:
        """Create the endpoint; return its handle. On failure, remove what was created, then raise."""

    def ready_timeout_s(self, target: ResolvedTarget) -> float:
        """How long the endpoint may take to become ready (the config's, or the backend's default)."""

    def wait_ready(self, handle: Handle, timeout_s: float) -> None:
        """Block until the endpoint serves requests; raise DeployError on failure or timeout."""

    def status(self, handle: Handle) -> Readiness:
        """One look, for a waiting task that gives its worker slot back between looks."""

    def endpoint(self, handle: Handle) -> Endpoint:
        """Where the load generator sends requests (with the credentials to sign or authorise)."""

    def engine_version(self, handle: Handle) -> EngineVersion:
        """The engine's version as the ready server reports it; best effort, never raises."""

    def teardown(self, handle: Handle) -> Teardown:
        """Delete everything deploy created and wait until it is gone. Tolerates 'already gone'."""

    def janitor(self, region: str, now: datetime | None = None) -> list[dict[str, Any]]:
        """Delete what killed runs left behind and whose expiry has passed; [] where nothing can leak."""
