"""Benchmark configs and catalogs, validated, and the plan: targets resolved before anything runs.

A config names a workload and a list of targets (instance type x model x serving configuration),
each on a backend (its own `backend:`, else the config's): one run may mix them. `plan()`
resolves every target against the catalogs and the DAG Params into a
typed `RunPlan` (llmbench.models), and refuses a bad one with a single line naming the field and
the allowed values, before any endpoint exists.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from llmbench import paths
from llmbench.metrics import Slo, roofline_tokens_per_s, weight_gb_read_per_token
from llmbench.models import (
    KNOWN_REGIONS,
    BackendKind,
    BackendTarget,
    BedrockServing,
    BedrockSettings,
    BedrockTarget,
    ContainerImage,
    Ec2Settings,
    Ec2Target,
    LmiServing,
    LocalServing,
    LocalTarget,
    NeuronServing,
    OpenAIServing,
    OpenAITarget,
    Price,
    PriceBasis,
    QualitySettings,
    Reference,
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
SERVING_KINDS: dict[str, tuple[str, ...]] = {
    "local": ("llama-server",),
    "sagemaker": ("vllm", "lmi"),
    "ec2": ("vllm", "neuron"),
    "openai": ("openai",),
    "bedrock": ("bedrock",),
}
# Backends whose targets run on an instance type of the catalog (the others: an endpoint you run,
# or a per-token API, where instance_type and precision are optional labels).
HARDWARE_BACKENDS = ("local", "sagemaker", "ec2")


class TargetSpec(_Strict):
    id: str
    backend: BackendKind | None = None  # default: the config's `backend`
    instance_type: str | None = None  # required on local, sagemaker and ec2
    model: str
    precision: str | None = None  # required on local, sagemaker and ec2
    serving: Serving
    usd_per_hour: float | None = Field(None, ge=0)  # overrides the catalog price (openai: the only price)
    # Where usd_per_hour comes from and as of when (a quote, a reserved price, the seed's figure):
    # frozen on the rows with it, as the catalog's and the Pricing API's sources are. Default "config".
    price_source: str | None = Field(None, min_length=1, max_length=500)
    price_date: date | None = None
    # Why no source prices this target (no catalog or Pricing API price for its type and region):
    # it is then measured without $ figures instead of refused. A price wins once one exists.
    unpriced: str | None = Field(None, min_length=1)

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not paths.SAFE_ID.fullmatch(v):
            raise ValueError(f"target id {v!r} must be {paths.SAFE_ID_RULE}")
        return v

    @model_validator(mode="after")
    def _price_provenance(self) -> TargetSpec:
        if (self.price_source is not None or self.price_date is not None) and self.usd_per_hour is None:
            raise ValueError("price_source / price_date describe usd_per_hour: set usd_per_hour too")
        return self

    def config_price(self) -> Price:
        """The target's own usd_per_hour, with its source (default "config") and date."""
        assert self.usd_per_hour is not None
        return Price.hourly(
            self.usd_per_hour,
            self.price_source or "config",
            self.price_date.isoformat() if self.price_date else None,
        )


def _known_region(section: str, region: str) -> None:
    if region not in KNOWN_REGIONS:
        raise ValueError(f"{section}.region: unknown region {region!r}; allowed: {sorted(KNOWN_REGIONS)}")


