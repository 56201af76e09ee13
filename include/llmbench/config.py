"""Benchmark configs and catalogs, validated, and the plan: targets resolved before anything runs.

A config names a backend, a workload and a list of targets (instance type x model x serving
configuration). `plan()` resolves every target against the catalogs and the DAG Params and refuses
a bad one with a single line naming the field and the allowed values, before any endpoint exists.
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from llmbench import paths
from llmbench.prices import SERVICE_CODE, cached_prices
from llmbench.workload import length_mean, length_range


class ConfigError(ValueError):
    """A config or Param that cannot be run. The message is one line, meant for the user."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LengthDist(_Strict):
    """A request length drawn per request, seeded (workload.sample_length): fixed (value),
    normal (mean, sd, clipped to [min, max]), uniform (min, max), or empirical (one length per
    line of `file`, relative to include/config/; read into `values` at load time)."""

    dist: Literal["fixed", "normal", "uniform", "empirical"]
    value: int | None = Field(None, ge=1)
    mean: float | None = Field(None, gt=0)
    sd: float | None = Field(None, ge=0)
    min: int | None = Field(None, ge=1)
    max: int | None = Field(None, ge=1)
    file: str | None = None
    values: list[int] | None = None

    @model_validator(mode="after")
    def _complete(self) -> "LengthDist":
        need = {"fixed": ("value",), "normal": ("mean", "sd"), "uniform": ("min", "max"), "empirical": ("file",)}
        missing = [f for f in need[self.dist] if getattr(self, f) is None and not (f == "file" and self.values)]
        if missing:
            raise ValueError(f"dist {self.dist} needs {missing}")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} > max {self.max}")
        if self.dist == "empirical" and not self.values:
            path = Path(self.file) if Path(self.file).is_absolute() else paths.CONFIG_DIR / self.file
            try:
                values = [int(x) for x in path.read_text().split()]
            except (OSError, ValueError) as e:
                raise ValueError(f"empirical lengths file {path}: {e}") from None
            if not values or min(values) < 1:
                raise ValueError(f"empirical lengths file {path}: needs positive integers, one per line")
            self.values = values
        return self


# Workloads of the seeds, by name: `workload: {preset: seed-002, requests_per_level: 8}`; what
# the config sets itself wins over the preset.
PRESETS: dict[str, dict[str, Any]] = {
    # seed 000: 2048 in / 512 out at concurrency 1 / 16 / 64.
    "seed-000": {"input_tokens": 2048, "output_tokens": 512, "concurrency": [1, 16, 64]},
    # seed 002: ~1,000 in / ~560 out, a ~478-token shared system prompt, concurrency 1..32.
    "seed-002": {"input_tokens": {"dist": "normal", "mean": 1000, "sd": 100, "min": 700, "max": 1300},
                 "output_tokens": {"dist": "normal", "mean": 560, "sd": 60, "min": 380, "max": 740},
                 "shared_prefix_tokens": 478, "concurrency": [1, 2, 4, 8, 16, 32]},
}


