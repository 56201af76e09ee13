"""Benchmark configs and catalogs, validated, and the plan: targets resolved before anything runs.

A config names a backend, a workload and a list of targets (instance type x model x serving
configuration). `plan()` resolves every target against the catalogs and the DAG Params into a
typed `RunPlan` (llmbench.models), and refuses a bad one with a single line naming the field and
the allowed values, before any endpoint exists.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from llmbench import paths
from llmbench.metrics import Slo, roofline_tokens_per_s
from llmbench.models import (
    KNOWN_REGIONS,
    BackendTarget,
    ContainerImage,
    LmiServing,
    LocalServing,
    LocalTarget,
    OpenAIServing,
    OpenAITarget,
    Price,
    ResolvedTarget,
    RunPlan,
    SageMakerSettings,
    SageMakerTarget,
    Serving,
    ValidationSettings,
    VllmServing,
    WarehouseSettings,
)
from llmbench.prices import SERVICE_CODE, cached_prices
from llmbench.workload import LengthDist, Workload, length_mean, length_range


class ConfigError(ValueError):
    """A config or Param that cannot be run. The message is one line, meant for the user."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# Which serving kinds each backend runs.
SERVING_KINDS = {"local": ("llama-server",), "sagemaker": ("vllm", "lmi"), "openai": ("openai",)}


class TargetSpec(_Strict):
    id: str
    instance_type: str
    model: str
    precision: str
    serving: Serving
    usd_per_hour: float | None = Field(None, ge=0)  # overrides the catalog price (openai: required)

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}", v):
            raise ValueError("target id must be 1-63 characters of letters, digits, '_', '.', '-'")
        return v