class BenchmarkConfig(_Strict):
    name: str
    backend: BackendKind | None = None  # the backend of every target that names none
    description: str = ""
    sagemaker: SageMakerSettings | None = None
    ec2: Ec2Settings | None = None
    bedrock: BedrockSettings | None = None
    workload: Workload = Field(default_factory=Workload)
    validation: ValidationSettings = Field(default_factory=ValidationSettings)
    quality: QualitySettings | None = None  # the correctness stage (absent: none)
    slo: Slo = Field(default_factory=Slo)
    warehouse: WarehouseSettings = Field(default_factory=WarehouseSettings)
    targets: list[TargetSpec] = Field(min_length=1)
    price_basis: PriceBasis = "output"  # $/M per output token, or per total (input + output) token
    reference: list[Reference] = Field(default_factory=list)  # what the articles state or imply

    @model_validator(mode="after")
    def _references(self) -> BenchmarkConfig:
        ids = {t.id for t in self.targets}
        for i, ref in enumerate(self.reference):
            if ref.target is not None and ref.target not in ids:
                raise ValueError(f"reference[{i}].target: no target {ref.target!r} (targets: {sorted(ids)})")
        return self

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:  # it becomes the run key, a folder under the data folder
        if not paths.SAFE_ID.fullmatch(v):
            raise ValueError(f"name {v!r} must be {paths.SAFE_ID_RULE} (it names the run's folder)")
        return v

    def backend_of(self, t: TargetSpec) -> str:
        """The backend a target runs on (the validator guarantees one)."""
        return t.backend or self.backend or ""

    @model_validator(mode="after")
    def _targets(self) -> BenchmarkConfig:
        ids = [t.id for t in self.targets]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate target ids: {dupes}")
        if self.quality is not None and self.quality.baseline is not None and self.quality.baseline not in ids:
            raise ValueError(f"quality.baseline: unknown target id {self.quality.baseline!r}; allowed: {ids}")
        for t in self.targets:
            kind = self.backend_of(t)
            if not kind:
                raise ValueError(
                    f"targets[{t.id}].backend: no backend; set `backend` on the target or at the top "
                    f"(allowed: {list(SERVING_KINDS)})"
                )
            want = SERVING_KINDS[kind]
            if t.serving.kind not in want:
                raise ValueError(
                    f"targets[{t.id}].serving.kind {t.serving.kind!r} does not run on backend {kind!r}; allowed: {want}"
                )
            if kind in HARDWARE_BACKENDS:
                missing = [f for f in ("instance_type", "precision") if getattr(t, f) is None]
                if missing:
                    raise ValueError(f"targets[{t.id}].{missing[0]}: required on backend {kind!r}")
        used = {self.backend_of(t) for t in self.targets}
        for kind, section, what in (
            ("sagemaker", self.sagemaker, "region, role_arn or aws_conn_id"),
            ("ec2", self.ec2, "region, and subnet_id / security_group_id or the connection's"),
            ("bedrock", self.bedrock, "region, aws_conn_id"),
        ):
            if kind in used and section is None:
                raise ValueError(f"backend {kind} needs a `{kind}:` section ({what})")
            if section is not None:
                _known_region(kind, section.region)
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
        "apis": yaml.safe_load((paths.CATALOG_DIR / "api_prices.yaml").read_text())["apis"],
        "ec2_amis": inst["ec2_amis"],
    }


def make_run_key(config_name: str, logical_date: date | datetime | str) -> str:
    """One run key per config and logical date: re-running a date replaces that date's rows.
    A config name or date that cannot make a safe folder name is a ConfigError (one line)."""
    try:
        paths.check_id("name", config_name)
    except ValueError as e:
        raise ConfigError(f"config {e}") from None
    if isinstance(logical_date, str):
        try:
            logical_date = datetime.fromisoformat(logical_date)
        except ValueError:
            raise ConfigError(f"date: {logical_date!r} is not a date (YYYY-MM-DD)") from None
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
        # A reference figure about a target left out of this run has nothing to be held against.
        data["reference"] = [r for r in data.get("reference") or [] if r.get("target") in (None, *wanted)]
    try:
        return BenchmarkConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError(_one_line(e, "params")) from None


# What a target's endpoint costs beyond its sweep, for the plan's estimate only: SageMaker create
# + InService (seed 001: ~9 minutes) and delete; EC2 launch, image pull and model load, terminate.
DEPLOY_OVERHEAD_MIN = {"local": 0.1, "sagemaker": 12.0, "ec2": 10.0, "openai": 0.0, "bedrock": 0.0}
DECODE_EFFICIENCY = 0.6  # fraction of the bandwidth roofline a single stream reaches, for estimates
DEFAULT_CONTAINER = {("vllm", "sagemaker"): "vllm-0.15.1", ("vllm", "ec2"): "vllm-openai-0.15.1"}


