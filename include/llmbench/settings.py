"""Every LLMBENCH_* environment variable, declared once: its name, type, default and meaning.

`settings()` reads the environment each time it is called (a fresh, validated `Settings`: cheap),
so a variable set after import (a test's monkeypatch, a task's environment) is seen; no other
module reads LLMBENCH_* from the environment (tests/unit/test_settings.py checks it). A field
`name` is the variable LLMBENCH_<NAME>; an empty variable counts as unset. A value that cannot be
used is refused in one line naming the variable (SettingsError, exit status 2 in the CLI).
`llmbench settings` lists them with their values; docs/operations.md#settings is the same table.

A few are read by the shell scripts, not by Python (their description names the script); they
are here so that every variable is listed in one place.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, Json, ValidationError, field_validator

from llmbench.errors import SettingsError

PREFIX = "LLMBENCH_"


# About a thousand years: beyond it a date arithmetic overflows (and "all" already keeps everything).
MAX_RAW_RESULTS_WEEKS = 52_000


def parse_weeks(raw: str) -> int:
    """A retention in weeks: a whole number from 1 to MAX_RAW_RESULTS_WEEKS (the setting's and
    `llmbench prune --weeks`' rule)."""
    if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= MAX_RAW_RESULTS_WEEKS:
        raise ValueError(f"{raw[:40]!r} is not a whole number of weeks from 1 to {MAX_RAW_RESULTS_WEEKS}")
    return int(raw)


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    home: Path | None = Field(
        None,
        description="the data folder: runs, warehouse.duckdb, prices (unset: .llmbench/ at a checkout's root; "
        "~/.llmbench for an installed wheel)",
    )
    shared_disk: bool = Field(
        False,
        description="every Airflow worker mounts the same data folder (one host, or a shared volume): a local "
        "results folder and a DuckDB warehouse are then allowed under a distributed executor",
    )
    local_bind: str = Field(
        "127.0.0.1",
        description="where a local target's llama-server listens and is reached: 127.0.0.1 (this host only), an "
        "address of this host, or 'auto' (the address its hostname resolves to) for workers on several hosts, "
        "which also gives it a per-deploy API key and a keeper that stops it from any host",
    )
    results_uri: str | None = Field(
        None,
        description="the results store: a folder, or s3://bucket/prefix (unset: the data folder; a config's "
        "results.uri wins)",
    )
    cache: Path | None = Field(
        None, description="what is built or fetched once: llama-server, the GGUF model (unset: ~/.cache/llmbench)"
    )
    config_dir: Path | None = Field(
        None,
        description="where configs named without a path are found (unset: the shipped ones, llmbench/config/ in the "
        "package); read at import",
    )
    warehouse_lock_wait_s: float = Field(
        120.0, ge=0, description="seconds a publish waits for a DuckDB file another process holds; read at import"
    )
    raw_results_weeks: int | None = Field(
        None, description="keep raw results (attempt folders) this many whole weeks (unset or 'all': for ever)"
    )
    llama_server: Path | None = Field(
        None, description="run this llama-server binary, not the cache's bin/llama-server (no smoke-check mark needed)"
    )
    local_model: Path | None = Field(None, description="serve this GGUF file instead of the cached model")
    chaos: Json[list[dict[str, Any]]] | None = Field(
        None, description="faults to inject, a JSON list (fire drills, fault-matrix tests; include/llmbench/chaos.py)"
    )
    retries: int = Field(
        3,
        ge=0,
        le=20,
        description="retries of every DAG task safe to run again (all but plan, deploy and the budget approval); "
        "at parse",
    )
    retry_delay_s: float = Field(
        30.0, gt=0, description="the first retry's delay in seconds, doubled for each next (at most 10 min); at parse"
    )
    budget_approval_timeout_h: float = Field(
        24.0, gt=0, description="hours a run over its budget waits for a person's approval, then fails; at parse"
    )
    schedule: str = Field("@weekly", description="the llm_benchmark DAG's schedule; 'none': triggered runs only")
    deadline_h: float = Field(
        36.0,
        gt=0,
        description="hours after a llm_benchmark run was queued by which it should have finished: later, the "
        "Notifier alerts (a DeadlineAlert, on the triggerer); at parse",
    )
    sweep_queue: str | None = Field(
        None,
        description="the executor queue the sweep tasks (the load generator) run on, for workers sized for it "
        "(unset: the default queue)",
    )
    start_date: str = Field(
        "2026-01-01", description="the first date the DAG's schedule runs (a future date: backfills and triggers only)"
    )
    llama_cmake_flags: str | None = Field(
        None, description="scripts/get_local_server.sh: extra CMake flags for the llama-server build (in its cache key)"
    )
    pypi_simple: str = Field(
        "https://pypi.org/simple",
        description="scripts/get_local_server.sh: the package index llama-server's sources and wheel come from",
    )
    bin: Path = Field(Path(".venv/bin"), description="scripts/run_dag.sh: where the airflow and python commands are")
    run_token: str | None = Field(
        None,
        description="scripts/run_dag.sh: set by it on every process of one make run (how a stop finds them all)",
    )
    image: str = Field(
        "llmbench-airflow:latest", description="docker-compose.yaml: the Airflow image every service of the stack runs"
    )
    compose_test: bool = Field(
        False, description="tests/compose: collect the stack's tests (scripts/compose_test.sh sets it, the stack up)"
    )

    @field_validator("raw_results_weeks", mode="before")
    @classmethod
    def _weeks(cls, v: Any) -> Any:
        if not isinstance(v, str):
            return v
        raw = v.strip()
        if raw in ("", "all"):
            return None
        try:
            return parse_weeks(raw)
        except ValueError as e:
            raise ValueError(f"{e}, or 'all'") from None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, fields: Iterable[str] = ()) -> Settings:
        """The settings the environment (default: os.environ, now) gives: of `fields` only when
        named (the others keep their defaults), else of every variable. SettingsError (one line,
        naming the variable) if one of them cannot be used."""
        env = os.environ if environ is None else environ
        names = list(fields) or list(ENV_VARS)
        unknown = [n for n in names if n not in ENV_VARS]
        if unknown:
            raise KeyError(f"no such setting: {unknown}")
        given = {name: env[ENV_VARS[name]] for name in names if env.get(ENV_VARS[name], "").strip()}
        try:
            return cls.model_validate(given)
        except ValidationError as e:
            err = e.errors()[0]
            var = ENV_VARS[str(err["loc"][0])] if err["loc"] else PREFIX
            raise SettingsError(f"{var}: {err['msg'].removeprefix('Value error, ')}") from None


