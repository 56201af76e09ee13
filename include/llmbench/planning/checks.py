"""Plan-time checks of one target against the catalogs: hardware, serving, image, fit, price.

The checks every backend kind on catalog hardware shares live here (the instance type is offered
on the kind, the model and precision are in the catalog, a GPU or Neuron container fits the
instance, the $/hour); what only one kind checks is its own plan function
(BackendSpec.plan, in its package), which the planner calls with a `_Context`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from llmbench.analysis.metrics import roofline_tokens_per_s, weight_gb_read_per_token
from llmbench.backends import registry
from llmbench.backends.registry import BackendSpec
from llmbench.planning.config import BenchmarkConfig, ConfigError, TargetSpec, _longest
from llmbench.schemas.targets import (
    ContainerImage,
    LmiServing,
    NeuronServing,
    Price,
    RunPlan,
    VllmServing,
)

DECODE_EFFICIENCY = 0.6  # fraction of the bandwidth roofline a single stream reaches, for estimates


def _version(v: str | None) -> tuple[int, ...]:
    return tuple(int(x) for x in str(v).split(".")) if v else (0,)


def _platform(instance_type: str, inst: dict[str, Any]) -> str:
    """Where an instance type is offered: the catalog's `platform` (a backend kind)."""
    return str(inst.get("platform"))


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

    def passed(self, what: str, outcome: str = "ok") -> None:
        self.checks.append(f"{what}: {outcome}")

    def warned(self, what: str, outcome: str, warning: str) -> None:
        """A check that let the target through with a warning (it travels to its rows)."""
        self.checks.append(f"{what}: {outcome} (warning)")
        self.warnings.append(warning)


def _check_accelerated(
    ctx: _Context, platform_check: Callable[[str, ContainerImage, str, str], None] | None = None
) -> ContainerImage:
    """A GPU or Neuron target on a platform that runs catalog containers: the container runs on
    this platform, host CPU and accelerator; the model fits the accelerator's memory at the
    tensor-parallel degree; the precision is native there (else refused, or a warning that travels
    to the warehouse row). The backend's settings give precision_policy and kv_headroom_fraction;
    platform_check(image name, image, host cpu, accelerator arch) adds the platform's own checks of the image."""
    where, kind, t, cat, out = ctx.where, ctx.kind, ctx.target, ctx.catalogs, ctx.out
    s = t.serving
    if not isinstance(s, (VllmServing, LmiServing, NeuronServing)):
        raise ConfigError(f"{where}.serving.kind: {s.kind!r} does not run on backend {kind!r}")
    instance_type = str(t.instance_type)
    inst, model = cat["instances"][instance_type], cat["models"][t.model]
    _check_lengths(ctx, s, model)
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
    name, ctr, cpu = _check_image(ctx, s, inst, arch)
    if platform_check is not None:
        platform_check(str(name), ctr, cpu, arch)
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
    _check_fit(ctx, s, inst, model, arch, tp)
    out.tp = tp
    return ctr


def _check_lengths(ctx: _Context, s: Any, model: dict[str, Any]) -> None:
    """max_model_len within the model's context, and the workload's tokens within max_model_len."""
    where, t, need, out = ctx.where, ctx.target, ctx.need_tokens, ctx.out
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


def _check_image(ctx: _Context, s: Any, inst: dict[str, Any], arch: str) -> tuple[str, ContainerImage, str]:
    """(its name, the image, the host's cpu) of the target's container, once it is known, of the
    serving kind and platform, built for the host's CPU, with a CUDA and kernels for the GPU."""
    where, kind, t, cat, out = ctx.where, ctx.kind, ctx.target, ctx.catalogs, ctx.out
    instance_type, containers = str(t.instance_type), cat["containers"]
    name = s.container or ctx.spec.default_containers.get(s.kind)
    on_platform = sorted(k for k, c in containers.items() if c["kind"] == s.kind and c.get("platform") == kind)
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
    ctr = _resolve_image(ctx, str(name), ctr)
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
    return str(name), ctr, cpu