class BenchmarkConfig(_Strict):
    name: str
    backend: Literal["local", "sagemaker", "openai"]
    description: str = ""
    sagemaker: SageMakerSettings | None = None
    workload: Workload = Field(default_factory=Workload)
    validation: ValidationSettings = Field(default_factory=ValidationSettings)
    slo: Slo = Field(default_factory=Slo)
    warehouse: WarehouseSettings = Field(default_factory=WarehouseSettings)
    targets: list[TargetSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> BenchmarkConfig:
        ids = [t.id for t in self.targets]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate target ids: {dupes}")
        want = SERVING_KINDS[self.backend]
        for t in self.targets:
            if t.serving.kind not in want:
                raise ValueError(
                    f"targets[{t.id}].serving.kind {t.serving.kind!r} does not run on backend "
                    f"{self.backend!r}; allowed: {want}"
                )
        if self.backend == "sagemaker":
            if self.sagemaker is None:
                raise ValueError("backend sagemaker needs a `sagemaker:` section (region, role_arn or aws_conn_id)")
            if self.sagemaker.region not in KNOWN_REGIONS:
                raise ValueError(
                    f"sagemaker.region: unknown region {self.sagemaker.region!r}; allowed: {sorted(KNOWN_REGIONS)}"
                )
        if self.backend == "openai":
            unpriced = [t.id for t in self.targets if t.usd_per_hour is None]
            if unpriced:
                raise ValueError(
                    f"targets{unpriced}.usd_per_hour: an openai target needs its $/hour (nothing "
                    "in the catalog prices an endpoint you run yourself)"
                )
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


def _longest(length: int | LengthDist) -> int:
    return length_range(length)[1]


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
    return {
        "instances": inst["instances"],
        "models": models,
        "containers": inst["containers"],
        "native_precisions": inst["native_precisions"],
    }


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
DEPLOY_OVERHEAD_MIN = {"local": 0.1, "sagemaker": 12.0, "openai": 0.0}
DECODE_EFFICIENCY = 0.6  # fraction of the bandwidth roofline a single stream reaches, for estimates


def _version(v: str | None) -> tuple[int, ...]:
    return tuple(int(x) for x in str(v).split(".")) if v else (0,)


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
            f"{where}.precision: {t.precision!r} not in the catalog for {t.model}; "
            f"allowed: {sorted(model['bytes_per_param'])}"
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
    elif isinstance(s, (VllmServing, LmiServing)) and cfg.sagemaker is not None:
        sm = cfg.sagemaker
        region = sm.region
        if s.max_model_len > model["context_length"]:
            raise ConfigError(
                f"{where}.serving.max_model_len: {s.max_model_len} exceeds {t.model}'s context "
                f"length {model['context_length']}"
            )
        if need > s.max_model_len:
            raise ConfigError(
                f"{where}.serving.max_model_len: prefix + input + output tokens ({need}) exceed "
                f"max_model_len ({s.max_model_len})"
            )
        if s.container not in containers:
            raise ConfigError(f"{where}.serving.container: unknown {s.container!r}; allowed: {sorted(containers)}")
        ctr = containers[s.container]
        if ctr["kind"] != s.kind:
            raise ConfigError(
                f"{where}.serving.container: {s.container!r} is a {ctr['kind']} container, "
                f"not {s.kind}; allowed: {sorted(k for k, c in containers.items() if c['kind'] == s.kind)}"
            )
        arch = inst["gpu_arch"]
        if _version(ctr["cuda"]) < _version(inst["min_cuda"]):
            raise ConfigError(
                f"{where}.serving.container: {s.container} ships CUDA {ctr['cuda']} but "
                f"{t.instance_type} ({inst['gpu']}, {arch}) needs CUDA {inst['min_cuda']}+"
            )
        if arch not in ctr["gpu_archs"]:
            raise ConfigError(
                f"{where}.serving.container: {s.container} does not run on {arch} GPUs "
                f"({t.instance_type}); allowed architectures: {ctr['gpu_archs']}"
            )
        tp = s.tensor_parallel_size if isinstance(s, VllmServing) else s.tensor_parallel_degree
        if tp > inst["gpu_count"]:
            raise ConfigError(
                f"{where}.serving: tensor parallel degree {tp} exceeds the {inst['gpu_count']} "
                f"GPU(s) of {t.instance_type}"
            )
        native = cat["native_precisions"][arch]
        if t.precision not in native:
            msg = (
                f"{where}.precision: {t.precision} is not native on {arch} ({inst['gpu']}); it would be "
                f"emulated or widened; native: {native}"
            )
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
    else:  # BenchmarkConfig pairs each serving kind with its backend: nothing else reaches here
        raise ConfigError(f"{where}.serving.kind: {s.kind!r} does not run on backend {cfg.backend!r}")
    api_price = cat["pricing_api"].get(region, {}).get(t.instance_type) if cfg.backend == "sagemaker" else None
    if t.usd_per_hour is not None:
        price = Price(usd_per_hour=t.usd_per_hour, source="config")
    elif api_price is not None:  # refreshed from the AWS Pricing API (llmbench_prices DAG)
        price = Price(
            usd_per_hour=api_price["usd_per_hour"],
            source=f"AWS Pricing API ({SERVICE_CODE} hosting, sku {api_price.get('sku')})",
            date=api_price["fetched_at"][:10],
        )
    else:
        usd_per_hour = (inst.get("usd_per_hour") or {}).get(region)
        if usd_per_hour is None:
            raise ConfigError(
                f"{where}.usd_per_hour: no catalog price for {t.instance_type} in {region}; set "
                f"usd_per_hour on the target or refresh prices (DAG llmbench_prices) (priced regions: "
                f"{sorted(inst.get('usd_per_hour') or {})})"
            )
        price = Price(usd_per_hour=float(usd_per_hour), source=inst["price_source"], date=str(inst["price_date"]))
    backend: BackendTarget
    if isinstance(s, (VllmServing, LmiServing)) and cfg.sagemaker is not None:
        backend = SageMakerTarget(
            settings=cfg.sagemaker, container=ContainerImage.model_validate(containers[s.container])
        )
    else:
        backend = LocalTarget()
    roof = roofline_tokens_per_s(inst, model, t.precision, tp)
    return _resolved(cfg, region, price, backend, tp, roof), warnings


def _check_openai_target(
    cfg: BenchmarkConfig, t: TargetSpec, s: OpenAIServing, cat: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """An endpoint that already runs: no catalog check of its hardware (it may be anything); its
    $/hour comes from the config (BenchmarkConfig requires it)."""
    price = Price(usd_per_hour=float(t.usd_per_hour or 0.0), source="config")
    backend = OpenAITarget(base_url=s.base_url.rstrip("/"), model_name=s.model_name, api_key_conn_id=s.api_key_conn_id)
    return _resolved(cfg, "external", price, backend, 1, None), []


def _resolved(
    cfg: BenchmarkConfig, region: str, price: Price, backend: BackendTarget, tp: int, roof: float | None
) -> dict[str, Any]:
    """The resolved fields every backend shares, with the plan's estimate of endpoint time."""
    w = cfg.workload
    # Estimate: each level runs ceil(n / c) rounds of one request at a fraction of the roofline.
    single_tps = roof * DECODE_EFFICIENCY if roof else 40.0
    out_mean = length_mean(w.output_tokens)
    if w.arrival_rates_rps:  # open loop: n arrivals at rate r take n / r, plus the last one's answer
        n_levels = len(w.arrival_rates_rps)
        sweep_s = w.repeats * (
            w.level_duration_s * n_levels
            if w.level_duration_s
            else sum(w.requests_per_level / r + out_mean / single_tps for r in w.arrival_rates_rps)
        )
    else:
        sweep_s = w.repeats * (
            w.level_duration_s * len(w.concurrency)
            if w.level_duration_s
            else sum(-(-w.requests_per_level // c) * out_mean / single_tps for c in w.concurrency)
        )
    sweep_s += w.warmup_requests * out_mean / single_tps
    hours = DEPLOY_OVERHEAD_MIN[cfg.backend] / 60 + sweep_s / 3600
    return {
        "region": region,
        "price": price,
        "backend": backend,
        "tensor_parallel": tp,
        "roofline_tokens_per_s": roof,
        "estimated_endpoint_hours": hours,
        "estimated_usd": hours * price.usd_per_hour,
    }


def plan(
    config_name: str,
    logical_date: date | datetime | str,
    params: dict[str, Any] | None = None,
    runs_root: Path | None = None,
) -> RunPlan:
    """Resolve a config + Params into the run and its targets, and write plan.json.

    Every target is self-contained: a task that receives it needs nothing else. Nothing is
    created (no folder, no endpoint) unless every target passes its checks.
    """
    cfg = _apply_params(load_config(config_name), params or {})
    cat = {**load_catalogs(), "pricing_api": cached_prices()}  # the price cache read once per plan
    run_key = make_run_key(cfg.name, logical_date)
    # Each attempt at a run key gets its own folder, so re-running a date never overwrites
    # what an earlier attempt measured; the warehouse keeps only the latest publish.
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    run_dir = (runs_root or paths.runs_dir()) / run_key / stamp
    targets: list[ResolvedTarget] = []
    warnings: list[str] = []
    for t in cfg.targets:
        if isinstance(t.serving, OpenAIServing):
            resolved, warn = _check_openai_target(cfg, t, t.serving, cat)
        else:
            resolved, warn = _check_target(cfg, t, cat)
        warnings.extend(warn)
        targets.append(
            ResolvedTarget(
                run_key=run_key,
                run_dir=str(run_dir),
                target_id=t.id,
                label=f"{t.instance_type} / {t.model} / {t.serving.name}",
                instance_type=t.instance_type,
                model=t.model,
                hf_id=(cat["models"].get(t.model) or {}).get("hf_id"),
                precision=t.precision,
                serving=t.serving,
                workload=cfg.workload,
                validation=cfg.validation,
                slo=cfg.slo,
                **resolved,
            )
        )
    run = RunPlan(
        run_key=run_key,
        run_dir=str(run_dir),
        config_name=cfg.name,
        backends=sorted({t.backend_kind for t in targets}),
        logical_date=str(logical_date)[:10],
        planned_at=datetime.now(UTC).isoformat(),
        warehouse=cfg.warehouse,
        warnings=warnings,
        estimated_endpoint_hours=sum(t.estimated_endpoint_hours for t in targets),
        estimated_usd=sum(t.estimated_usd for t in targets),
        targets=targets,
    )
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "plan.json").write_text(run.model_dump_json(indent=2))
    return run