class Workload(_Strict):
    preset: Literal["seed-000", "seed-002"] | None = None
    input_tokens: Annotated[int, Field(ge=1)] | LengthDist = 256
    output_tokens: Annotated[int, Field(ge=1)] | LengthDist = 64
    shared_prefix_tokens: int = Field(0, ge=0)  # a system prompt every request shares (seed 002: 478)
    concurrency: list[int] = Field(default_factory=lambda: [1, 2, 4, 8], min_length=1)
    requests_per_level: int = Field(16, ge=1)
    warmup_requests: int = Field(2, ge=0)
    request_timeout_s: float = Field(120.0, gt=0)
    seed: int = 0
    # A level ends after requests_per_level requests or, when set, after this many seconds (no
    # request starts later; the ones in flight finish).
    level_duration_s: float | None = Field(None, gt=0)
    # Each level is run this many times in a row; the level's row then carries 95 % confidence
    # intervals of its throughput and TTFT p50 across the repeats.
    repeats: int = Field(1, ge=1, le=20)
    # Load-generator processes per level (None: one per 128 streams, at most one per core).
    client_processes: int | None = Field(None, ge=1, le=64)
    # Open loop instead of closed: one level per Poisson arrival rate (requests/s), each with at
    # most max_in_flight requests in flight; `concurrency` is then not used.
    arrival_rates_rps: list[float] | None = Field(None, min_length=1)
    max_in_flight: int = Field(256, ge=1)

    @field_validator("arrival_rates_rps")
    @classmethod
    def _rates(cls, v: list[float] | None) -> list[float] | None:
        if v is None:
            return v
        bad = [r for r in v if not r > 0]
        if bad:
            raise ValueError(f"every arrival rate must be > 0 requests/s, got {bad}")
        if len(set(v)) != len(v):
            raise ValueError(f"arrival rates must be distinct, got {v}")
        return sorted(v)

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("preset"):
            if data["preset"] not in PRESETS:
                return data  # the Literal refuses it, naming the allowed presets
            return {**PRESETS[data["preset"]], **data}
        return data

    @field_validator("input_tokens", "output_tokens", mode="before")
    @classmethod
    def _length(cls, v: Any) -> Any:
        # A mapping is a distribution: validate it as one, so its error is the one reported.
        if isinstance(v, dict):
            try:
                return LengthDist.model_validate(v)
            except ValidationError as e:
                err = e.errors()[0]
                where = ".".join(str(x) for x in err["loc"])
                raise ValueError((f"{where}: " if where else "") + err["msg"].removeprefix("Value error, ")) from None
        return v

    @field_validator("concurrency")
    @classmethod
    def _levels(cls, v: list[int]) -> list[int]:
        bad = [c for c in v if c < 1]
        if bad:
            raise ValueError(f"every concurrency level must be >= 1, got {bad}")
        if len(set(v)) != len(v):
            raise ValueError(f"concurrency levels must be distinct, got {v}")
        return sorted(v)


class ValidationSettings(_Strict):
    max_error_rate: float = Field(0.05, ge=0, le=1)


class Slo(_Strict):
    ttft_ms: float = Field(2000, gt=0)
    tpot_ms: float = Field(100, gt=0)


class WarehouseSettings(_Strict):
    kind: Literal["duckdb", "postgres", "redshift"] = "duckdb"
    path: str | None = None  # duckdb: default <data folder>/warehouse.duckdb
    conn_id: str = "llmbench_warehouse"  # postgres / redshift: the Airflow connection to publish through


class LocalServing(_Strict):
    """llama-server knobs. ctx_per_slot is each slot's share of the KV cache (tokens)."""

    kind: Literal["llama-server"] = "llama-server"
    name: str
    parallel: int = Field(1, ge=1, le=64)
    threads: int = Field(2, ge=1)
    ctx_per_slot: int = Field(1024, ge=128)
    max_lifetime_s: int = Field(7200, ge=60)  # a server outliving this is killed by its own guard
    extra_args: list[str] = Field(default_factory=list)  # further llama-server flags, passed as given


class VllmServing(_Strict):
    """The native vLLM SageMaker container: knobs become SM_VLLM_* environment variables."""

    kind: Literal["vllm"]
    name: str
    container: str = "vllm-0.15.1"
    tensor_parallel_size: int = Field(1, ge=1)
    dtype: str = "auto"
    quantization: str | None = None  # e.g. fp8; precision decides it when unset
    max_model_len: int = Field(4096, ge=256)
    enable_prefix_caching: bool = False
    enable_chunked_prefill: bool = False
    max_num_seqs: int = Field(64, ge=1)
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)
    speculative_config: dict[str, Any] | None = None  # e.g. EAGLE3: {"method": "eagle3", "model": ..., ...}
    extra_env: dict[str, str] = Field(default_factory=dict)