def _version(v: str | None) -> tuple[int, ...]:
    return tuple(int(x) for x in str(v).split(".")) if v else (0,)


def _platform(instance_type: str, inst: dict[str, Any]) -> str:
    """Where an instance type is offered: the catalog's `platform`, else SageMaker for ml.*."""
    return str(inst.get("platform") or ("sagemaker" if instance_type.startswith("ml.") else "local"))


class _Checked:
    """What checking one target found: its resolved fields, warnings for the plan and its rows,
    and every check's outcome in order (`llmbench plan` prints them)."""

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.checks: list[str] = []
        self.tp = 1
        self.roofline: float | None = None
        self.weight_gb: float | None = None  # GB of weights read per generated token
        self.weights_not_read: str | None = None
        self.ami_ssm_parameter: str | None = None  # ec2: the AMI chosen for this instance

    def passed(self, what: str, outcome: str = "ok") -> None:
        self.checks.append(f"{what}: {outcome}")

    def warned(self, what: str, outcome: str, warning: str) -> None:
        """A check that let the target through with a warning (it travels to its rows)."""
        self.checks.append(f"{what}: {outcome} (warning)")
        self.warnings.append(warning)


def _check_local(where: str, t: TargetSpec, s: LocalServing, cat: dict[str, Any], need: int, out: _Checked) -> None:
    model = cat["models"][t.model]
    if need > min(s.ctx_per_slot, model["context_length"]):
        raise ConfigError(
            f"{where}.serving.ctx_per_slot: input + output tokens ({need}) exceed the per-slot context "
            f"({s.ctx_per_slot}); raise ctx_per_slot or shorten the workload"
        )
    out.passed(f"tokens {need} <= ctx_per_slot {min(s.ctx_per_slot, model['context_length'])}")