def _check_fit(ctx: _Context, s: Any, inst: dict[str, Any], model: dict[str, Any], arch: str, tp: int) -> None:
    """The precision is native on the accelerator (else refused, or a warning by precision_policy)
    and the weights fit its memory at the tensor-parallel degree, after the KV headroom."""
    where, kind, t, settings, cat, out = ctx.where, ctx.kind, ctx.target, ctx.settings, ctx.catalogs, ctx.out
    instance_type, unit = str(t.instance_type), "NeuronCore" if arch == "neuron" else "GPU"
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


# The CUDA an image's tag names (cu129 -> 12.9, cu130 -> 13.0).
_CUDA_TAG = re.compile(r"-cu(\d{2,3})(\d)(?:[-.]|$)")


def _tag_cuda(uri: str) -> str | None:
    m = _CUDA_TAG.search(uri.rpartition("/")[2])
    return f"{int(m.group(1))}.{m.group(2)}" if m else None


def _resolve_image(ctx: _Context, name: str, ctr: ContainerImage) -> ContainerImage:
    """The container's URI in the target's region: an AWS deep learning container from the image
    tables of the registered resolver (registry.resolve_image), an explicit image as the catalog
    writes it. A pin the tables map otherwise or do not list is a warning with both values, or
    refused where the config's section says image_pins: refuse; a CUDA in the tag other than the
    catalog's `cuda` is refused (the checks below read that field)."""
    where, region, out = ctx.where, ctx.settings.region, ctx.out
    if ctr.framework is None or ctr.version is None:
        assert ctr.image is not None  # ContainerImage: one or the other
        account = getattr(ctx.settings, "account_id", None) or "{account}"  # a platform check refuses it unset
        uri = ctr.image.format(region=region, account=account)
        out.passed(f"image {name} in {region}: {uri}", "explicit (catalog image)")
        return ctr.model_copy(update={"uri": uri, "resolved_by": "explicit (catalog image)"})
    try:
        got = registry.resolve_image(ctr.framework, ctr.version, region, ctr.pin, ctr.pin_reason)
    except ConfigError as e:
        raise ConfigError(f"{where}.serving.container: {name}: {e}") from None
    what = f"image {name} in {region}: {got.uri}"
    if got.warning is None:
        out.passed(what, f"resolved by {got.how}")
    elif getattr(ctx.settings, "image_pins", "keep") == "refuse":
        raise ConfigError(
            f"{where}.serving.container: {name}: {got.warning} ({ctx.kind}.image_pins: refuse; keep deploys the pin)"
        )
    else:
        out.warned(what, f"PINNED, {got.how}", f"{where}: {got.warning}")
    cuda = _tag_cuda(got.uri)
    if cuda is not None and cuda != ctr.cuda:
        raise ConfigError(
            f"{where}.serving.container: {name}: the catalog says CUDA {ctr.cuda}, the image's tag says "
            f"{cuda} ({got.uri}); correct the catalog's `cuda`"
        )
    return ctr.model_copy(update={"uri": got.uri, "resolved_by": got.how})


def _hourly_price(ctx: _Context, region: str, inst: dict[str, Any]) -> Price:
    """The config's $/hour, else the backend's own price list (BackendSpec.prices: a cache
    the llmbench_prices DAG refreshes), else the catalog's."""
    t = ctx.target
    if t.usd_per_hour is not None:
        return t.config_price()
    listed = ctx.spec.prices.listed(region, str(t.instance_type)) if ctx.spec.prices else None
    if listed is not None:
        return Price.hourly(*listed)
    usd_per_hour = (inst.get("usd_per_hour") or {}).get(region)
    if usd_per_hour is None and t.unpriced:
        return Price(basis="none", note=f"no source-backed price for {t.instance_type} in {region}: {t.unpriced}")
    if usd_per_hour is None:
        raise ConfigError(
            f"{ctx.where}.usd_per_hour: no catalog price for {t.instance_type} in {region}; set "
            f"usd_per_hour on the target or refresh prices (DAG llmbench_prices) (priced regions: "
            f"{sorted(inst.get('usd_per_hour') or {})})"
        )
    return Price.hourly(float(usd_per_hour), inst["price_source"], str(inst["price_date"]))


