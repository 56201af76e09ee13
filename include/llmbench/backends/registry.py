"""The backend registry: every backend kind, and every wire format, declared once by its own package.

A backend package (llmbench/backends/<kind>/) builds one `BackendSpec` (its target model, its
config section and settings model, its serving kinds, its plan check, its estimate constants, its
DAG limits (DagLimits), what it needs from the platform, its backend class) and calls `register(spec)` when
imported; `llmbench.backends` imports every built-in package. Generic code (config validation,
plan, estimates, the Airflow plugin, the DAG's per-kind groups, the CLI) asks the registry and
never names a kind. The models a kind registers (its target and serving models) are recorded in
llmbench.schemas.kinds, in the schemas layer, so that `ResolvedTarget` can validate a target of any
registered kind without importing a backend.

Wire formats (how a request body is built and a streamed response decoded) register the same way:
`register_wire(WireFormat(...))`; "sse" (OpenAI chat completions) is the default every other
field falls back to.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from llmbench.schemas import kinds as _models
from llmbench.schemas.kinds import BackendTargetBase, ConfigError, ServingBase, Strict, load_builtins, register_serving


@dataclass
class StreamParse:
    """What a streamed response said: its content chunks' arrival times, finish reason, usage."""

    content_ns: list[int]
    finish_reason: str | None
    usage: dict[str, Any] | None
    error_kind: str | None = None
    error_detail: str | None = None
    # Chunks that carried tokens by their cumulative usage (continuous_usage_stats): arrival times
    # and tokens each, empty chunks included (with ignore_eos, vLLM streams the tokens after an
    # end-of-sequence with no content); the last cumulative count; content chunks without usage.
    token_ns: list[int] = field(default_factory=list)
    token_counts: list[int] = field(default_factory=list)
    completion_tokens_seen: int = 0
    content_without_usage: int = 0

    def misshapen(self, what: str, value: Any) -> StreamParse:
        """A chunk that parsed but is not the shape the API defines: the record fails with
        malformed_chunk (never an exception: one bad response is one failed record)."""
        self.error_kind = "malformed_chunk"
        self.error_detail = f"{what} is {type(value).__name__} {json.dumps(value)[:120]}, not the API's shape"
        return self


Chunks = list[tuple[int, bytes]]  # (arrival ns, bytes) as read


@dataclass(frozen=True)
class WireFormat:
    """How requests look and responses come back on one wire. Every None falls back to "sse":
    OpenAI chat completions, streamed as server-sent events."""

    name: str
    # The streamed request's body from (prompt text, system prompt, max tokens, model).
    stream_body: Callable[[str, str | None, int, str], dict[str, Any]] | None = None
    # Response chunks -> (timestamped lines, error kind, error detail): the framing around SSE lines.
    unframe: Callable[[Chunks], tuple[Chunks, str | None, str | None]] | None = None
    # The whole response's chunks -> StreamParse, when the wire is not SSE lines at all.
    parse: Callable[[Chunks], StreamParse] | None = None
    throttled_statuses: frozenset[int] = frozenset()  # HTTP statuses recorded as "throttled"
    # Non-streaming requests (the quality stage): the URL from the streaming one, extra headers,
    # the body from (prompt, max tokens, OpenAI tools or None), and the answer from the JSON reply
    # as (text, [(tool name, arguments JSON)]).
    answer_url: Callable[[str], str] | None = None
    answer_headers: Mapping[str, str] = field(default_factory=dict)
    answer_body: Callable[[str, int, list[dict[str, Any]] | None], dict[str, Any]] | None = None
    answer_parse: Callable[[Any], tuple[str, list[tuple[str, str]]]] | None = None


class Checked(Protocol):
    """The planner's record of one target's checks (planning.checks._Checked)."""

    warnings: list[str]
    checks: list[str]
    tp: int

    def passed(self, what: str, outcome: str = "ok") -> None: ...
    def warned(self, what: str, outcome: str, warning: str) -> None: ...


class PlanContext(Protocol):
    """What the planner hands a backend's plan check: the target as configured (TargetSpec), its
    backend's config section (None: the kind has none), the catalogs, the longest request in
    tokens, the check record, and the planner's shared checks of accelerated hardware."""

    @property
    def where(self) -> str:  # "targets[<id>]", the start of every message
        ...

    @property
    def kind(self) -> str: ...

    target: Any
    settings: Any
    catalogs: dict[str, Any]
    need_tokens: int

    @property
    def out(self) -> Checked: ...

    def check_accelerated(self, platform_check: Callable[[str, Any, str, str], None] | None = None) -> Any:
        """The container image (ContainerImage) after the shared checks of a GPU or Neuron target;
        platform_check(image name, image, host cpu, accelerator arch) runs where a platform adds its own."""
        ...


