"""One function per DAG task, and nothing else. The DAG file only wires these; each takes and
returns small JSON-able references (targets, handles, paths), never frames, and validates the
target it receives into `ResolvedTarget` once, at its top. Backends are reached only through
their contract (llmbench.backends.base.Backend); the tables are built in llmbench.results.tables.

Raw results live under the run folder:
  <run_dir>/plan.json
  <run_dir>/<target_id>/{handle.json, events.jsonl, requests.jsonl, requests.parquet,
                         levels.parquet, validation.json, quality.jsonl, quality.json,
                         quality_validation.json, teardown.json, llama-server.log}
  <run_dir>/tables/<table>.parquet          (what publish writes to the warehouse)
  <run_dir>/report.html
and, built from the warehouse after each publish, <data folder>/history.html.
Every stage appends to events.jsonl, so a failed target says where and why, whichever process
ran it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from llmbench import chaos
from llmbench.backends import get_backend
from llmbench.backends.base import Backend, DeployError, Handle, seconds_since
from llmbench.errors import LlmbenchError
from llmbench.results.events import record_event, record_failure, stage
from llmbench.results.tables import build_tables, load_tables
from llmbench.schemas.targets import ResolvedTarget, RunPlan

log = logging.getLogger("llmbench")

Target = ResolvedTarget | dict[str, Any]  # what a task receives: the model, or its JSON from XCom


class TargetFailed(LlmbenchError, RuntimeError):
    """Raised by check: at least one target failed or failed validation."""


Mode = str  # "measure": deploy and sweep; "reprocess": recompute stored raw results (llmbench.results.reprocess)
MODES = ("measure", "reprocess")


def plan(config: str, logical_date: Any, params: dict[str, Any], mode: Mode = "measure") -> list[dict[str, Any]]:
    """The run's targets. measure: a new plan (a new attempt folder). reprocess: the targets of
    the run key's latest stored attempt, whose raw results are checked to be all there first
    (RawResultsMissing, one line, otherwise); nothing is planned anew and nothing will deploy."""
    if mode not in MODES:
        raise ValueError(f"mode: {mode!r}; allowed: {list(MODES)}")
    if mode == "measure":
        from llmbench.planning.plan import plan as make_plan

        return [t.model_dump(mode="json") for t in make_plan(config, logical_date, params).targets]
    from llmbench import paths
    from llmbench.planning.config import load_config, make_run_key
    from llmbench.results.reprocess import RawResultsMissing, check_raw_results, latest_attempt

    run_key = make_run_key(load_config(config).name, logical_date)
    attempt = latest_attempt(run_key, paths.runs_dir())
    if attempt is None:
        raise RawResultsMissing(f"{run_key}: no stored run with tables under {paths.runs_dir() / run_key}")
    return [t.model_dump(mode="json") for t in check_raw_results(attempt).targets]


def targets_on(targets: list[Target], kind: str, mode: Mode = "measure") -> list[dict[str, Any]]:
    """The run's targets that a backend kind serves (the DAG fans out one mapped group per kind);
    none in a reprocess, which deploys nothing."""
    if mode == "reprocess":
        return []
    return [t.model_dump(mode="json") for t in map(ResolvedTarget.of, targets) if t.backend_kind == kind]


def run_dir_of(targets: list[Target]) -> str:
    """The run folder of a planned run (every planned target carries it; a plan has >= 1)."""
    return ResolvedTarget.of(targets[0]).run_dir


def _backend(target: ResolvedTarget, backend_kwargs: dict[str, Any]) -> Backend:
    # backend_kwargs: what the caller's platform provides a backend (BackendSpec.platform_kwargs:
    # an AWS session and endpoint override, an API key), built by the DAG from Airflow connections.
    return get_backend(target.backend_kind, **backend_kwargs)


def _progress(target: ResolvedTarget) -> Callable[[str], None]:
    return lambda msg: log.info("%s: %s", target.target_id, msg)


# ---- per-target tasks ------------------------------------------------------------------------


def _earlier_attempts(target: ResolvedTarget) -> list[Path]:
    """Handles of this target left by earlier attempts of the same run key that never reached
    teardown: a worker killed mid-run (SIGKILL, lost node) leaves exactly these."""
    return sorted(
        p
        for p in Path(target.run_dir).parent.glob(f"*/{target.target_id}/handle.json")
        if p.parent != target.dir and not (p.parent / "teardown.json").exists()
    )


def reap_earlier_attempts(target: ResolvedTarget, backend: Backend) -> list[str]:
    """Tear down what earlier attempts of this run key and target left behind, before deploying
    again: a re-run after a killed worker then neither collides with (a managed endpoint's name is
    derived from the run key) nor runs beside (a local server) its predecessor."""
    reaped = []
    for p in _earlier_attempts(target):
        outcome = backend.teardown(json.loads(p.read_text()))
        (p.parent / "teardown.json").write_text(
            json.dumps({**outcome.to_json(), "reaped_by": str(target.dir)}, indent=2)
        )
        log.warning("%s: removed what an earlier attempt left running (%s)", target.target_id, p.parent)
        reaped.append(str(p.parent))
    return reaped


def deploy(target: Target, **backend_kwargs: Any) -> Handle:
    t = ResolvedTarget.of(target)
    with stage(t, "deploy"):
        backend = _backend(t, backend_kwargs)
        reaped = reap_earlier_attempts(t, backend)
        if reaped:
            record_event(t, "deploy", "reaped", attempts=reaped)
        handle = backend.deploy(t, t.dir)
        (t.dir / "handle.json").write_text(json.dumps(handle, indent=2))
        # the cold start's start (metrics.time_to_ready_s): the create call, as the backend stamped it
        record_event(
            t, "deploy", "created", deployed_at=handle.get("deployed_at"), creates_endpoint=backend.creates_endpoint
        )
        where = next((handle[k] for k in ("base_url", "endpoint_name", "instance_id", "model_id") if handle.get(k)), "")
        log.info("deployed %s: %s", t.label, where)
        return handle


def deploy_within_capacity(target: Target, **backend_kwargs: Any) -> Handle | None:
    """deploy, unless the backend says its capacity (a quota) is in use: then None, "not now",
    and the DAG asks again later without holding a worker slot. Callers serialise these calls
    (one pool slot), so two targets cannot both take the last unit of quota."""
    t = ResolvedTarget.of(target)
    busy = _backend(t, backend_kwargs).capacity_available(t)
    if busy:
        log.info("%s: %s; waiting for capacity", t.target_id, busy)
        return None
    return deploy(t, **backend_kwargs)


def check_ready(target: Target, handle: Handle, **backend_kwargs: Any) -> bool:
    """One readiness look: True when ready, False while starting; raises when the endpoint failed
    or its ready timeout has passed since deploy. Only the outcome is an event."""
    t = ResolvedTarget.of(target)
    try:
        backend = _backend(t, backend_kwargs)
        look = backend.status(handle)
        waited_s = seconds_since(handle["deployed_at"])
        timeout_s = backend.ready_timeout_s(t)
        if look.state == "failed":
            raise DeployError(look.detail or "endpoint failed")
        if look.state != "ready" and waited_s > timeout_s:
            raise DeployError(f"{t.label}: not ready: {look.detail or look.state} after {timeout_s:.0f}s")
    except BaseException as e:
        record_failure(t, "wait_ready", e)
        raise
    if look.state == "ready":
        record_event(t, "wait_ready", "succeeded", waited_s=waited_s)
    return look.state == "ready"


def wait_ready(target: Target, handle: Handle, **backend_kwargs: Any) -> None:
    t = ResolvedTarget.of(target)
    with stage(t, "wait_ready"):
        backend = _backend(t, backend_kwargs)
        backend.wait_ready(handle, backend.ready_timeout_s(t))


def warm_up(target: Target, handle: Handle, **backend_kwargs: Any) -> dict[str, Any]:
    from llmbench.loadgen.sweep import run_warmup

    t = ResolvedTarget.of(target)
    with stage(t, "warm_up"):
        backend = _backend(t, backend_kwargs)
        record_engine_version(t, backend, handle)
        endpoint = backend.endpoint(handle)
        return run_warmup(endpoint, t.workload, progress=_progress(t), out_dir=t.dir)


SERVER_FILE = "server.json"  # what the ready server said about itself (targets.engine_version)


def record_engine_version(target: ResolvedTarget, backend: Backend, handle: Handle) -> dict[str, Any]:
    """Ask the ready server its engine version (Backend.engine_version), once, before its first
    request; written to <target dir>/server.json. Best effort: a server that does not answer is
    NULL in the table, never a failed stage."""
    try:
        info = backend.engine_version(handle).to_json()
    except Exception as e:  # noqa: BLE001 (provenance must not fail a benchmark)
        info = {"engine_version": None, "engine_version_source": f"not read: {type(e).__name__}: {e}"}
    if handle.get("container_image"):  # what the backend deployed (targets.container_image)
        info["container_image"] = handle["container_image"]
    info["read_at"] = datetime.now(UTC).isoformat()
    (target.dir / SERVER_FILE).write_text(json.dumps(info, indent=2))
    return info


def quality(target: Target, handle: Handle, **backend_kwargs: Any) -> dict[str, Any]:
    """The correctness suites of the config's `quality` section (llmbench.quality), after warm-up
    and before the timed levels; a no-op without one. Writes quality.jsonl and quality.json; a
    low score is not a failure here: the gate is judged over the run (price_performance), since it
    may compare the target with the run's baseline target."""
    from llmbench.quality.runner import run_quality

    t = ResolvedTarget.of(target)
    if t.quality is None:
        return {"skipped": "the config has no quality section"}
    with stage(t, "quality"):
        endpoint = _backend(t, backend_kwargs).endpoint(handle)
        return run_quality(
            endpoint, t.quality, t.dir, progress=_progress(t), max_response_bytes=t.workload.max_response_bytes
        )