def _check_accelerated(
    where: str,
    kind: str,
    t: TargetSpec,
    s: VllmServing | LmiServing | NeuronServing,
    settings: SageMakerSettings | Ec2Settings,
    cat: dict[str, Any],
    need: int,
    out: _Checked,
) -> ContainerImage:
    """A GPU or Neuron target on SageMaker or EC2: the container runs on this platform, host CPU
    and accelerator; the model fits the accelerator's memory at the tensor-parallel degree; the
    precision is native there (else refused, or a warning that travels to the warehouse row)."""
    instance_type = str(t.instance_type)
    inst, model, containers = cat["instances"][instance_type], cat["models"][t.model], cat["containers"]
    if s.max_model_len > model["context_length"]:
        raise ConfigError(
            f"{where}.serving.max_model_len: {s.max_model_len} exceeds {t.model}'s context "
            f"length {model['context_length']}"
        )
    out.passed(f"max_model_len {s.max_model_len} <= {t.model}'s context {model['context_length']}")
    if need > s.max_model_len:
        raise ConfigError(
            f"{where}.serving.max_model_len: prefix + input + output tokens ({need}) exceed "
            f"max_model_len ({s.max_model_len})"
        )
    out.passed(f"tokens {need} <= max_model_len {s.max_model_len}")
    arch = inst["gpu_arch"]
    if (s.kind == "neuron") != (arch == "neuron"):
        fitting = sorted(
            k
            for k, v in cat["instances"].items()
            if _platform(k, v) == kind and (v["gpu_arch"] == "neuron") == (s.kind == "neuron")
        )
        raise ConfigError(
            f"{where}.serving.kind: {s.kind} does not run on {instance_type} ({inst['gpu']}, {arch}); "
            f"{'Neuron' if s.kind == 'neuron' else 'GPU'} instance types on {kind}: {fitting}"
        )
    out.passed(f"serving {s.kind} on {arch}")
    name = s.container or DEFAULT_CONTAINER.get((s.kind, kind))
    on_platform = sorted(
        k for k, c in containers.items() if c["kind"] == s.kind and c.get("platform", "sagemaker") == kind
    )
    if name not in containers:
        raise ConfigError(f"{where}.serving.container: unknown {name!r}; allowed: {on_platform}")
    ctr = ContainerImage.model_validate(containers[name])
    if ctr.kind != s.kind:
        raise ConfigError(
            f"{where}.serving.container: {name!r} is a {ctr.kind} container, not {s.kind}; allowed: {on_platform}"
        )
    if ctr.platform != kind:
        raise ConfigError(
            f"{where}.serving.container: {name!r} is a {ctr.platform} image, not {kind}; allowed: {on_platform}"
        )
    out.passed(f"image {name}: {s.kind} on {kind}")
    cpu = inst.get("cpu_arch", "x86_64")
    if cpu not in ctr.cpu_archs:
        raise ConfigError(
            f"{where}.serving.container: {name} is built for {ctr.cpu_archs} hosts, {instance_type} is {cpu}; "
            f"allowed: {sorted(k for k in on_platform if cpu in containers[k].get('cpu_archs', ['x86_64']))}"
        )
    out.passed(f"image {name} built for {cpu}")
    if arch != "neuron" and _version(ctr.cuda) < _version(inst["min_cuda"]):
        raise ConfigError(
            f"{where}.serving.container: {name} ships CUDA {ctr.cuda} but "
            f"{instance_type} ({inst['gpu']}, {arch}) needs CUDA {inst['min_cuda']}+"
        )
    if arch != "neuron":
        out.passed(f"CUDA {ctr.cuda} >= {inst['min_cuda']}")
    if arch not in ctr.gpu_archs:
        raise ConfigError(
            f"{where}.serving.container: {name} has no kernels for {arch} ({inst['gpu']}, {instance_type}); "
            f"it covers {ctr.gpu_archs}"
        )
    out.passed(f"kernels for {arch}")
    if isinstance(settings, Ec2Settings):
        if "{account}" in ctr.image and not settings.account_id:
            raise ConfigError(
                f"{where}.serving.container: {name} is an image in your own registry ({ctr.image}): set "
                "ec2.account_id (the AWS account that holds it)"
            )
        _check_ami(where, settings, instance_type, cpu, arch, cat, out)
    if isinstance(s, LmiServing):
        tp = s.tensor_parallel_degree
    else:
        tp = s.tensor_parallel_size
    unit = "NeuronCore" if arch == "neuron" else "GPU"
    if tp > inst["gpu_count"]:
        raise ConfigError(
            f"{where}.serving: tensor parallel degree {tp} exceeds the {inst['gpu_count']} {unit}(s) of {instance_type}"
        )
    out.passed(f"tensor parallel {tp} <= {inst['gpu_count']} {unit}(s)")
    precision = str(t.precision)
    native = cat["native_precisions"][arch]
    if precision not in native:
        msg = (
            f"{where}.precision: {precision} is not native on {arch} ({inst['gpu']}); it would be "
            f"emulated or widened to 16 bits; native: {native}"
        )
        if settings.precision_policy == "refuse":
            raise ConfigError(msg + f" (set {kind}.precision_policy: warn to run it anyway)")
        out.warned(f"precision {precision} native on {arch}", "WIDENED", msg)
    else:
        out.passed(f"precision {precision} native on {arch}")
    weights_gb = model["total_params_b"] * model["bytes_per_param"][precision]
    utilisation = s.gpu_memory_utilization if isinstance(s, (VllmServing, LmiServing)) else 1.0
    usable_gb = inst["memory_gb_per_gpu"] * utilisation * (1 - settings.kv_headroom_fraction)
    if weights_gb / tp > usable_gb:
        raise ConfigError(
            f"{where}: {t.model} at {precision} needs {weights_gb:.1f} GB of weights, {weights_gb / tp:.1f} GB "
            f"per {unit} at tensor parallel {tp}; {instance_type} leaves {usable_gb:.1f} GB per {unit} after KV "
            f"headroom ({inst['memory_gb_per_gpu']} GB x {utilisation} x "
            f"{1 - settings.kv_headroom_fraction:.2f}); use more {unit}s or a smaller precision"
        )
    out.passed(f"fits: {weights_gb:.1f} GB weights, {weights_gb / tp:.1f} GB per {unit} of {usable_gb:.1f} GB usable")
    out.tp = tp
    return ctr


