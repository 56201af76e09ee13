"""The typed shape of a run, from config to warehouse.

Config sections (what a config file says), and what plan() resolves them into: a `ResolvedTarget`
per target, carrying its workload, serving, price and backend settings. A target travels between
Airflow tasks as JSON (XCom); each task validates it back into `ResolvedTarget` once, at its top.
Backend-specific settings live in the backend's own models (in its package, llmbench.backends.<kind>,
registered through llmbench.backends.registry and validated by `kind`: llmbench.schemas.kinds), so
generic code never reads them by name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SerializeAsAny, StrictInt, WrapValidator, model_validator

from llmbench import paths
from llmbench.schemas import kinds
from llmbench.schemas.capacity import CapacitySearch
from llmbench.schemas.dataset import DatasetSummary
from llmbench.schemas.kinds import BackendTargetBase, ServingBase
from llmbench.schemas.kinds import Strict as _Strict
from llmbench.schemas.slo import Slo
from llmbench.schemas.traffic import TrafficProfile
from llmbench.schemas.workload import Workload


class ValidationSettings(_Strict):
    max_error_rate: float = Field(0.05, ge=0, le=1)


QualitySuite = Literal["tool_call", "exact"]  # the fixed suites shipped in llmbench.quality.suites
# Generated suites (seeded: the same seed and size give the same items) and a user's JSONL file.
SuiteKind = Literal["tool_call", "exact", "arithmetic", "units", "tool_call_generated", "jsonl"]


class SuiteSpec(_Strict):
    """One suite of the quality stage: a fixed one (tool_call, exact), a generated one of any
    size (arithmetic, units, tool_call_generated; `seed` makes it reproducible), or a JSONL file
    of the user's (`path`; one object a line: `prompt` with `answer`, or with `tool_call`:
    {ids, filter})."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,39}$")
    kind: SuiteKind
    size: int = Field(100, ge=1, le=100_000)  # generated suites only
    seed: int = 0
    max_operand: int = Field(9, ge=1, le=10**9)  # arithmetic: operands in 0..max_operand
    path: str | None = None  # jsonl: the file (relative paths: from the working directory)
    max_tokens: int | None = Field(None, ge=8, le=32_768)  # this suite's answer budget (default: the section's)

    @model_validator(mode="after")
    def _path(self) -> SuiteSpec:
        if (self.kind == "jsonl") != (self.path is not None):
            raise ValueError(f"quality suite {self.name!r}: `path` is for kind jsonl, and kind jsonl needs one")
        return self


def _suite_spec(v: Any) -> Any:
    return {"name": v, "kind": v} if isinstance(v, str) else v  # "exact" is {name: exact, kind: exact}


class QualitySettings(_Strict):
    """The correctness stage (llmbench.quality): its suites, each sent `runs` times per target
    after warm-up, outside the timed levels, at most `concurrency` requests at a time. The gate
    (llmbench.results.validation.validate_quality) fails a target whose `grade_on` score
    (flexible unless set to strict) on a suite is below `min_score` (one number for every suite,
    or one per suite), or more than `max_drop_vs_baseline` (a fraction: 0.02 is two points)
    below the `baseline` target's score on the same items."""

    suites: list[Annotated[SuiteSpec, WrapValidator(lambda v, h: h(_suite_spec(v)))]] = Field(min_length=1)
    runs: int = Field(3, ge=1, le=20)
    min_score: float | dict[str, float] = 0.0
    grade_on: Literal["flexible", "strict"] = "flexible"
    baseline: str | None = None  # a target id of the same config
    max_drop_vs_baseline: float | None = Field(None, ge=0, le=1)
    max_tokens: int = Field(96, ge=8, le=32_768)  # per answer unless a suite sets its own; a tool call needs ~40
    request_timeout_s: float = Field(120, gt=0)
    concurrency: int = Field(4, ge=1, le=64)  # quality requests in flight at once, per target
    temperature: float = Field(0.0, ge=0, le=5)  # greedy by default: repeats agree
    # Sent as the OpenAI body's chat_template_kwargs (llama-server with --jinja, vLLM): e.g.
    # {enable_thinking: false} turns a Qwen3-class model's thinking off.
    chat_template_kwargs: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> QualitySettings:
        names = [s.name for s in self.suites]
        if len(set(names)) != len(names):
            raise ValueError(
                f"quality.suites: duplicate suite names {sorted({n for n in names if names.count(n) > 1})}"
            )
        scores = self.min_score.values() if isinstance(self.min_score, dict) else [self.min_score]
        if any(not 0 <= v <= 1 for v in scores):
            raise ValueError("quality.min_score: scores are fractions in [0, 1]")
        if isinstance(self.min_score, dict) and set(self.min_score) - set(names):
            extra = sorted(set(self.min_score) - set(names))
            raise ValueError(f"quality.min_score names suites not in quality.suites: {extra}")
        if (self.baseline is None) != (self.max_drop_vs_baseline is None):
            raise ValueError("quality.baseline and quality.max_drop_vs_baseline go together")
        return self

    @property
    def suite_names(self) -> list[str]:
        return [s.name for s in self.suites]

    def min_score_of(self, suite: str) -> float:
        return self.min_score.get(suite, 0.0) if isinstance(self.min_score, dict) else self.min_score

    def max_tokens_of(self, suite: SuiteSpec) -> int:
        return suite.max_tokens or self.max_tokens