def sweep(target: Target, handle: Handle, **backend_kwargs: Any) -> dict[str, str]:
    from llmbench.loadgen.sweep import run_sweep

    t = ResolvedTarget.of(target)
    with stage(t, "sweep"):
        endpoint = _backend(t, backend_kwargs).endpoint(handle)
        result = run_sweep(
            endpoint, t.workload, t.dir, slo=t.slo, progress=_progress(t), record_hook=chaos.record_hook(t.target_id)
        )
        if t.capacity is not None:
            capacity_search(t, endpoint, result.levels)
        return {"requests_path": str(result.requests_path), "levels_path": str(result.levels_path)}


def capacity_search(t: ResolvedTarget, endpoint: Any, swept: list[dict[str, Any]]) -> None:
    """The capacity search after the sweep (loadgen.capacity): its probes become levels of the
    target (levels.parquet, requests.*), its result <target dir>/capacity.json."""
    import dataclasses

    from llmbench.loadgen.capacity import append_probe_levels, run_capacity_search

    assert t.capacity is not None
    result, rows = run_capacity_search(
        endpoint, t.workload, t.dir, t.slo, t.capacity, t.validation.max_error_rate, _progress(t), swept
    )
    append_probe_levels(t.dir, rows)
    (t.dir / "capacity.json").write_text(json.dumps(dataclasses.asdict(result), indent=1))


