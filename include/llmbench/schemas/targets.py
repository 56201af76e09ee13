"""The typed shape of a run, from config to warehouse.

Config sections (what a config file says), and what plan() resolves them into: a `ResolvedTarget`
per target, carrying its workload, serving, price and backend settings. A target travels between
Airflow tasks as JSON (XCom); each task validates it back into `ResolvedTarget` once, at its top.
Backend-specific settings live in the backend's own model (`LocalTarget`, `SageMakerTarget`,
`OpenAITarget`: a discriminated union on `kind`), so generic code never reads them by name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator, model_validator

from llmbench import paths
from llmbench.schemas.slo import Slo
from llmbench.schemas.workload import Workload


class _Strict(BaseModel):
    # Frozen: a planned target is what every task of a run agrees on; nothing edits it on the way.
    model_config = ConfigDict(extra="forbid", frozen=True)


class ValidationSettings(_Strict):
    max_error_rate: float = Field(0.05, ge=0, le=1)


QualitySuite = Literal["tool_call", "exact"]


class QualitySettings(_Strict):
    """The correctness stage (llmbench.quality): its suites, each sent `runs` times per target
    after warm-up, outside the timed levels. The gate (llmbench.results.validation.validate_quality) fails a
    target whose score on a suite is below `min_score` (one number for every suite, or one per
    suite), or more than `max_drop_vs_baseline` below the score of the `baseline` target of the run."""

    suites: list[QualitySuite] = Field(min_length=1)
    runs: int = Field(3, ge=1, le=20)
    min_score: float | dict[QualitySuite, float] = 0.0
    baseline: str | None = None  # a target id of the same config
    max_drop_vs_baseline: float | None = Field(None, ge=0, le=1)
    max_tokens: int = Field(96, ge=8, le=4096)  # per answer; a tool call needs ~40 tokens
    request_timeout_s: float = Field(120, gt=0)

    @model_validator(mode="after")
    def _consistent(self) -> QualitySettings:
        scores = self.min_score.values() if isinstance(self.min_score, dict) else [self.min_score]
        if any(not 0 <= v <= 1 for v in scores):
            raise ValueError("quality.min_score: scores are fractions in [0, 1]")
        if isinstance(self.min_score, dict) and set(self.min_score) - set(self.suites):
            extra = sorted(set(self.min_score) - set(self.suites))
            raise ValueError(f"quality.min_score names suites not in quality.suites: {extra}")
        if (self.baseline is None) != (self.max_drop_vs_baseline is None):
            raise ValueError("quality.baseline and quality.max_drop_vs_baseline go together")
        return self

    def min_score_of(self, suite: str) -> float:
        return self.min_score.get(suite, 0.0) if isinstance(self.min_score, dict) else self.min_score  # type: ignore[call-overload]


class WarehouseSettings(_Strict):
    kind: Literal["duckdb", "postgres", "redshift"] = "duckdb"
    path: str | None = None  # duckdb: default <data folder>/warehouse.duckdb
    conn_id: str = "llmbench_warehouse"  # postgres / redshift: the Airflow connection to publish through


# llama-server flags the local backend sets itself (the binding stays on loopback; the slots,
# context and threads are LocalServing's fields); `extra_args` may not repeat them.
LLAMA_SERVER_OWNED_FLAGS = frozenset(
    {
        "--host",
        "--port",
        "--path",
        "--reuse-port",
        "-m",
        "--model",
        "-mu",
        "--model-url",
        "-hf",
        "-hfr",
        "--hf-repo",
        "-np",
        "--parallel",
        "-c",
        "--ctx-size",
        "-t",
        "--threads",
        "--no-webui",
        "--webui",
    }
)


class LocalServing(_Strict):
    """llama-server knobs. ctx_per_slot is each slot's share of the KV cache (tokens)."""

    kind: Literal["llama-server"] = "llama-server"
    name: str
    parallel: StrictInt = Field(1, ge=1, le=64)
    threads: StrictInt = Field(2, ge=1, le=256)
    ctx_per_slot: StrictInt = Field(1024, ge=128, le=1 << 20)
    max_lifetime_s: StrictInt = Field(7200, ge=60)  # a server outliving this is killed by its own guard
    extra_args: list[str] = Field(default_factory=list)  # further llama-server flags, passed as given

    @field_validator("extra_args")
    @classmethod
    def _not_ours(cls, v: list[str]) -> list[str]:
        """The backend owns the loopback binding and the knobs above: extra_args may not override them."""
        owned = [a for a in v if a.split("=", 1)[0] in LLAMA_SERVER_OWNED_FLAGS]
        if owned:
            raise ValueError(
                f"{owned[0].split('=', 1)[0]} is set by the local backend (loopback 127.0.0.1, its own port, "
                f"model and the fields above), not by extra_args; owned: {sorted(LLAMA_SERVER_OWNED_FLAGS)}"
            )
        return v