@dataclass
class _Context:
    """What a backend's plan check receives (registry.PlanContext): the target, its backend's
    config section, the catalogs, the longest request in tokens, the check record."""

    spec: BackendSpec
    target: TargetSpec
    settings: Any
    catalogs: dict[str, Any]
    need_tokens: int
    out: _Checked

    @property
    def where(self) -> str:
        return f"targets[{self.target.id}]"

    @property
    def kind(self) -> str:
        return self.spec.kind

    def check_accelerated(
        self, platform_check: Callable[[str, ContainerImage, str, str], None] | None = None
    ) -> ContainerImage:
        return _check_accelerated(self, platform_check)


def check_target(cfg: BenchmarkConfig, t: TargetSpec, cat: dict[str, Any], out: _Checked) -> tuple[str, Price, Any]:
    """Every plan-time check of one target: (region, price, backend target). On a backend that runs
    on catalog hardware (BackendSpec.hardware), the shared checks of the instance type, model and
    precision first, then the backend's own (BackendSpec.plan), then the roofline and the $/hour;
    elsewhere the backend's own check alone, which prices the target itself."""
    spec = registry.get(cfg.backend_of(t))
    kind, where = spec.kind, f"targets[{t.id}]"
    w = cfg.workload
    need = _longest(w.input_tokens) + w.shared_prefix_tokens + _longest(w.output_tokens)
    ctx = _Context(spec, t, cfg.section(spec), cat, need, out)
    if not spec.hardware:
        resolved = spec.plan(ctx)
        if resolved.price is None:
            raise ConfigError(f"{where}: backend {kind!r} resolved no price (BackendSpec.plan must give one)")
        return resolved.region, resolved.price, resolved.backend
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
    resolved = spec.plan(ctx)
    out.roofline = roofline_tokens_per_s(inst, model, precision, out.tp)
    out.weight_gb = weight_gb_read_per_token(model, precision)
    out.weights_not_read = model.get("weights_not_read")
    price = resolved.price or _hourly_price(ctx, resolved.region, inst)
    out.passed(f"price in {resolved.region}", price.summary())
    return resolved.region, price, resolved.backend


def price_summary(price: Price) -> str:
    """A price and where it is from, as the plan's checks print it."""
    return price.summary()


# Executors whose tasks may run on different hosts: what one task leaves on its disk, the next
# may never see (Airflow's own names, as [core] executor gives them; a module path's last part).
DISTRIBUTED_EXECUTORS = (
    "CeleryExecutor",
    "KubernetesExecutor",
    "CeleryKubernetesExecutor",
    "LocalKubernetesExecutor",
    "EdgeExecutor",
    "AwsEcsExecutor",
    "AwsBatchExecutor",
    "AwsLambdaExecutor",
)


def check_distributed(run: RunPlan, executor: str | None, shared_disk: bool = False) -> None:
    """Refuse, in one line naming the fix, a run that cannot work when its tasks run on different
    hosts: a DuckDB warehouse file or a local results folder on a worker's disk, under an
    executor that spreads tasks over hosts. `executor`: Airflow's [core] executor (None outside
    Airflow: the CLI, `airflow dags test`: one process). `shared_disk`: every worker mounts the
    same data folder (LLMBENCH_SHARED_DISK), so both work."""
    names = [e.strip().rsplit(".", 1)[-1] for e in (executor or "").split(",") if e.strip()]
    spread = [n for n in names if n in DISTRIBUTED_EXECUTORS]
    if not spread or shared_disk:
        return
    if run.warehouse.kind == "duckdb":
        raise ConfigError(
            f"warehouse: a DuckDB file on a worker's disk cannot be published to and read by the "
            f"{spread[0]}'s workers on other hosts; publish to PostgreSQL or Redshift "
            "(warehouse: {kind: postgres, conn_id: ...}, or the Param warehouse_conn_id)"
        )
    if run.results_root is None or "://" not in run.results_root:
        raise ConfigError(
            f"results: a folder on a worker's disk ({run.results_root or 'the data folder'}) is not seen by the "
            f"{spread[0]}'s workers on other hosts; put the results in an object store "
            "(results: {uri: s3://bucket/prefix, conn_id: aws_default}, or LLMBENCH_RESULTS_URI)"
        )
