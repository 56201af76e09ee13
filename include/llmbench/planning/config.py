"""Benchmark configs and catalogs, validated: what a config file may say (`BenchmarkConfig`, each
backend's section from the registry), loaded with bounds on YAML (no duplicate key, no alias bomb),
and the DAG Params applied to it. A config that cannot be run is refused with a single line
naming the field and the allowed values (`ConfigError`); planning.plan resolves what is left."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import InitErrorDetails

from llmbench import backends, paths
from llmbench.backends import registry
from llmbench.backends.registry import BackendSpec, ConfigError
from llmbench.schemas.capacity import CapacitySearch
from llmbench.schemas.slo import Slo
from llmbench.schemas.targets import (
    KNOWN_REGIONS,
    Budget,
    Price,
    PriceBasis,
    QualityOverride,
    QualitySettings,
    Reference,
    ResultsSettings,
    Serving,
    ValidationSettings,
    WarehouseSettings,
)
from llmbench.schemas.traffic import TrafficProfile, load_profile_file
from llmbench.schemas.workload import LengthDist, Workload, length_range

assert backends.BUILTIN_KINDS  # every built-in kind is registered before a config is read


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TargetSpec(_Strict):
    id: str
    backend: str | None = None  # a registered kind; default: the config's `backend`
    instance_type: str | None = None  # required on a hardware backend (BackendSpec.hardware)
    model: str
    precision: str | None = None  # required on a hardware backend
    serving: Serving
    usd_per_hour: float | None = Field(None, ge=0)  # overrides the catalog price (openai: the only price)
    # Where usd_per_hour comes from and as of when (a quote, a reserved price, the seed's figure):
    # frozen on the rows with it, as the catalog's and the Pricing API's sources are. Default "config".
    price_source: str | None = Field(None, min_length=1, max_length=500)
    price_date: date | None = None
    # Why no source prices this target (no catalog or Pricing API price for its type and region):
    # it is then measured without $ figures instead of refused. A price wins once one exists.
    unpriced: str | None = Field(None, min_length=1)
    # What this target's workload changes from the config's (issue 28: one config, one target per
    # workload kind on the same server): merged over `workload:` and validated as one (workload_of).
    workload: dict[str, Any] | None = None
    # This target's changes to the config's quality section (its baseline, a temperature, ...).
    quality: QualityOverride | None = None

    @field_validator("backend")
    @classmethod
    def _kind(cls, v: str | None) -> str | None:
        return _registered(v)

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


def _registered(kind: str | None) -> str | None:
    if kind is not None and kind not in registry.kinds():
        raise ValueError(f"unknown backend {kind!r}; allowed: {list(registry.kinds())}")
    return kind


def _known_region(section: str, region: str) -> None:
    if region not in KNOWN_REGIONS:
        raise ValueError(f"{section}.region: unknown region {region!r}; allowed: {sorted(KNOWN_REGIONS)}")


class BenchmarkConfig(_Strict):
    name: str
    backend: str | None = None  # the backend of every target that names none
    description: str = ""
    # Each backend's own section (BackendSpec.section_key -> its settings model), read from the
    # top-level key of that name (_sections); _apply_params puts them back there.
    sections: dict[str, Any] = Field(default_factory=dict)
    workload: Workload = Field(default_factory=Workload)
    validation: ValidationSettings = Field(default_factory=ValidationSettings)
    quality: QualitySettings | None = None  # the correctness stage (absent: none)
    slo: Slo = Field(default_factory=Slo)
    # the capacity search after each hourly target's sweep (absent: none) and the traffic profile
    # whose cost on each path the run publishes (traffic_cost; absent: none)
    capacity: CapacitySearch | None = None
    traffic: TrafficProfile | None = None
    warehouse: WarehouseSettings = Field(default_factory=WarehouseSettings)
    results: ResultsSettings = Field(default_factory=ResultsSettings)  # where raw results go (llmbench.store)
    budget: Budget | None = None  # above it, a run waits for a person's approval (the DAG's budget gate)
    targets: list[TargetSpec] = Field(min_length=1)
    price_basis: PriceBasis = "output"  # $/M per output token, or per total (input + output) token
    reference: list[Reference] = Field(default_factory=list)  # what the articles state or imply

    @field_validator("traffic", mode="before")
    @classmethod
    def _traffic_file(cls, v: Any) -> Any:
        """`traffic: {file: week.yaml}`: the profile's fields from that file (relative to the
        config folder), the mapping's own keys over them."""
        return load_profile_file(v, paths.CONFIG_DIR)

    @model_validator(mode="wrap")
    @classmethod
    def _sections(cls, data: Any, handler: Any) -> BenchmarkConfig:
        """Each registered backend's top-level section, validated by its settings model (errors
        located at `<section>.<field>`, as for any field)."""
        if not isinstance(data, dict):
            return handler(data)
        data = dict(data)
        if "sections" in data:  # not a key of a config file: each section is a top-level key of its own
            raise ValidationError.from_exception_data(
                cls.__name__, [InitErrorDetails(type="extra_forbidden", loc=("sections",), input=data["sections"])]
            )
        sections: dict[str, Any] = {}
        errors: list[InitErrorDetails] = []
        for spec in registry.specs():
            key = spec.section_key
            if key is None or data.get(key) is None:
                data.pop(key or "", None)
                continue
            assert spec.settings is not None
            try:
                sections[key] = spec.settings.model_validate(data.pop(key))
            except ValidationError as e:
                errors += [
                    InitErrorDetails(
                        type=err["type"], loc=(key, *err["loc"]), input=err["input"], ctx=err.get("ctx", {})
                    )
                    for err in e.errors()
                ]
        if errors:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        return handler({**data, "sections": sections})

    def workload_of(self, t: TargetSpec) -> Workload:
        """A target's workload: the config's, with the target's own `workload:` keys over it."""
        if not t.workload:
            return self.workload
        try:
            return Workload.model_validate({**self.workload.model_dump(exclude_defaults=True), **t.workload})
        except ValidationError as e:
            raise ConfigError(_one_line(e, f"targets[{t.id}].workload")) from None

    def section(self, spec: BackendSpec) -> Any:
        """A backend's config section (its settings model), or None."""
        return self.sections.get(spec.section_key) if spec.section_key else None

    @field_validator("backend")
    @classmethod
    def _kind(cls, v: str | None) -> str | None:
        return _registered(v)

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
            if t.quality is None:
                continue
            if self.quality is None:
                raise ValueError(f"target {t.id!r}: a `quality` override needs the config's quality section")
            if t.quality.baseline is not None and t.quality.baseline not in ids:
                raise ValueError(f"target {t.id!r}: quality.baseline: unknown target id {t.quality.baseline!r}")
            try:  # the merged section must itself be valid
                t.quality.applied_to(self.quality)
            except ValidationError as e:
                why = e.errors()[0]["msg"].removeprefix("Value error, ")
                raise ValueError(f"target {t.id!r}: quality: {why}") from None
        for t in self.targets:
            kind = self.backend_of(t)
            if not kind:
                raise ValueError(
                    f"targets[{t.id}].backend: no backend; set `backend` on the target or at the top "
                    f"(allowed: {list(registry.kinds())})"
                )
            spec = registry.get(kind)
            if t.serving.kind not in spec.serving:
                raise ValueError(
                    f"targets[{t.id}].serving.kind {t.serving.kind!r} does not run on backend {kind!r}; "
                    f"allowed: {spec.serving}"
                )
            if spec.hardware:
                missing = [f for f in ("instance_type", "precision") if getattr(t, f) is None]
                if missing:
                    raise ValueError(f"targets[{t.id}].{missing[0]}: required on backend {kind!r}")
        used = {self.backend_of(t) for t in self.targets}
        for spec in registry.specs():
            key = spec.section_key
            if key is None:
                continue
            section = self.sections.get(key)
            if spec.kind in used and section is None:
                raise ValueError(f"backend {spec.kind} needs a `{key}:` section ({spec.section_needs})")
            region = getattr(section, "region", None)
            if isinstance(region, str):
                _known_region(key, region)
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