class VllmServing(_Strict):
    """vLLM's OpenAI server: on SageMaker its native container (knobs become SM_VLLM_* environment
    variables), on EC2 the vLLM image (knobs become `vllm serve` flags)."""

    kind: Literal["vllm"]
    name: str
    container: str | None = None  # catalog container; default: vllm-0.15.1 (SageMaker), vllm-openai-0.15.1 (EC2)
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
    # Further `vllm serve` flags, as given (EC2: appended to the command line, e.g.
    # ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]).
    extra_args: list[str] = Field(default_factory=list)


class NeuronServing(_Strict):
    """vLLM on AWS Neuron (Inferentia2 / Trainium) from a Neuron deep learning container: the
    model is compiled for fixed shapes and split over `tensor_parallel_size` NeuronCores."""

    kind: Literal["neuron"]
    name: str
    container: str = "neuron-vllm-0.9"
    tensor_parallel_size: StrictInt = Field(1, ge=1)
    max_model_len: StrictInt = Field(4096, ge=128)
    max_num_seqs: StrictInt = Field(8, ge=1)
    extra_args: list[str] = Field(default_factory=list)
    extra_env: dict[str, str] = Field(default_factory=dict)


class LmiServing(_Strict):
    """DJL LMI (v20, async mode): knobs become OPTION_* environment variables."""

    kind: Literal["lmi"]
    name: str
    container: str = "djl-lmi-v20"
    tensor_parallel_degree: StrictInt = Field(1, ge=1)
    dtype: str = "bf16"
    max_model_len: StrictInt = Field(4096, ge=256)
    max_rolling_batch_size: StrictInt = Field(64, ge=1)
    enable_prefix_caching: bool = False
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)
    extra_env: dict[str, str] = Field(default_factory=dict)


class OpenAIServing(_Strict):
    """An OpenAI-compatible endpoint that already runs (vLLM on a machine of yours, a gateway):
    nothing is deployed or torn down. The API key, if any, is the password of an Airflow connection."""

    kind: Literal["openai"]
    name: str
    base_url: str = Field(pattern=r"^https?://")  # ends in /v1
    model_name: str = "default"  # the `model` field of each request
    api_key_conn_id: str | None = None


class BedrockServing(_Strict):
    """A per-token API model on Amazon Bedrock, streamed with ConverseStream. `api` names its entry
    in catalog/api_prices.yaml (model id, $/M input and output tokens per region)."""

    kind: Literal["bedrock"]
    name: str
    api: str
    model_id: str | None = None  # default: the catalog entry's model id (an inference profile id works too)


Serving = Annotated[
    LocalServing | VllmServing | LmiServing | NeuronServing | OpenAIServing | BedrockServing,
    Field(discriminator="kind"),
]


class SageMakerSettings(_Strict):
    region: str
    aws_conn_id: str = "aws_default"
    role_arn: str | None = None  # else the connection's extra `role_arn`
    endpoint_timeout_s: int = Field(1800, ge=10)  # InService wait (real endpoints: minutes)
    expiry_hours: float = Field(6, gt=0)  # tag read by the janitor DAG
    precision_policy: Literal["refuse", "warn"] = "refuse"  # a precision the GPU cannot run natively
    kv_headroom_fraction: float = Field(0.1, ge=0, lt=1)  # GPU memory kept free for KV cache
    instance_quota: dict[str, int] = Field(default_factory=dict)  # concurrent endpoints per instance type
    runtime_url: str | None = None  # override the runtime host (VPC endpoints, tests)