class QualityOverride(_Strict):
    """A target's own changes to the config's quality section: its baseline (the fp16 target of
    an int4 one, say), or how it is asked (a degraded temperature, thinking off)."""

    baseline: str | None = None
    max_drop_vs_baseline: float | None = Field(None, ge=0, le=1)
    temperature: float | None = Field(None, ge=0, le=5)
    chat_template_kwargs: dict[str, Any] | None = None

    def applied_to(self, q: QualitySettings) -> QualitySettings:
        return QualitySettings.model_validate({**q.model_dump(), **self.model_dump(exclude_none=True)})


class ResultsSettings(_Strict):
    """Where a run's raw results, tables and report go (llmbench.store): `uri` a folder or
    s3://bucket/prefix (None: LLMBENCH_RESULTS_URI, else the data folder); `conn_id` the Airflow
    AWS connection the DAG reaches an object store through (the CLI: the standard AWS environment)."""

    uri: str | None = None
    conn_id: str = "aws_default"


class Budget(_Strict):
    """What a run may cost before a person must approve it (the DAG's budget gate): plan's
    estimate (RunPlan.estimated_usd) above max_usd waits for an approval; at or under it, none."""

    max_usd: float = Field(gt=0)


class WarehouseSettings(_Strict):
    kind: Literal["duckdb", "postgres", "redshift"] = "duckdb"
    path: str | None = None  # duckdb: default <data folder>/warehouse.duckdb
    conn_id: str = "llmbench_warehouse"  # postgres / redshift: the Airflow connection to publish through


class VllmServing(ServingBase):
    """vLLM's OpenAI server, in a container of the catalog: each backend that runs it turns these
    knobs into what its container reads (environment variables, or `vllm serve` flags)."""

    kind: Literal["vllm"] = "vllm"
    container: str | None = None  # catalog container; default: the backend's (BackendSpec.default_containers)
    tensor_parallel_size: StrictInt = Field(1, ge=1)
    dtype: str = "auto"
    quantization: str | None = None  # e.g. fp8; precision decides it when unset
    max_model_len: StrictInt = Field(4096, ge=256)
    enable_prefix_caching: bool = False
    enable_chunked_prefill: bool = False
    max_num_seqs: StrictInt = Field(64, ge=1)
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)
    speculative_config: dict[str, Any] | None = None  # e.g. EAGLE3: {"method": "eagle3", "model": ..., ...}
    extra_env: dict[str, str] = Field(default_factory=dict)
    # Further `vllm serve` flags, as given, where the backend runs the command line itself, e.g.
    # ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"].
    extra_args: list[str] = Field(default_factory=list)


class NeuronServing(ServingBase):
    """vLLM on AWS Neuron (Inferentia2 / Trainium) from a Neuron deep learning container: the
    model is compiled for fixed shapes and split over `tensor_parallel_size` NeuronCores."""

    kind: Literal["neuron"] = "neuron"
    container: str = "neuron-vllm-0.9"
    tensor_parallel_size: StrictInt = Field(1, ge=1)
    max_model_len: StrictInt = Field(4096, ge=128)
    max_num_seqs: StrictInt = Field(8, ge=1)
    extra_args: list[str] = Field(default_factory=list)
    extra_env: dict[str, str] = Field(default_factory=dict)


class LmiServing(ServingBase):
    """DJL LMI (v20, async mode): knobs become OPTION_* environment variables."""

    kind: Literal["lmi"] = "lmi"
    container: str = "djl-lmi-v20"
    tensor_parallel_degree: StrictInt = Field(1, ge=1)
    dtype: str = "bf16"
    max_model_len: StrictInt = Field(4096, ge=256)
    max_rolling_batch_size: StrictInt = Field(64, ge=1)
    enable_prefix_caching: bool = False
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)
    extra_env: dict[str, str] = Field(default_factory=dict)


for _shared in (VllmServing, LmiServing, NeuronServing):  # serving kinds more than one backend runs
    kinds.register_serving(_shared)

# Any serving model a backend package registered, validated by its `kind` (registry).
Serving = Annotated[SerializeAsAny[ServingBase], WrapValidator(kinds.validate_serving)]
# What plan resolved a target's backend into: the model its kind registered (registry).
BackendTarget = Annotated[SerializeAsAny[BackendTargetBase], WrapValidator(kinds.validate_target)]