def env_var(field: str) -> str:
    """The environment variable of a Settings field: LLMBENCH_<FIELD>."""
    return PREFIX + field.upper()


ENV_VARS: dict[str, str] = {name: env_var(name) for name in Settings.model_fields}


def settings(*fields: str) -> Settings:
    """The LLMBENCH_* settings as the environment gives them now. Name the fields you read
    (`settings("home").home`): only their variables are validated, so an unusable variable fails
    where it is used, not everywhere; with no names, every variable is."""
    return Settings.from_env(fields=fields)


def _default(field: str) -> str:
    default = Settings.model_fields[field].default
    return "unset" if default is None else str(default)


def describe(environ: Mapping[str, str] | None = None) -> list[tuple[str, str, str]]:
    """(variable, value, description) of every setting, as the environment (default: os.environ)
    gives them: a set variable as written, else its default; SettingsError if one is unusable."""
    env = os.environ if environ is None else environ
    current = Settings.from_env(env)
    rows = []
    for name, info in Settings.model_fields.items():
        if name in current.model_fields_set:
            value = env[ENV_VARS[name]]
        else:
            value = f"{_default(name)} (default)" if info.default is not None else "unset"
        rows.append((ENV_VARS[name], value, info.description or ""))
    return rows


def markdown_table() -> str:
    """The settings as docs/operations.md#settings tabulates them (a test checks the two agree)."""
    lines = ["| variable | default | meaning |", "|---|---|---|"]
    for name, info in Settings.model_fields.items():
        default = f"`{info.default}`" if info.default is not None else "unset"
        lines.append(f"| `{ENV_VARS[name]}` | {default} | {info.description} |")
    return "\n".join(lines)