def validate(target: Target, swept: dict[str, str]) -> dict[str, Any]:
    from llmbench.results.validation import validate_results

    t = ResolvedTarget.of(target)
    with stage(t, "validate"):
        outcome = validate_results(
            Path(swept["requests_path"]),
            Path(swept["levels_path"]),
            t.workload.level_concurrencies(),
            t.validation.max_error_rate,
            t.dir / "validation.json",
            t.workload.arrival_rates_rps,
        )
        if not outcome["validation_passed"]:
            log.warning("validation failed for %s: %s", t.label, "; ".join(outcome["failures"]))
        return {"validation_passed": outcome["validation_passed"], "path": outcome["path"]}


def teardown(target: Target, handle: Handle | None, **backend_kwargs: Any) -> dict[str, Any]:
    """Delete what deploy created. A missing handle (deploy never returned) is read from disk."""
    t = ResolvedTarget.of(target)
    with stage(t, "teardown"):
        if handle is None:
            p = t.dir / "handle.json"
            handle = json.loads(p.read_text()) if p.exists() else None
        if handle is None:
            return {"endpoint_seconds": None}
        outcome = _backend(t, backend_kwargs).teardown(handle).to_json()
        (t.dir / "teardown.json").write_text(json.dumps(outcome, indent=2))
        return outcome


# ---- run-level tasks -------------------------------------------------------------------------


def price_performance(
    run_dir: str,
    mode: Mode = "measure",
    config: str | None = None,
    prices: str = "frozen",
    params: dict[str, Any] | None = None,
) -> str:
    """Assemble every table of the run from the raw results and prices (llmbench.results.tables); write
    them under <run_dir>/tables/ and return run_dir. Runs whatever happened to the targets: a
    failed target is a row too. reprocess: recompute the stored run's levels and validation first,
    with today's code and config (llmbench.results.reprocess.reprocess_run; prices frozen or current)."""
    if mode == "reprocess":
        from llmbench.results.reprocess import reprocess_run

        reprocess_run(run_dir, config, prices, params)
        log.info("reprocessed %s (prices: %s)", run_dir, prices)
    else:
        build_tables(run_dir)
    return run_dir