# Every region AWS's container image tables (the registered image resolver's) serve for a catalog
# container's framework: a unit test holds the two equal (tests/unit/backends/test_images.py).
# Whether one image is served in a region is plan's check of the target, not this list's.
KNOWN_REGIONS = frozenset(
    {
        "af-south-1",
        "ap-east-1",
        "ap-east-2",
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-northeast-3",
        "ap-south-1",
        "ap-south-2",
        "ap-southeast-1",
        "ap-southeast-2",
        "ap-southeast-3",
        "ap-southeast-4",
        "ap-southeast-5",
        "ap-southeast-6",
        "ap-southeast-7",
        "ca-central-1",
        "ca-west-1",
        "cn-north-1",
        "cn-northwest-1",
        "eu-central-1",
        "eu-central-2",
        "eu-isoe-west-1",
        "eu-north-1",
        "eu-south-1",
        "eu-south-2",
        "eu-west-1",
        "eu-west-2",
        "eu-west-3",
        "eusc-de-east-1",
        "il-central-1",
        "me-central-1",
        "me-south-1",
        "me-west-1",
        "mx-central-1",
        "sa-east-1",
        "us-east-1",
        "us-east-2",
        "us-gov-east-1",
        "us-gov-west-1",
        "us-iso-east-1",
        "us-isob-east-1",
        "us-isof-east-1",
        "us-isof-south-1",
        "us-west-1",
        "us-west-2",
    }
)


# ---- resolved: what plan() hands to the tasks -----------------------------------------------


class Price(_Strict):
    """What the target costs, on one basis: per hour it exists (an instance or endpoint), per
    token (a per-token API: $/M input and output tokens), or unknown (an endpoint you run and
    gave no price for: `note` says so, and every price figure is NULL)."""

    basis: Literal["per_hour", "per_token", "none"] = "per_hour"
    usd_per_hour: float | None = Field(None, ge=0)
    usd_per_m_input_tokens: float | None = Field(None, ge=0)
    usd_per_m_output_tokens: float | None = Field(None, ge=0)
    source: str | None = None
    date: str | None = None
    note: str | None = None  # why there is no price (basis "none")

    @classmethod
    def hourly(cls, usd_per_hour: float, source: str, date: str | None = None) -> Price:
        return cls(basis="per_hour", usd_per_hour=usd_per_hour, source=source, date=date)

    def summary(self) -> str:
        """The price and where it is from, as the plan's checks print it."""
        if self.basis == "per_hour":
            figure = f"${self.usd_per_hour:.4f}/h"
        elif self.basis == "per_token":
            figure = f"${self.usd_per_m_input_tokens:g} / ${self.usd_per_m_output_tokens:g} per M input / output tokens"
        else:
            return f"none ({self.note})"
        return f"{figure} ({', '.join(x for x in (self.source, self.date) if x)})"


class ContainerImage(_Strict):
    """A serving container from the catalog (catalog/instances.yaml `containers`). An AWS deep
    learning container is named by a framework and version of AWS's image tables, and resolved at
    plan time for the target's region (backends.registry.resolve_image: the registry account differs by
    region); an image of your own, or one outside AWS's regional registries, is an explicit `image`."""

    kind: str
    image: str | None = None  # explicit URI ({region}, {account} filled per target)
    framework: str | None = None  # the image tables' name, e.g. vllm, djl-lmi
    version: str | None = None  # the framework version asked of the tables
    # "repository:tag" the catalog keeps instead of the tables' answer (a seed's container they no
    # longer list, or map to another tag); pin_reason says why. The registry still comes from them.
    pin: str | None = None
    pin_reason: str | None = None
    uri: str | None = None  # set by plan: the URI in the target's region, what is deployed
    resolved_by: str | None = None  # set by plan: how `uri` was resolved, as the plan prints it
    cuda: str
    gpu_archs: list[str]
    inference_ami_version: str | None = None
    source: str | None = None
    platform: str | None = (
        None  # the backend kind the image is for (catalog `platform`; None: a plan.json from before it)
    )
    cpu_archs: list[str] = Field(default_factory=lambda: ["x86_64"])  # host CPUs the image is built for

    @model_validator(mode="after")
    def _one_way(self) -> ContainerImage:
        """Either an explicit image or an SDK framework and version: never both, never neither."""
        if (self.image is None) == (self.framework is None) or (self.framework is None) != (self.version is None):
            raise ValueError("a container names either `image`, or `framework` and `version` (of AWS's image tables)")
        if self.pin is not None and ":" not in self.pin:
            raise ValueError(f"pin {self.pin!r}: give repository:tag")
        return self

    def image_uri(self, region: str, account: str = "") -> str:
        """The URI deployed: plan's resolution, else (a plan.json from before it) the explicit image."""
        if self.uri is not None:
            return self.uri
        if self.image is None:
            raise ValueError(f"container {self.framework} {self.version} was not resolved (plan resolves it)")
        return self.image.format(region=region, account=account)