def _ami_arch(name: str) -> set[str]:
    """What an AMI's name or SSM parameter path says it is built for (x86_64 / arm64, nvidia / neuron)."""
    low = name.lower()
    return {tag for tag in ("x86_64", "arm64", "nvidia", "neuron") if tag in low}


def _check_ami(
    where: str, settings: Ec2Settings, instance_type: str, cpu: str, arch: str, cat: dict[str, Any], out: _Checked
) -> None:
    """The AMI an ec2 target boots. Without ec2.ami_id / ec2.ami_ssm_parameter, the catalog's for
    the instance's host CPU and driver (none there: refused). A config's own applies to every ec2
    target: when its SSM path names a host CPU or driver the instance does not have, say so (a
    warning, not a refusal: an AMI id, or a path without these words, is not checked)."""
    driver = "neuron" if arch == "neuron" else "nvidia"
    if settings.ami_id:
        out.passed(f"AMI {settings.ami_id} (ec2.ami_id)", "not checked")
        return
    if settings.ami_ssm_parameter is None:
        key = f"{cpu}-{driver}"
        if key not in cat["ec2_amis"]:
            raise ConfigError(
                f"{where}.instance_type: no AMI in the catalog for {cpu} + {driver} ({instance_type}); set "
                f"ec2.ami_id or ec2.ami_ssm_parameter (catalog: {sorted(cat['ec2_amis'])})"
            )
        out.ami_ssm_parameter = cat["ec2_amis"][key]
        out.passed(f"AMI for {cpu} + {driver}: {out.ami_ssm_parameter} (catalog)")
        return
    out.ami_ssm_parameter = settings.ami_ssm_parameter
    tags = _ami_arch(settings.ami_ssm_parameter)
    wrong = sorted(tags & ({"x86_64", "arm64", "nvidia", "neuron"} - {cpu, driver}))
    what = f"AMI (ec2.ami_ssm_parameter) for {cpu} + {driver}"
    if not tags:
        out.passed(what, "not checked")
    elif wrong:
        out.warned(
            what,
            "MISMATCH",
            f"{where}: ec2.ami_ssm_parameter {settings.ami_ssm_parameter} names {' + '.join(wrong)}; "
            f"{instance_type} needs an AMI for {cpu} + {driver} (one ec2 section: one AMI for every ec2 target)",
        )
    else:
        out.passed(what)


def _hourly_price(
    where: str, kind: str, t: TargetSpec, region: str, inst: dict[str, Any], cat: dict[str, Any]
) -> Price:
    """The config's $/hour, else the AWS Pricing API cache (SageMaker), else the catalog's."""
    if t.usd_per_hour is not None:
        return t.config_price()
    api_price = cat["pricing_api"].get(region, {}).get(t.instance_type) if kind == "sagemaker" else None
    if api_price is not None:  # refreshed from the AWS Pricing API (llmbench_prices DAG)
        return Price.hourly(
            api_price["usd_per_hour"],
            f"AWS Pricing API ({SERVICE_CODE} hosting, sku {api_price.get('sku')})",
            api_price["fetched_at"][:10],
        )
    usd_per_hour = (inst.get("usd_per_hour") or {}).get(region)
    if usd_per_hour is None and t.unpriced:
        return Price(basis="none", note=f"no source-backed price for {t.instance_type} in {region}: {t.unpriced}")
    if usd_per_hour is None:
        raise ConfigError(
            f"{where}.usd_per_hour: no catalog price for {t.instance_type} in {region}; set "
            f"usd_per_hour on the target or refresh prices (DAG llmbench_prices) (priced regions: "
            f"{sorted(inst.get('usd_per_hour') or {})})"
        )
    return Price.hourly(float(usd_per_hour), inst["price_source"], str(inst["price_date"]))