class LmiServing(_Strict):
    """DJL LMI (v20, async mode): knobs become OPTION_* environment variables."""

    kind: Literal["lmi"]
    name: str
    container: str = "djl-lmi-v20"
    tensor_parallel_degree: int = Field(1, ge=1)
    dtype: str = "bf16"
    max_model_len: int = Field(4096, ge=256)
    max_rolling_batch_size: int = Field(64, ge=1)
    enable_prefix_caching: bool = False
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)
    extra_env: dict[str, str] = Field(default_factory=dict)


Serving = Annotated[Union[LocalServing, VllmServing, LmiServing], Field(discriminator="kind")]


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


KNOWN_REGIONS = {
    "us-east-1", "us-east-2", "us-west-1", "us-west-2", "ca-central-1", "eu-west-1", "eu-west-2", "eu-west-3",
    "eu-central-1", "eu-north-1", "eu-south-1", "ap-south-1", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3",
    "ap-southeast-1", "ap-southeast-2", "sa-east-1", "me-south-1", "af-south-1",
}


class TargetSpec(_Strict):
    id: str
    instance_type: str
    model: str
    precision: str
    serving: Serving
    usd_per_hour: float | None = Field(None, ge=0)  # overrides the catalog price

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}", v):
            raise ValueError("target id must be 1-63 characters of letters, digits, '_', '.', '-'")
        return v