@dataclass(frozen=True)
class Resolved:
    """A backend's plan check's answer: the region, the backend target, and its price (None on a
    hardware backend: the planner prices the instance type)."""

    region: str
    backend: BackendTargetBase
    price: Any = None  # schemas.targets.Price


class Platform(Protocol):
    """What the platform (Airflow connections, in plugins/llmbench_airflow.py) provides a backend,
    by connection id: the connection's password and extras, and a cloud SDK session built from it
    for a region and a service, with the service's endpoint override if the connection sets one.
    Nothing here names a cloud: the platform builds the session by the connection's type (an AWS
    connection gives a boto3 session through the amazon provider's hook)."""

    def session(self, conn_id: str, region: str, service: str) -> Any: ...
    def endpoint_url(self, conn_id: str, region: str, service: str) -> str | None: ...
    def extra(self, conn_id: str) -> dict[str, Any]: ...
    def password(self, conn_id: str) -> str | None: ...


@dataclass(frozen=True)
class Janitor:
    """A kind that can leave something behind (an endpoint, an instance) when a worker dies: the
    janitor DAG calls sweep(platform, conn_id, region) for each region, which removes what this kind
    tagged managed-by=llmbench and whose llmbench:expires-at has passed, and returns what it removed
    ({"kind", "name" or "id", "tags"} each)."""

    sweep: Callable[[Platform, str, str], list[dict[str, Any]]]


# (platform, connection id, region, the catalog's instance types) -> {instance_type: usd_per_hour}
PriceRefresh = Callable[[Platform, str, str, list[str]], dict[str, float]]


@dataclass(frozen=True)
class PriceList:
    """A kind with a price list of its own. listed(region, instance_type): the cached price as
    (usd_per_hour, source, date), or None (plan then prices from the catalog); refresh(platform,
    conn_id, region, catalog instance types): fetch the prices of the types that are the kind's into
    that cache (the prices DAG, daily), returning {instance_type: usd_per_hour}; None: nothing
    refreshes it."""

    listed: Callable[[str, str], tuple[float, str, str] | None]
    refresh: PriceRefresh | None = None


@dataclass(frozen=True)
class DagLimits:
    """The DAG's limits on a kind's task group (not the capacity search, loadgen.capacity, nor a
    backend's quota, Backend.quota_busy): its pool (None: none), whether the pool
    holds every task of a target ("target": one target at a time on a shared machine) or only its
    deploy ("deploy": a quota check and the create after it are atomic), and the seconds between a
    waiting deploy's and a waiting readiness check's looks (None: a plain task that does not wait)."""

    pool: str | None = None
    pool_scope: Literal["deploy", "target"] = "deploy"
    deploy_poke_s: int | None = None
    ready_poke_s: int | None = None


@dataclass(frozen=True)
class BackendSpec:
    """One backend kind, as its package declares it. Beyond what every kind has (its backend class,
    target model, serving kinds and plan check), its capabilities are optional, each None when the
    kind has none: platform credentials (platform_kwargs), a janitor (janitor), a price list of its
    own (prices), an existing endpoint to attach to (existing_endpoint), vLLM launch flags
    (vllm_launch). Generic code asks for a capability and never names a kind."""

    kind: str
    backend: str  # "module:Class" of its llmbench.backends.base.Backend, imported when one is made
    target: type[BackendTargetBase]  # what plan resolves (ResolvedTarget.backend)
    serving: tuple[str, ...]  # the serving kinds it runs
    plan: Callable[[PlanContext], Resolved]  # its plan-time checks
    settings: type[BaseModel] | None = None  # its config section's model
    section: str | None = None  # its config section's key (default: the kind, when it has settings)
    section_needs: str = ""  # what the section holds, for the error when it is missing
    hardware: bool = False  # runs on a catalog instance type: instance_type and precision required
    instance_label: str = "external"  # the instance_type of a target that names none
    deploy_overhead_min: float = 0.0  # estimate: minutes to create and delete its endpoint
    default_containers: Mapping[str, str] = field(default_factory=dict)  # serving kind -> catalog image
    pins_revision: tuple[str, ...] = ()  # serving kinds told to load the catalog's hf_revision
    scales_to_zero: bool = False  # its autoscaling can run 0 instances (the traffic cost model)
    dag_limits: DagLimits = DagLimits()
    # Platform credentials: the kwargs its backend class takes from the platform (None: none).
    platform_kwargs: Callable[[BackendTargetBase, Platform], dict[str, Any]] | None = None
    # What removes its expired leftovers (None: nothing of it can leak).
    janitor: Janitor | None = None
    # A price list of its own, which plan prefers to the catalog's (None: the catalog's).
    prices: PriceList | None = None
    # The instance type that is the same hardware run unmanaged (on whichever kind offers it), for
    # one of ours, so a row can show what the managed path adds (results.tables); None: none.
    unmanaged_twin: Callable[[str], str | None] | None = None
    # An Endpoint for an endpoint of this kind that already exists (the CLI's `sweep --backend`),
    # from (name, region, runtime URL override); nothing is deployed or deleted.
    existing_endpoint: Callable[[str, str, str | None], Any] | None = None
    # The `vllm serve` flags a resolved target of this kind gives vLLM and the vLLM version of the
    # container that would run them (None: unknown), for vLLM's own parser (backends.vllmargs);
    # None from the hook, or no hook: the target launches no vLLM.
    vllm_launch: Callable[[Any], tuple[list[str], str | None] | None] | None = None

    @property
    def section_key(self) -> str | None:
        return (self.section or self.kind) if self.settings is not None else None