def _check_hardware_target(
    cfg: BenchmarkConfig, kind: str, t: TargetSpec, cat: dict[str, Any], out: _Checked
) -> tuple[str, Price, BackendTarget]:
    """A target on an instance type of the catalog (local, sagemaker, ec2): (region, price, backend)."""
    where = f"targets[{t.id}]"
    instances, models = cat["instances"], cat["models"]
    instance_type, precision = str(t.instance_type), str(t.precision)
    on_backend = sorted(k for k, v in instances.items() if _platform(k, v) == kind)
    if instance_type not in instances:
        raise ConfigError(f"{where}.instance_type: unknown {instance_type!r}; allowed on {kind}: {on_backend}")
    inst = instances[instance_type]
    if _platform(instance_type, inst) != kind:
        raise ConfigError(
            f"{where}.instance_type: {instance_type} is a {_platform(instance_type, inst)} instance type, "
            f"not {kind}; allowed on {kind}: {on_backend}"
        )
    out.passed(f"instance {instance_type} offered on {kind}")
    if t.model not in models:
        raise ConfigError(f"{where}.model: unknown {t.model!r}; allowed: {sorted(models)}")
    model = models[t.model]
    if precision not in model["bytes_per_param"]:
        raise ConfigError(
            f"{where}.precision: {precision!r} not in the catalog for {t.model}; "
            f"allowed: {sorted(model['bytes_per_param'])}"
        )
    out.passed(f"model {t.model} at {precision} in the catalog")
    w = cfg.workload
    need = _longest(w.input_tokens) + w.shared_prefix_tokens + _longest(w.output_tokens)
    s = t.serving
    backend: BackendTarget
    if isinstance(s, LocalServing):
        _check_local(where, t, s, cat, need, out)
        region, backend = "local", LocalTarget()
    elif isinstance(s, (VllmServing, LmiServing, NeuronServing)) and kind == "sagemaker" and cfg.sagemaker:
        region = cfg.sagemaker.region
        ctr = _check_accelerated(where, kind, t, s, cfg.sagemaker, cat, need, out)
        backend = SageMakerTarget(settings=cfg.sagemaker, container=ctr)
    elif isinstance(s, (VllmServing, NeuronServing)) and kind == "ec2" and cfg.ec2:
        region = cfg.ec2.region
        ctr = _check_accelerated(where, kind, t, s, cfg.ec2, cat, need, out)
        backend = Ec2Target(settings=cfg.ec2, container=ctr, ami_ssm_parameter=out.ami_ssm_parameter)
    else:  # BenchmarkConfig pairs each serving kind with its backend: nothing else reaches here
        raise ConfigError(f"{where}.serving.kind: {s.kind!r} does not run on backend {kind!r}")
    out.roofline = roofline_tokens_per_s(inst, model, precision, out.tp)
    out.weight_gb = weight_gb_read_per_token(model, precision)
    out.weights_not_read = model.get("weights_not_read")
    price = _hourly_price(where, kind, t, region, inst, cat)
    out.passed(f"price in {region}", price_summary(price))
    return region, price, backend


def price_summary(price: Price) -> str:
    """A price and where it is from, as the plan's checks print it."""
    if price.basis == "per_hour":
        figure = f"${price.usd_per_hour:.4f}/h"
    elif price.basis == "per_token":
        figure = f"${price.usd_per_m_input_tokens:g} / ${price.usd_per_m_output_tokens:g} per M input / output tokens"
    else:
        return f"none ({price.note})"
    return f"{figure} ({', '.join(x for x in (price.source, price.date) if x)})"


