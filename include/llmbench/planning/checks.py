"""Plan-time checks of one target against the catalogs: hardware, serving, image, AMI, fit, price.

A config names a workload and a list of targets (instance type x model x serving configuration),
each on a backend (its own `backend:`, else the config's): one run may mix them. `plan()`
resolves every target against the catalogs and the DAG Params into a
typed `RunPlan` (llmbench.schemas.targets), and refuses a bad one with a single line naming the field and
the allowed values, before any endpoint exists.
"""

from __future__ import annotations

from typing import Any

from llmbench.analysis.metrics import roofline_tokens_per_s, weight_gb_read_per_token
from llmbench.planning.aws_prices import SERVICE_CODE
from llmbench.planning.config import BenchmarkConfig, ConfigError, TargetSpec, _longest
from llmbench.schemas.targets import (
    BackendTarget,
    BedrockServing,
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
    SageMakerSettings,
    SageMakerTarget,
    VllmServing,
)

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