_SPECS: dict[str, BackendSpec] = {}
_WIRES: dict[str, WireFormat] = {"sse": WireFormat("sse")}


def register(spec: BackendSpec, *servings: type[ServingBase]) -> BackendSpec:
    """Add a backend kind (and the serving models only it runs). Registering a kind twice with
    another spec is an error: two packages claiming one kind."""
    old = _SPECS.get(spec.kind)
    if old is not None and old != spec:
        raise ValueError(f"backend kind {spec.kind!r} is registered already")
    _SPECS[spec.kind] = spec
    _models.register_target(spec.kind, spec.target)
    for model in servings:
        register_serving(model)
    return spec


@dataclass(frozen=True)
class ResolvedImage:
    """One AWS deep learning container's image in one region: the URI deployed, how it was found
    (the plan prints it), what the image tables answer for the framework and version (None: they
    list no such version), and a warning where the catalog's pin was kept over, or without, that
    answer."""

    uri: str
    how: str
    sdk_uri: str | None
    warning: str | None = None


# (framework, version, region, pin, pin_reason) -> ResolvedImage; raises ConfigError. The package
# whose SDK ships AWS's container tables registers it when imported (register_image_resolver).
ImageResolver = Callable[[str, str, str, "str | None", "str | None"], ResolvedImage]
_IMAGE_RESOLVER: list[ImageResolver] = []


def register_image_resolver(fn: ImageResolver) -> ImageResolver:
    _IMAGE_RESOLVER[:] = [fn]
    return fn


def resolve_image(framework: str, version: str, region: str, pin: str | None, pin_reason: str | None) -> ResolvedImage:
    """An AWS deep learning container's image in a region, from the registered resolver."""
    load_builtins()
    if not _IMAGE_RESOLVER:
        raise ConfigError(f"container {framework} {version}: no image resolver is registered")
    return _IMAGE_RESOLVER[0](framework, version, region, pin, pin_reason)


def register_wire(wire: WireFormat) -> WireFormat:
    _WIRES[wire.name] = wire
    return wire


def kinds() -> tuple[str, ...]:
    """Every registered backend kind, in registration order."""
    load_builtins()
    return tuple(_SPECS)


def specs() -> tuple[BackendSpec, ...]:
    load_builtins()
    return tuple(_SPECS.values())


def janitors() -> tuple[Janitor, ...]:
    """What the janitor DAG runs: the Janitor of every kind that can leave something behind."""
    return tuple(s.janitor for s in specs() if s.janitor is not None)


def price_refreshers() -> dict[str, PriceRefresh]:
    """What the prices DAG runs: {kind: its PriceList.refresh} for every kind whose list has one."""
    return {s.kind: s.prices.refresh for s in specs() if s.prices is not None and s.prices.refresh is not None}


def get(kind: str) -> BackendSpec:
    """The spec of a kind; a kind nobody registered is a one-line error naming the known ones."""
    if kind not in _SPECS:
        load_builtins()
    if kind not in _SPECS:
        raise ValueError(f"backend: unknown {kind!r}; allowed: {list(_SPECS)}")
    return _SPECS[kind]


def wire(name: str) -> WireFormat:
    if name not in _WIRES:
        load_builtins()
    if name not in _WIRES:
        raise ValueError(f"wire: unknown {name!r}; allowed: {sorted(_WIRES)}")
    return _WIRES[name]


def wires() -> tuple[str, ...]:
    load_builtins()
    return tuple(_WIRES)


__all__ = [
    "BackendSpec",
    "BackendTargetBase",
    "Checked",
    "ConfigError",
    "DagLimits",
    "ImageResolver",
    "Janitor",
    "PriceRefresh",
    "PlanContext",
    "Platform",
    "PriceList",
    "Resolved",
    "ResolvedImage",
    "ServingBase",
    "StreamParse",
    "Strict",
    "WireFormat",
    "get",
    "janitors",
    "kinds",
    "price_refreshers",
    "register",
    "register_image_resolver",
    "register_serving",
    "register_wire",
    "resolve_image",
    "specs",
    "wire",
    "wires",
]