class Ec2Settings(_Strict):
    """Instances we launch, serve from, and terminate. Network: a subnet and security group from
    here (or the connection extra `subnet_id` / `security_group_id`); without a security group, one
    is created per target admitting only `runner_cidr` on the server port, and deleted after."""

    region: str
    aws_conn_id: str = "aws_default"
    ami_id: str | None = None  # one AMI for every ec2 target; else resolved from an SSM parameter at deploy
    # One SSM parameter for every ec2 target; None: per target, AWS's public parameter for its host
    # CPU and accelerator driver (catalog/instances.yaml `ec2_amis`: Deep Learning AMIs, Neuron DLAMI).
    ami_ssm_parameter: str | None = None
    account_id: str | None = None  # fills {account} in a container image of your own registry
    subnet_id: str | None = None
    security_group_id: str | None = None
    runner_cidr: str | None = None  # who may reach the server (default: this runner's address /32)
    key_name: str | None = None
    iam_instance_profile: str | None = None
    root_volume_gb: int = Field(200, ge=8)
    server_port: int = Field(8000, ge=1, le=65535)
    # How the runner reaches the server: {public_ip}, {private_ip}, {public_dns}, {port} filled in.
    server_url: str = "http://{public_ip}:{port}/v1"
    ready_timeout_s: int = Field(1800, ge=10)  # running + the server's /health (image pull, model load)
    expiry_hours: float = Field(6, gt=0)  # tag read by the janitor DAG
    instance_quota: dict[str, int] = Field(default_factory=dict)  # concurrent instances per type
    precision_policy: Literal["refuse", "warn"] = "warn"  # a precision the accelerator widens or emulates
    kv_headroom_fraction: float = Field(0.1, ge=0, lt=1)  # accelerator memory kept free for KV cache


class BedrockSettings(_Strict):
    region: str
    aws_conn_id: str = "aws_default"
    runtime_url: str | None = None  # override the runtime host (VPC endpoints, tests)
    # No timeout of its own: a Bedrock request is bounded by the workload's request_timeout_s, as
    # every backend's is.


KNOWN_REGIONS = {
    "us-east-1",
    "us-east-2",
    "us-west-1",
    "us-west-2",
    "ca-central-1",
    "eu-west-1",
    "eu-west-2",
    "eu-west-3",
    "eu-central-1",
    "eu-north-1",
    "eu-south-1",
    "ap-south-1",
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-northeast-3",
    "ap-southeast-1",
    "ap-southeast-2",
    "sa-east-1",
    "me-south-1",
    "af-south-1",
}


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


class ContainerImage(_Strict):
    """A serving container from the catalog (catalog/instances.yaml `containers`)."""

    kind: str
    image: str
    cuda: str
    gpu_archs: list[str]
    inference_ami_version: str | None = None
    source: str | None = None
    platform: Literal["sagemaker", "ec2"] = "sagemaker"
    cpu_archs: list[str] = Field(default_factory=lambda: ["x86_64"])  # host CPUs the image is built for


class LocalTarget(_Strict):
    """llama-server on this machine: nothing beyond its serving knobs."""

    kind: Literal["local"] = "local"


class SageMakerTarget(_Strict):
    """A SageMaker real-time endpoint: the config's sagemaker section and the resolved container."""

    kind: Literal["sagemaker"] = "sagemaker"
    settings: SageMakerSettings
    container: ContainerImage


class OpenAITarget(_Strict):
    """An endpoint that already runs; its key (if any) is read from an Airflow connection."""

    kind: Literal["openai"] = "openai"
    base_url: str
    model_name: str = "default"
    api_key_conn_id: str | None = None
    # One connection per stream, reused (as vLLM's and every peer's clients do): a fresh one per
    # request makes the server accept a connection per request, which a closed loop's waves pay
    # for (docs/offered-load.md). A stream whose reused connection the server closes stops asking
    # (httpstream.StreamClient). false: `Connection: close`, a fresh connection per request.
    keep_alive: bool = True


class Ec2Target(_Strict):
    """An EC2 instance we launch with a serving container (vLLM; Neuron DLC) and terminate."""

    kind: Literal["ec2"] = "ec2"
    settings: Ec2Settings
    container: ContainerImage
    ami_ssm_parameter: str | None = None  # resolved at plan for this instance (unless settings.ami_id)


class BedrockTarget(_Strict):
    """A per-token API: nothing deployed; requests go to the Bedrock runtime, SigV4-signed."""

    kind: Literal["bedrock"] = "bedrock"
    settings: BedrockSettings
    model_id: str


BackendTarget = Annotated[
    LocalTarget | SageMakerTarget | OpenAITarget | Ec2Target | BedrockTarget, Field(discriminator="kind")
]
BackendKind = Literal["local", "sagemaker", "openai", "ec2", "bedrock"]
BACKEND_KINDS: tuple[str, ...] = ("local", "sagemaker", "openai", "ec2", "bedrock")


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
    # pins it (ec2 and sagemaker vLLM pass it to the server); None where unknown.
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

    @classmethod
    def load(cls, run_dir: str | Path) -> RunPlan:
        return cls.model_validate_json((Path(run_dir) / "plan.json").read_text())