def _check_openai_target(t: TargetSpec, s: OpenAIServing, out: _Checked) -> tuple[str, Price, BackendTarget]:
    """An endpoint that already runs: no catalog check of its hardware (it may be anything). Its
    $/hour is the config's; without one, only latency and throughput are published."""
    out.passed("hardware (an endpoint you run)", "not checked")
    if t.usd_per_hour is not None:
        price = t.config_price()
    else:
        price = Price(basis="none", note="no usd_per_hour in the config for this endpoint: latency and throughput only")
    out.passed("price", price_summary(price))
    backend = OpenAITarget(base_url=s.base_url.rstrip("/"), model_name=s.model_name, api_key_conn_id=s.api_key_conn_id)
    return "external", price, backend


def _check_bedrock_target(
    cfg: BenchmarkConfig, t: TargetSpec, s: BedrockServing, cat: dict[str, Any], out: _Checked
) -> tuple[str, Price, BackendTarget]:
    """A per-token API: the catalog entry `serving.api` gives the model id and its $/M input and
    output tokens in the config's bedrock region."""
    where = f"targets[{t.id}]"
    assert cfg.bedrock is not None  # BenchmarkConfig requires the section for a bedrock target
    region = cfg.bedrock.region
    apis = {k: v for k, v in cat["apis"].items() if v.get("provider") == "bedrock"}
    if s.api not in apis:
        raise ConfigError(f"{where}.serving.api: unknown {s.api!r}; allowed: {sorted(apis)}")
    api = apis[s.api]
    out.passed(f"api {s.api} in the catalog")
    if t.model != api["model"]:
        raise ConfigError(f"{where}.model: {s.api} serves {api['model']!r}, not {t.model!r}")
    out.passed(f"model {t.model} served by {s.api}")
    if t.usd_per_hour is not None:
        raise ConfigError(f"{where}.usd_per_hour: a per-token API has no $/hour (its prices: catalog {s.api})")
    out.passed("no usd_per_hour on a per-token API")
    p_in, p_out = api["usd_per_m_input"].get(region), api["usd_per_m_output"].get(region)
    if p_in is None or p_out is None:
        raise ConfigError(
            f"bedrock.region: no price for {s.api} ({where}) in {region}; priced regions: "
            f"{sorted(api['usd_per_m_output'])}"
        )
    price = Price(
        basis="per_token",
        usd_per_m_input_tokens=float(p_in),
        usd_per_m_output_tokens=float(p_out),
        source=api["source"],
        date=str(api["date"]),
    )
    out.passed(f"price in {region}", price_summary(price))
    return region, price, BedrockTarget(settings=cfg.bedrock, model_id=s.model_id or api["model_id"])