def publish(run_dir: str, dsn: str | None = None) -> dict[str, Any]:
    """Write the run's tables to the warehouse the config names: the DuckDB file (default), or
    PostgreSQL through `dsn` (the DAG builds it from the config's Airflow connection). Returns
    where (redacted: no credentials) and the rows written, plus `asset_extra`: what the published
    Asset carries so that its consumers read the same warehouse."""
    from llmbench import paths, warehouse

    settings = RunPlan.load(run_dir).warehouse
    if settings.kind in ("postgres", "redshift"):
        if not dsn:
            raise ValueError(f"warehouse kind {settings.kind} needs a DSN (connection {settings.conn_id!r})")
        target: str = dsn
        extra = {"kind": settings.kind, "conn_id": settings.conn_id}
    else:
        target = str(settings.path or paths.default_warehouse_path())
        extra = {"kind": "duckdb", "path": target}
    frames = load_tables(run_dir)
    ensure_report(run_dir, frames)  # runs.report_path names it: it exists before the row does
    written = warehouse.publish(frames, target)
    where = warehouse.redact(target)
    log.info("published %s to %s: %s", frames["runs"]["run_key"].iloc[0], where, written)
    return {"warehouse": where, "rows": written, "asset_extra": extra}


def report(run_dir: str) -> str:
    from llmbench.results.report import write_report

    return str(write_report(load_tables(run_dir), Path(run_dir) / "report.html"))


def history(target: Path | str | None = None, out: Path | str | None = None) -> str:
    """Write the history page of the warehouse `target` (default: the data folder's DuckDB file)
    to `out` (default <data folder>/history.html); after each publish (the dashboard DAG) and on
    demand (`llmbench history`). Returns its path."""
    from llmbench import paths
    from llmbench.results.history import write_history

    page = Path(out) if out else paths.data_home() / "history.html"
    return str(write_history(page, target))


def ensure_report(run_dir: str, frames: dict[str, Any] | None = None) -> Path:
    """The run's report.html, written from its tables if it is not there yet: every publish
    records runs.report_path, so the report it names is written first (the DAG's report task
    writes it again, after the publish)."""
    from llmbench.results.report import write_report

    path = Path(run_dir) / "report.html"
    if not path.exists():
        write_report(frames if frames is not None else load_tables(run_dir), path)
    return path


def prune_raw_results() -> str:
    """Apply the data folder's retention (llmbench.results.retention: LLMBENCH_RAW_RESULTS_WEEKS; by
    default raw results are kept for ever, since a reprocess recomputes history from them). Never
    fails the run: a refused setting prunes nothing and an unreadable attempt is skipped, in one
    logged line each."""
    from llmbench.results.retention import RAW_RESULTS_WEEKS_ENV, prune_raw_results, raw_results_weeks

    try:
        weeks = raw_results_weeks()
    except ValueError as e:
        log.warning("retention: nothing pruned: %s", e)
        return f"nothing pruned: {e}"
    if weeks is None:
        return f"raw results are kept for ever ({RAW_RESULTS_WEEKS_ENV} unset)"
    removed = prune_raw_results(weeks)
    for attempt in removed:
        log.info("removed raw results older than %d week(s): %s", weeks, attempt)
    return f"removed {len(removed)} attempt folder(s) planned more than {weeks} week(s) ago"


def check(run_dir: str) -> str:
    """Fail loudly, after everything was published, if any target failed, failed validation or
    failed the quality gate."""
    targets = load_tables(run_dir)["targets"]
    problems = []
    for t in targets.to_dict("records"):
        if t["status"] != "succeeded":
            problems.append(f"{t['label']}: failed at {t['failed_stage'] or 'an upstream task'}: {t['error']}")
            continue
        if t["validation_passed"] is False:
            problems.append(f"{t['label']}: validation failed (see {t['raw_dir']}/validation.json)")
        if t.get("quality_passed") is False:  # checked apart: a target can fail both
            problems.append(f"{t['label']}: quality gate failed (see {t['raw_dir']}/quality_validation.json)")
    if problems:
        raise TargetFailed(f"{len(problems)} of {len(targets)} target(s) failed: " + " | ".join(problems))
    return f"all {len(targets)} target(s) succeeded and passed validation"