class BenchmarkConfig(_Strict):
    name: str
    backend: Literal["local", "sagemaker"]
    description: str = ""
    sagemaker: SageMakerSettings | None = None
    workload: Workload = Field(default_factory=Workload)
    validation: ValidationSettings = Field(default_factory=ValidationSettings)
    slo: Slo = Field(default_factory=Slo)
    warehouse: WarehouseSettings = Field(default_factory=WarehouseSettings)
    targets: list[TargetSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> "BenchmarkConfig":
        ids = [t.id for t in self.targets]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate target ids: {dupes}")
        want = "llama-server" if self.backend == "local" else ("vllm", "lmi")
        for t in self.targets:
            if t.serving.kind not in want:
                raise ValueError(f"targets[{t.id}].serving.kind {t.serving.kind!r} does not run on backend "
                                 f"{self.backend!r}; allowed: {want}")
        if self.backend == "sagemaker":
            if self.sagemaker is None:
                raise ValueError("backend sagemaker needs a `sagemaker:` section (region, role_arn or aws_conn_id)")
            if self.sagemaker.region not in KNOWN_REGIONS:
                raise ValueError(f"sagemaker.region: unknown region {self.sagemaker.region!r}; allowed: "
                                 f"{sorted(KNOWN_REGIONS)}")
        return self


def _one_line(err: ValidationError, source: str) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    msg = first["msg"]
    if first["type"] == "literal_error":
        msg = f"{msg}, got {first.get('input')!r}"
    more = f" (+{err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{source}: {where}: {msg}{more}"


def available_configs() -> list[str]:
    return sorted(p.stem for p in paths.CONFIG_DIR.glob("*.yaml"))


def config_path(name_or_path: str) -> Path:
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") and p.exists():
        return p
    candidate = paths.CONFIG_DIR / f"{name_or_path}.yaml"
    if candidate.exists():
        return candidate
    raise ConfigError(
        f"config: unknown config {name_or_path!r}; allowed: {available_configs()} or a path to a .yaml file"
    )


def _spec(length: int | LengthDist) -> int | dict:
    return length if isinstance(length, int) else length.model_dump()


def _longest(length: int | LengthDist) -> int:
    return length_range(_spec(length))[1]


def load_config(name_or_path: str) -> BenchmarkConfig:
    path = config_path(name_or_path)
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(f"{path.name}: malformed YAML: {str(e).splitlines()[0]}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path.name}: expected a mapping at the top level")
    try:
        return BenchmarkConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(_one_line(e, path.name)) from None


def load_catalogs() -> dict[str, Any]:
    """instances, models, containers and native_precisions, from catalog/*.yaml."""
    inst = yaml.safe_load((paths.CATALOG_DIR / "instances.yaml").read_text())
    models = yaml.safe_load((paths.CATALOG_DIR / "models.yaml").read_text())["models"]
    return {"instances": inst["instances"], "models": models, "containers": inst["containers"],
            "native_precisions": inst["native_precisions"]}


def make_run_key(config_name: str, logical_date: date | datetime | str) -> str:
    """One run key per config and logical date: re-running a date replaces that date's rows."""
    if isinstance(logical_date, str):
        logical_date = datetime.fromisoformat(logical_date)
    d = logical_date.date() if isinstance(logical_date, datetime) else logical_date
    return f"{config_name}-{d.isoformat()}"


def _apply_params(cfg: BenchmarkConfig, params: dict[str, Any]) -> BenchmarkConfig:
    """Overlay DAG Params (or CLI flags) on the config; a Param that contradicts it is refused."""
    data = cfg.model_dump()
    known = {"config", "targets", "concurrency", "requests_per_level", "warehouse_conn_id"}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ConfigError(f"params: unknown params {unknown}; allowed: {sorted(known)}")
    if params.get("concurrency"):
        data["workload"]["concurrency"] = list(params["concurrency"])
    if params.get("requests_per_level") is not None:
        data["workload"]["requests_per_level"] = params["requests_per_level"]
    if params.get("warehouse_conn_id"):  # publish through this Airflow PostgreSQL connection instead
        data["warehouse"] = {"kind": "postgres", "path": None, "conn_id": params["warehouse_conn_id"]}
    wanted = params.get("targets") or []
    if wanted:
        ids = [t["id"] for t in data["targets"]]
        missing = [w for w in wanted if w not in ids]
        if missing:
            raise ConfigError(f"params.targets: unknown target ids {missing}; allowed: {ids}")
        data["targets"] = [t for t in data["targets"] if t["id"] in wanted]
    try:
        return BenchmarkConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError(_one_line(e, "params")) from None


# Endpoint lifetime a SageMaker target costs beyond its sweep: create + InService (seed 001: ~9
# minutes) and delete. Used only for the plan's estimate.
DEPLOY_OVERHEAD_MIN = {"local": 0.1, "sagemaker": 12.0}
DECODE_EFFICIENCY = 0.6  # fraction of the bandwidth roofline a single stream reaches, for estimates


def _version(v: str | None) -> tuple[int, ...]:
    return tuple(int(x) for x in str(v).split(".")) if v else (0,)


def roofline_tokens_per_s(inst: dict[str, Any], model: dict[str, Any], precision: str, tp: int) -> float | None:
    """Single-stream decode ceiling: memory bandwidth / bytes of active weights read per token
    (tensor parallel ranks read their shards at the same time)."""
    if not inst.get("memory_bandwidth_gb_s"):
        return None
    gb_per_token = model["active_params_b"] * model["bytes_per_param"][precision]
    return inst["memory_bandwidth_gb_s"] * max(tp, 1) / gb_per_token


def _check_target(cfg: BenchmarkConfig, t: TargetSpec, cat: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Resolve one target against the catalogs; raise ConfigError naming the field, else return
    (resolved fields, warnings)."""
    where = f"targets[{t.id}]"
    instances, models, containers = cat["instances"], cat["models"], cat["containers"]
    if t.instance_type not in instances:
        raise ConfigError(f"{where}.instance_type: unknown {t.instance_type!r}; allowed: {sorted(instances)}")
    if t.model not in models:
        raise ConfigError(f"{where}.model: unknown {t.model!r}; allowed: {sorted(models)}")
    inst, model = instances[t.instance_type], models[t.model]
    if t.precision not in model["bytes_per_param"]:
        raise ConfigError(
            f"{where}.precision: {t.precision!r} not in the catalog for {t.model}; allowed: {sorted(model['bytes_per_param'])}"
        )
    w = cfg.workload
    need = _longest(w.input_tokens) + w.shared_prefix_tokens + _longest(w.output_tokens)
    warnings: list[str] = []
    s = t.serving
    tp = 1
    if isinstance(s, LocalServing):
        if need > min(s.ctx_per_slot, model["context_length"]):
            raise ConfigError(
                f"{where}.serving.ctx_per_slot: input + output tokens ({need}) exceed the per-slot context "
                f"({s.ctx_per_slot}); raise ctx_per_slot or shorten the workload"
            )
        region = "local"
    else:
        sm = cfg.sagemaker
        region = sm.region
        if s.max_model_len > model["context_length"]:
            raise ConfigError(f"{where}.serving.max_model_len: {s.max_model_len} exceeds {t.model}'s context "
                              f"length {model['context_length']}")
        if need > s.max_model_len:
            raise ConfigError(f"{where}.serving.max_model_len: prefix + input + output tokens ({need}) exceed "
                              f"max_model_len ({s.max_model_len})")
        if s.container not in containers:
            raise ConfigError(f"{where}.serving.container: unknown {s.container!r}; allowed: {sorted(containers)}")
        ctr = containers[s.container]
        if ctr["kind"] != s.kind:
            raise ConfigError(f"{where}.serving.container: {s.container!r} is a {ctr['kind']} container, "
                              f"not {s.kind}; allowed: {sorted(k for k, c in containers.items() if c['kind'] == s.kind)}")
        arch = inst["gpu_arch"]
        if _version(ctr["cuda"]) < _version(inst["min_cuda"]):
            raise ConfigError(f"{where}.serving.container: {s.container} ships CUDA {ctr['cuda']} but "
                              f"{t.instance_type} ({inst['gpu']}, {arch}) needs CUDA {inst['min_cuda']}+")
        if arch not in ctr["gpu_archs"]:
            raise ConfigError(f"{where}.serving.container: {s.container} does not run on {arch} GPUs "
                              f"({t.instance_type}); allowed architectures: {ctr['gpu_archs']}")
        tp = s.tensor_parallel_size if isinstance(s, VllmServing) else s.tensor_parallel_degree
        if tp > inst["gpu_count"]:
            raise ConfigError(f"{where}.serving: tensor parallel degree {tp} exceeds the {inst['gpu_count']} "
                              f"GPU(s) of {t.instance_type}")
        native = cat["native_precisions"][arch]
        if t.precision not in native:
            msg = (f"{where}.precision: {t.precision} is not native on {arch} ({inst['gpu']}); it would be "
                   f"emulated or widened; native: {native}")
            if sm.precision_policy == "refuse":
                raise ConfigError(msg + " (set sagemaker.precision_policy: warn to run it anyway)")
            warnings.append(msg)
        weights_gb = model["total_params_b"] * model["bytes_per_param"][t.precision]
        usable_gb = inst["memory_gb_per_gpu"] * s.gpu_memory_utilization * (1 - sm.kv_headroom_fraction)
        if weights_gb / tp > usable_gb:
            raise ConfigError(
                f"{where}: {t.model} at {t.precision} needs {weights_gb:.1f} GB of weights, {weights_gb / tp:.1f} GB "
                f"per GPU at tensor parallel {tp}; {t.instance_type} leaves {usable_gb:.1f} GB per GPU after KV "
                f"headroom ({inst['memory_gb_per_gpu']} GB x {s.gpu_memory_utilization} x "
                f"{1 - sm.kv_headroom_fraction:.2f}); use more GPUs or a smaller precision"
            )
    api_price = cat["pricing_api"].get(region, {}).get(t.instance_type) if cfg.backend == "sagemaker" else None
    if t.usd_per_hour is not None:
        usd_per_hour, price_source, price_date = t.usd_per_hour, "config", None
    elif api_price is not None:  # refreshed from the AWS Pricing API (llmbench_prices DAG)
        usd_per_hour = api_price["usd_per_hour"]
        price_source = f"AWS Pricing API ({SERVICE_CODE} hosting, sku {api_price.get('sku')})"
        price_date = api_price["fetched_at"][:10]
    else:
        usd_per_hour = (inst.get("usd_per_hour") or {}).get(region)
        if usd_per_hour is None:
            raise ConfigError(f"{where}.usd_per_hour: no catalog price for {t.instance_type} in {region}; set "
                              f"usd_per_hour on the target or refresh prices (DAG llmbench_prices) (priced regions: "
                              f"{sorted(inst.get('usd_per_hour') or {})})")
        price_source, price_date = inst["price_source"], str(inst["price_date"])
    roof = roofline_tokens_per_s(inst, model, t.precision, tp)
    # Estimate: each level runs ceil(n / c) rounds of one request at a fraction of the roofline.
    single_tps = roof * DECODE_EFFICIENCY if roof else 40.0
    out_mean = length_mean(_spec(w.output_tokens))
    if w.arrival_rates_rps:  # open loop: n arrivals at rate r take n / r, plus the last one's answer
        n_levels = len(w.arrival_rates_rps)
        sweep_s = w.repeats * (w.level_duration_s * n_levels if w.level_duration_s else
                               sum(w.requests_per_level / r + out_mean / single_tps for r in w.arrival_rates_rps))
    else:
        sweep_s = w.repeats * (w.level_duration_s * len(w.concurrency) if w.level_duration_s else
                               sum(-(-w.requests_per_level // c) * out_mean / single_tps for c in w.concurrency))
    sweep_s += w.warmup_requests * out_mean / single_tps
    hours = DEPLOY_OVERHEAD_MIN[cfg.backend] / 60 + sweep_s / 3600
    return {
        "region": region,
        "usd_per_hour": float(usd_per_hour),
        "price_source": price_source,
        "price_date": price_date,
        "tensor_parallel": tp,
        "roofline_tokens_per_s": roof,
        "estimated_endpoint_hours": hours,
        "estimated_usd": hours * float(usd_per_hour),
    }, warnings


def plan(
    config_name: str,
    logical_date: date | datetime | str,
    params: dict[str, Any] | None = None,
    runs_root: Path | None = None,
) -> dict[str, Any]:
    """Resolve a config + Params into the run and its targets (JSON-able), and write plan.json.

    Every target dict is self-contained: a task that receives it needs nothing else. Nothing is
    created (no folder, no endpoint) unless every target passes its checks.
    """
    cfg = _apply_params(load_config(config_name), params or {})
    cat = {**load_catalogs(), "pricing_api": cached_prices()}  # the price cache read once per plan
    run_key = make_run_key(cfg.name, logical_date)
    # Each attempt at a run key gets its own folder, so re-running a date never overwrites
    # what an earlier attempt measured; the warehouse keeps only the latest publish.
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    run_dir = (runs_root or paths.runs_dir()) / run_key / stamp
    targets, warnings = [], []
    for t in cfg.targets:
        resolved, warn = _check_target(cfg, t, cat)
        warnings.extend(warn)
        targets.append(
            {
                "run_key": run_key,
                "run_dir": str(run_dir),
                "target_id": t.id,
                "label": f"{t.instance_type} / {t.model} / {t.serving.name}",
                "backend": cfg.backend,
                "instance_type": t.instance_type,
                "model": t.model,
                "hf_id": cat["models"][t.model].get("hf_id"),
                "precision": t.precision,
                "serving_config": t.serving.name,
                "serving": t.serving.model_dump(),
                "workload": cfg.workload.model_dump(),
                "validation": cfg.validation.model_dump(),
                "slo": cfg.slo.model_dump(),
                "sagemaker": cfg.sagemaker.model_dump() if cfg.sagemaker else None,
                "container": cat["containers"].get(getattr(t.serving, "container", None)),
                **resolved,
            }
        )
    run = {
        "run_key": run_key,
        "run_dir": str(run_dir),
        "config_name": cfg.name,
        "backend": cfg.backend,
        "logical_date": str(logical_date)[:10],
        "planned_at": datetime.now(timezone.utc).isoformat(),
        "warehouse": cfg.warehouse.model_dump(),
        "warnings": warnings,
        "estimated_endpoint_hours": sum(t["estimated_endpoint_hours"] for t in targets),
        "estimated_usd": sum(t["estimated_usd"] for t in targets),
        "targets": targets,
    }
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "plan.json").write_text(json.dumps(run, indent=2))
    return run