class ResolvedTarget(_Strict):
    """One target of a planned run, self-contained: a task that receives it needs nothing else."""

    run_key: str
    run_dir: str
    target_id: str
    label: str
    instance_type: str
    model: str
    hf_id: str | None
    # The model revision served (the catalog's `hf_revision`: a commit or tag) where the backend
    # pins it (BackendSpec.pins_revision: the server is told to load it); None where unknown.
    model_revision: str | None = None
    precision: str
    serving: Serving
    workload: Workload
    validation: ValidationSettings
    slo: Slo
    price: Price
    backend: BackendTarget
    region: str
    tensor_parallel: int = 1
    roofline_tokens_per_s: float | None = None
    weight_gb_per_token: float | None = None  # what the roofline divides by (metrics.weight_gb_read_per_token)
    weights_not_read: str | None = None  # stored weights a token does not read (the model catalog's note)
    estimated_endpoint_hours: float
    estimated_usd: float | None  # None: the target has no price (an unpriced openai endpoint)
    warnings: list[str] = Field(default_factory=list)  # plan-time warnings about this target
    quality: QualitySettings | None = None  # None: the config has no quality stage
    dataset: DatasetSummary | None = None  # the workload's dataset as scanned at plan time (issue 28)
    capacity: CapacitySearch | None = None  # None: no capacity search (loadgen.capacity)
    # The results store's root (llmbench.store) and the Airflow connection to reach it; None: the
    # data folder, where run_dir is a local path as before.
    results_root: str | None = None
    results_conn_id: str = "aws_default"

    @property
    def backend_kind(self) -> str:
        return self.backend.kind

    @property
    def serving_config(self) -> str:
        return self.serving.name

    @property
    def dir(self) -> Path:
        """This target's raw-results folder under the run folder (never outside it)."""
        return paths.under(self.run_dir, self.target_id)

    @classmethod
    def of(cls, value: ResolvedTarget | dict[str, Any]) -> ResolvedTarget:
        """A target as a task receives it (JSON from XCom, or the model itself)."""
        return value if isinstance(value, cls) else cls.model_validate(value)


PriceBasis = Literal["output", "total"]


class Reference(_Strict):
    """A figure a seed article states or implies, kept beside the run to hold llmbench's own
    against: never a price, never an input. `implied`: derived by arithmetic from the article's
    figures (e.g. an hourly price back-solved from its $/M), not printed in it."""

    seed: str = Field(pattern=r"^[0-9]{3}$")  # the seed article, e.g. "000"
    says: str = Field(min_length=1)  # what the article says, in a few words
    value: float
    unit: str = Field(min_length=1)  # usd_per_hour, usd_per_m_total_tokens, output_tokens_per_s, pct, ...
    target: str | None = None  # the target id it is about, if one
    metric: str | None = None  # the price_performance column it compares with, if one
    concurrency: int | None = Field(None, ge=1)
    implied: bool = False


class RunPlan(_Strict):
    """A resolved config + Params: the run key, its folder, and every target (plan.json)."""

    run_key: str
    run_dir: str
    config_name: str
    backends: list[str]
    logical_date: str
    planned_at: str
    warehouse: WarehouseSettings
    warnings: list[str]
    estimated_endpoint_hours: float
    estimated_usd: float
    targets: list[ResolvedTarget]
    # The $/M a run ranks and labels by: per output token, or per total (input + output) token.
    price_basis: PriceBasis = "output"
    reference: list[Reference] = Field(default_factory=list)  # the config's, to compare against
    traffic: TrafficProfile | None = None  # the config's traffic profile (analysis.costmodel)
    budget: Budget | None = None  # the config's or the Param budget_usd's; None: no gate
    results_root: str | None = None  # as on each target
    results_conn_id: str = "aws_default"

    @classmethod
    def load(cls, run_dir: str | Path) -> RunPlan:
        """The plan in a run folder. A plan whose folder is in an object store (its run_dir a URI),
        read from a task's local copy of it (llmbench.store.scratch), is read as being there."""
        run = cls.model_validate_json((Path(run_dir) / "plan.json").read_text())
        if "://" in run.run_dir:
            return run.located(str(run_dir))
        return run

    def located(self, run_dir: str) -> RunPlan:
        """The same plan with its folder (and its targets') at `run_dir`."""
        return self.model_copy(
            update={"run_dir": run_dir, "targets": [t.model_copy(update={"run_dir": run_dir}) for t in self.targets]}
        )