def _estimate(cfg: BenchmarkConfig, kind: str, price: Price, roof: float | None) -> tuple[float, float | None]:
    """(endpoint-hours, $) a target is expected to cost: deploy overhead plus each level's
    ceil(n / c) rounds at a fraction of the roofline; per-token: every request's tokens at list
    price. None where there is no price."""
    w = cfg.workload
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
        n_levels = len(w.concurrency)
        sweep_s = w.repeats * (
            w.level_duration_s * n_levels
            if w.level_duration_s
            else sum(-(-w.requests_per_level // c) * out_mean / single_tps for c in w.concurrency)
        )
    sweep_s += w.warmup_requests * out_mean / single_tps
    if w.warmup_each_level and not w.arrival_rates_rps:  # each level's streams, n requests each
        sweep_s += w.warmup_each_level * len(w.concurrency) * out_mean / single_tps
    hours = DEPLOY_OVERHEAD_MIN[kind] / 60 + sweep_s / 3600
    if price.basis == "per_hour" and price.usd_per_hour is not None:
        return hours, hours * price.usd_per_hour
    if price.basis == "per_token":
        # A timed level's request count is unknown in advance: estimate it at the single-stream pace.
        per_level = w.requests_per_level if not w.level_duration_s else w.level_duration_s * single_tps / out_mean
        requests = w.warmup_requests + w.repeats * n_levels * per_level
        if not w.arrival_rates_rps:
            requests += w.warmup_each_level * sum(w.concurrency)
        in_mean = length_mean(w.input_tokens) + w.shared_prefix_tokens
        usd = requests * (
            in_mean * (price.usd_per_m_input_tokens or 0) + out_mean * (price.usd_per_m_output_tokens or 0)
        )
        return 0.0, usd / 1e6
    return hours, None


def _pinned_revision(serving: Any, kind: str, model: dict[str, Any]) -> str | None:
    """The catalog's `hf_revision` of the model, where the target's server is told to load that
    revision (vLLM on ec2: --revision; on sagemaker: SM_VLLM_REVISION); else None: a GGUF file, an
    endpoint or API someone else runs, a container we do not pass it to."""
    rev = model.get("hf_revision")
    return str(rev) if rev and isinstance(serving, VllmServing) and kind in ("ec2", "sagemaker") else None


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
    return plan_checked(config_name, logical_date, params, runs_root)[0]


def plan_checked(
    config_name: str,
    logical_date: date | datetime | str,
    params: dict[str, Any] | None = None,
    runs_root: Path | None = None,
    write: bool = True,
) -> tuple[RunPlan, dict[str, list[str]]]:
    """plan(), and every check's outcome per target id, in the order they ran (`llmbench plan`
    prints them; a check that fails raises ConfigError instead, as in plan()). write=False: the
    plan only, no folder and no plan.json (a reprocess reads today's settings this way)."""
    cfg = _apply_params(load_config(config_name), params or {})
    cat = {**load_catalogs(), "pricing_api": cached_prices()}  # the price cache read once per plan
    run_key = make_run_key(cfg.name, logical_date)
    # Each attempt at a run key gets its own folder, so re-running a date never overwrites
    # what an earlier attempt measured; the warehouse keeps only the latest publish.
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    try:
        run_dir = paths.under(runs_root or paths.runs_dir(), run_key, stamp)
        for t in cfg.targets:
            paths.under(run_dir, t.id)
    except ValueError as e:
        raise ConfigError(f"name: {e}") from None
    targets: list[ResolvedTarget] = []
    warnings: list[str] = []
    checks: dict[str, list[str]] = {}
    for t in cfg.targets:
        kind = cfg.backend_of(t)
        checked = _Checked()
        checks[t.id] = checked.checks
        if isinstance(t.serving, OpenAIServing):
            region, price, backend = _check_openai_target(t, t.serving, checked)
        elif isinstance(t.serving, BedrockServing):
            region, price, backend = _check_bedrock_target(cfg, t, t.serving, cat, checked)
        else:
            region, price, backend = _check_hardware_target(cfg, kind, t, cat, checked)
        hours, usd = _estimate(cfg, kind, price, checked.roofline)
        warnings.extend(checked.warnings)
        instance_type = t.instance_type or ("bedrock-on-demand" if kind == "bedrock" else "external")
        targets.append(
            ResolvedTarget(
                run_key=run_key,
                run_dir=str(run_dir),
                target_id=t.id,
                label=f"{instance_type} / {t.model} / {t.serving.name}",
                instance_type=instance_type,
                model=t.model,
                hf_id=(cat["models"].get(t.model) or {}).get("hf_id"),
                model_revision=_pinned_revision(t.serving, kind, cat["models"].get(t.model) or {}),
                precision=t.precision or "undisclosed",
                serving=t.serving,
                workload=cfg.workload,
                validation=cfg.validation,
                slo=cfg.slo,
                price=price,
                backend=backend,
                region=region,
                tensor_parallel=checked.tp,
                roofline_tokens_per_s=checked.roofline,
                weight_gb_per_token=checked.weight_gb,
                weights_not_read=checked.weights_not_read,
                estimated_endpoint_hours=hours,
                estimated_usd=usd,
                warnings=checked.warnings,
                quality=cfg.quality,
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
        estimated_usd=sum(t.estimated_usd or 0.0 for t in targets),
        targets=targets,
        price_basis=cfg.price_basis,
        reference=cfg.reference,
    )
    if write:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "plan.json").write_text(run.model_dump_json(indent=2))
    return run, checks
