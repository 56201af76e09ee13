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
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from llmbench import paths


class ConfigError(ValueError):
    """A config or Param that cannot be run. The message is one line, meant for the user."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Workload(_Strict):
    input_tokens: int = Field(256, ge=1)
    output_tokens: int = Field(64, ge=1)
    concurrency: list[int] = Field(default_factory=lambda: [1, 2, 4, 8], min_length=1)
    requests_per_level: int = Field(16, ge=1)
    warmup_requests: int = Field(2, ge=0)
    request_timeout_s: float = Field(120.0, gt=0)
    seed: int = 0

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
    kind: Literal["duckdb"] = "duckdb"
    path: str | None = None  # default: <data folder>/warehouse.duckdb


class LocalServing(_Strict):
    """llama-server knobs. ctx_per_slot is each slot's share of the KV cache (tokens)."""

    name: str
    parallel: int = Field(1, ge=1, le=64)
    threads: int = Field(2, ge=1)
    ctx_per_slot: int = Field(1024, ge=128)
    max_lifetime_s: int = Field(7200, ge=60)  # a server outliving this is killed by its own guard
    extra_args: list[str] = Field(default_factory=list)  # further llama-server flags, passed as given


class TargetSpec(_Strict):
    id: str
    instance_type: str
    model: str
    precision: str
    serving: LocalServing
    usd_per_hour: float | None = Field(None, ge=0)  # overrides the catalog price

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}", v):
            raise ValueError("target id must be 1-63 characters of letters, digits, '_', '.', '-'")
        return v


class BenchmarkConfig(_Strict):
    name: str
    backend: Literal["local"]
    description: str = ""
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


def load_catalogs() -> tuple[dict[str, Any], dict[str, Any]]:
    instances = yaml.safe_load((paths.CATALOG_DIR / "instances.yaml").read_text())["instances"]
    models = yaml.safe_load((paths.CATALOG_DIR / "models.yaml").read_text())["models"]
    return instances, models


def make_run_key(config_name: str, logical_date: date | datetime | str) -> str:
    """One run key per config and logical date: re-running a date replaces that date's rows."""
    if isinstance(logical_date, str):
        logical_date = datetime.fromisoformat(logical_date)
    d = logical_date.date() if isinstance(logical_date, datetime) else logical_date
    return f"{config_name}-{d.isoformat()}"


def _apply_params(cfg: BenchmarkConfig, params: dict[str, Any]) -> BenchmarkConfig:
    """Overlay DAG Params (or CLI flags) on the config; a Param that contradicts it is refused."""
    data = cfg.model_dump()
    known = {"config", "targets", "concurrency", "requests_per_level"}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ConfigError(f"params: unknown params {unknown}; allowed: {sorted(known)}")
    if params.get("concurrency"):
        data["workload"]["concurrency"] = list(params["concurrency"])
    if params.get("requests_per_level") is not None:
        data["workload"]["requests_per_level"] = params["requests_per_level"]
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


def plan(
    config_name: str,
    logical_date: date | datetime | str,
    params: dict[str, Any] | None = None,
    runs_root: Path | None = None,
) -> dict[str, Any]:
    """Resolve a config + Params into the run and its targets (JSON-able), and write plan.json.

    Every target dict is self-contained: a task that receives it needs nothing else.
    """
    cfg = _apply_params(load_config(config_name), params or {})
    instances, models = load_catalogs()
    run_key = make_run_key(cfg.name, logical_date)
    # Each attempt at a run key gets its own folder, so re-running a date never overwrites
    # what an earlier attempt measured; the warehouse keeps only the latest publish.
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    run_dir = (runs_root or paths.runs_dir()) / run_key / stamp
    targets = []
    for t in cfg.targets:
        if t.instance_type not in instances:
            raise ConfigError(
                f"targets[{t.id}].instance_type: unknown {t.instance_type!r}; allowed: {sorted(instances)}"
            )
        if t.model not in models:
            raise ConfigError(f"targets[{t.id}].model: unknown {t.model!r}; allowed: {sorted(models)}")
        inst, model = instances[t.instance_type], models[t.model]
        if t.precision not in model["bytes_per_param"]:
            raise ConfigError(
                f"targets[{t.id}].precision: {t.precision!r} not in the catalog for {t.model}; "
                f"allowed: {sorted(model['bytes_per_param'])}"
            )
        need = cfg.workload.input_tokens + cfg.workload.output_tokens
        if need > min(t.serving.ctx_per_slot, model["context_length"]):
            raise ConfigError(
                f"targets[{t.id}].serving.ctx_per_slot: input + output tokens ({need}) exceed the "
                f"per-slot context ({t.serving.ctx_per_slot}); raise ctx_per_slot or shorten the workload"
            )
        usd_per_hour = t.usd_per_hour if t.usd_per_hour is not None else inst["usd_per_hour"]
        targets.append(
            {
                "run_key": run_key,
                "run_dir": str(run_dir),
                "target_id": t.id,
                "label": f"{t.instance_type} / {t.model} / {t.serving.name}",
                "backend": cfg.backend,
                "instance_type": t.instance_type,
                "model": t.model,
                "precision": t.precision,
                "serving_config": t.serving.name,
                "serving": t.serving.model_dump(),
                "workload": cfg.workload.model_dump(),
                "validation": cfg.validation.model_dump(),
                "slo": cfg.slo.model_dump(),
                "usd_per_hour": usd_per_hour,
                "price_source": "config" if t.usd_per_hour is not None else inst["price_source"],
                "price_date": None if t.usd_per_hour is not None else str(inst["price_date"]),
            }
        )
    run = {
        "run_key": run_key,
        "run_dir": str(run_dir),
        "config_name": cfg.name,
        "logical_date": str(logical_date)[:10],
        "planned_at": datetime.now(timezone.utc).isoformat(),
        "warehouse_path": cfg.warehouse.path,
        "targets": targets,
    }
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "plan.json").write_text(json.dumps(run, indent=2))
    return run