# A config expands to a few thousand YAML nodes; anchors and aliases are allowed, but a document
# whose aliases expand beyond this (an "alias bomb": 7 KB that validates as gigabytes) is refused.
MAX_CONFIG_NODES = 100_000
_MERGE_TAG = "tag:yaml.org,2002:merge"


class _ConfigLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (YAML would keep the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG or not isinstance(key_node, yaml.ScalarNode):
                continue
            key = self.construct_object(key_node)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise ConfigError(f"duplicate key {key!r} at line {line} (first at line {seen[key]})")
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _expanded_nodes(node: yaml.Node, memo: dict[int, int]) -> int:
    """How many nodes the document has once every alias is expanded (shared nodes counted each
    time they are used; each distinct node's size computed once, so this is cheap)."""
    if id(node) in memo:
        return memo[id(node)]
    memo[id(node)] = 1  # a recursive alias counts once (construction refuses it anyway)
    if isinstance(node, yaml.SequenceNode):
        n = 1 + sum(_expanded_nodes(v, memo) for v in node.value)
    elif isinstance(node, yaml.MappingNode):
        n = 1 + sum(_expanded_nodes(k, memo) + _expanded_nodes(v, memo) for k, v in node.value)
    else:
        n = 1
    memo[id(node)] = n
    return n


def load_yaml(text: str) -> Any:
    """A user's YAML, safely: no Python objects (SafeLoader), no key given twice in a mapping, and
    at most MAX_CONFIG_NODES nodes once aliases are expanded. ConfigError or yaml.YAMLError."""
    loader = _ConfigLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        n = _expanded_nodes(node, {})
        if n > MAX_CONFIG_NODES:
            raise ConfigError(f"its aliases expand to {n} YAML nodes (at most {MAX_CONFIG_NODES})")
        return loader.construct_document(node)
    finally:
        loader.dispose()


def load_config(name_or_path: str) -> BenchmarkConfig:
    path = config_path(name_or_path)
    try:
        raw = load_yaml(path.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(f"{path.name}: malformed YAML: {str(e).splitlines()[0]}") from None
    except ConfigError as e:
        raise ConfigError(f"{path.name}: {e}") from None
    except RecursionError:
        raise ConfigError(f"{path.name}: nested too deeply") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path.name}: expected a mapping at the top level")
    _dataset_beside(raw, path.parent)
    try:
        return BenchmarkConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(_one_line(e, path.name)) from None


def _dataset_beside(raw: dict[str, Any], folder: Path) -> None:
    """A relative workload.dataset.path (or trace.path, rate_shape.file; the config's or a target's) is relative to
    the config's own folder (where a user keeps their config and their data together), made
    absolute here, so the plan names the file it read."""
    workloads = [raw.get("workload")] + [t.get("workload") for t in raw.get("targets") or [] if isinstance(t, dict)]
    for w in workloads:
        for key, name in (("dataset", "path"), ("trace", "path"), ("rate_shape", "file")):
            f = w.get(key) if isinstance(w, dict) else None
            if isinstance(f, dict) and isinstance(f.get(name), str) and not Path(f[name]).is_absolute():
                f[name] = str((folder / f[name]).resolve())


def load_catalogs() -> dict[str, Any]:
    """instances, models, containers and native_precisions, from catalog/*.yaml."""
    inst = yaml.safe_load((paths.CATALOG_DIR / "instances.yaml").read_text())
    models = yaml.safe_load((paths.CATALOG_DIR / "models.yaml").read_text())["models"]
    return {
        **inst,  # instances, containers, native_precisions, and any table a backend reads (its AMIs)
        "models": models,
        "apis": yaml.safe_load((paths.CATALOG_DIR / "api_prices.yaml").read_text())["apis"],
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
    data.update(data.pop("sections"))  # each backend's section back under its own key
    known = {"config", "targets", "concurrency", "requests_per_level", "warehouse_conn_id", "budget_usd"}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ConfigError(f"params: unknown params {unknown}; allowed: {sorted(known)}")
    if params.get("concurrency"):
        data["workload"]["concurrency"] = list(params["concurrency"])
    if params.get("requests_per_level") is not None:
        data["workload"]["requests_per_level"] = params["requests_per_level"]
    if params.get("budget_usd") is not None:  # this run's budget, over the config's
        data["budget"] = {"max_usd": params["budget_usd"]}
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
        # Likewise a quality baseline left out: the targets are graded against their own minimum only.
        for q in (data.get("quality"), *(t.get("quality") for t in data["targets"])):
            if q and q.get("baseline") not in (None, *wanted):
                q["baseline"] = q["max_drop_vs_baseline"] = None
    try:
        return BenchmarkConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError(_one_line(e, "params")) from None
