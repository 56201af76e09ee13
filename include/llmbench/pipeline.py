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
from llmbench.results.union import mark_published
from llmbench.results.workspace import (
    attempt_handles,
    earlier_attempts,
    earlier_handles_in_store,
    load_plan,
    remote_store,
    run_folder,
    working,
)
from llmbench.schemas.asset import AssetWarehouse, PublishedAsset
from llmbench.schemas.targets import ResolvedTarget, RunPlan

log = logging.getLogger("llmbench")

Target = ResolvedTarget | dict[str, Any]  # what a task receives: the model, or its JSON from XCom


class TargetFailed(LlmbenchError, RuntimeError):
    """Raised by check: at least one target failed or failed validation."""


class EndpointTornDown(LlmbenchError, RuntimeError):
    """A task that drives the endpoint ran after its teardown: a run cleared with its failed tasks
    only re-runs them, not the group's deploy, so the endpoint they were given is gone."""


SECRET_HANDLE_KEYS = ("api_key",)  # in handle.json only, never in XCom


def _secrets(t: ResolvedTarget, handle: Handle) -> Handle:
    """The handle a task was given, with the secrets deploy kept out of XCom, read back from the
    target's handle.json (the same deploy: the same deployed_at)."""
    p = t.dir / "handle.json"
    if not p.exists():
        return handle
    stored = json.loads(p.read_text())
    if stored.get("deployed_at") != handle.get("deployed_at"):
        return handle
    return {**handle, **{k: stored[k] for k in SECRET_HANDLE_KEYS if k in stored}}


def _still_deployed(t: ResolvedTarget) -> None:
    """Refuse, in one line naming the fix, to drive an endpoint this attempt already tore down."""
    if (t.dir / "teardown.json").exists():
        raise EndpointTornDown(
            f"{t.target_id}: its endpoint was torn down before this task ran (a clear of failed tasks "
            "only does not deploy again); clear the target's whole group, its deploy included "
            "(Clear with 'Upstream', or `airflow tasks clear -u -d -t '<kind>\\..*'`)"
        )


Mode = str  # "measure": deploy and sweep; "reprocess": recompute stored raw results (llmbench.results.reprocess)
MODES = ("measure", "reprocess")


def plan(
    config: str, logical_date: Any, params: dict[str, Any], mode: Mode = "measure", executor: str | None = None
) -> list[dict[str, Any]]:
    """The run's targets. measure: a new plan (a new attempt folder). reprocess: the targets of
    the run key's latest stored attempt, whose raw results are checked to be all there first
    (RawResultsMissing, one line, otherwise); nothing is planned anew and nothing will deploy."""
    if mode not in MODES:
        raise ValueError(f"mode: {mode!r}; allowed: {list(MODES)}")
    if mode == "measure":
        from llmbench.planning.checks import check_distributed
        from llmbench.planning.plan import plan_checked
        from llmbench.settings import settings

        # checked before anything is written: what cannot work across hosts is refused in one line
        run, _ = plan_checked(config, logical_date, params, write=False)
        check_distributed(run, executor, settings("shared_disk").shared_disk)
        return [t.model_dump(mode="json") for t in _write_plan(run).targets]
    from llmbench.results.reprocess import latest_targets

    return latest_targets(config, logical_date)


class BudgetNotApproved(LlmbenchError, RuntimeError):
    """The run's estimate was above its budget and no one approved it (rejected, or no answer in
    time): nothing was deployed."""


def _write_plan(run: RunPlan) -> RunPlan:
    """Write a checked plan's plan.json where its run folder is (the results store)."""
    store = remote_store(run.results_root)
    if store is not None:
        store.put_text(f"{store.key_of(run.run_dir)}/plan.json", run.model_dump_json(indent=2))
    else:
        Path(run.run_dir).mkdir(parents=True, exist_ok=True)
        (Path(run.run_dir) / "plan.json").write_text(run.model_dump_json(indent=2))
    return run


def results_of(config: str) -> tuple[str | None, str]:
    """(the results store's root, the Airflow connection to reach it) a config names: its
    `results`, else LLMBENCH_RESULTS_URI; root None: the data folder."""
    from llmbench.planning.config import load_config
    from llmbench.settings import settings

    cfg = load_config(config)
    return cfg.results.uri or settings("results_uri").results_uri, cfg.results.conn_id


def _usd(v: float) -> str:
    """Dollars as a person reads them: cents from one cent up, two significant digits below."""
    return f"${v:,.2f}" if v >= 0.01 or v == 0 else f"${v:.2g}"


def budget_gate(targets: list[Target], mode: Mode = "measure") -> dict[str, Any]:
    """Whether the run must wait for a person's approval before anything is deployed: plan's
    estimate (every target's endpoint hours x price, per-token targets' tokens) above the budget
    (the config's `budget.max_usd`, or the Param budget_usd). A reprocess deploys nothing: never.
    Returns what the approval shows: subject, body, the figures."""
    run = load_plan(run_dir_of(targets))
    max_usd = run.budget.max_usd if run.budget else None
    needs = mode == "measure" and max_usd is not None and run.estimated_usd > max_usd
    lines = [
        f"| {t.label} | {t.estimated_endpoint_hours:.2f} | "
        + ("unpriced" if t.estimated_usd is None else _usd(t.estimated_usd))
        + " |"
        for t in map(ResolvedTarget.of, targets)
    ]
    body = "\n".join(
        [
            f"Run **{run.run_key}** is estimated at **{_usd(run.estimated_usd)}**, above its budget of "
            f"{_usd(max_usd or 0)}. Approve to deploy and measure; reject to stop with nothing deployed.",
            "",
            "| target | endpoint hours | estimate |",
            "|---|---|---|",
            *lines,
        ]
    )
    return {
        "needs_approval": needs,
        "run_key": run.run_key,
        "estimated_usd": run.estimated_usd,
        "max_usd": max_usd,
        "subject": f"llmbench {run.run_key}: {_usd(run.estimated_usd)} estimated, budget {_usd(max_usd or 0)}",
        "body": body,
    }


def budget_refusal(gate: dict[str, Any], why: str) -> BudgetNotApproved:
    """The one line a run stopped at its budget gate fails with. why: 'rejected by <who>', 'no
    answer within 24 h'."""
    return BudgetNotApproved(
        f"{gate['run_key']}: estimated {_usd(gate['estimated_usd'])} is above the budget of "
        f"{_usd(gate['max_usd'])} and was not approved ({why}); nothing was deployed. Raise the budget "
        "(config budget.max_usd or the Param budget_usd), or approve the next run"
    )


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


def reap_earlier_attempts(target: ResolvedTarget, backend: Backend, stored: ResolvedTarget | None = None) -> list[str]:
    """Tear down what earlier attempts of this run key and target left behind, before deploying
    again: a re-run after a killed worker then neither collides with (a managed endpoint's name is
    derived from the run key) nor runs beside (a local server) its predecessor. `stored`: the
    target as planned, when `target` is a task's local copy of an object store's folder: the
    handles are then found in the store (this attempt's own in the local copy, uploaded with it)."""
    reaped = []
    if stored is not None:
        found = earlier_handles_in_store(stored)
        here = found[0][0].key_of(stored.run_dir) if found else ""
        for store, folder in found:
            own = folder == store.layout.target(here, target.target_id)
            handle = (target.dir / "handle.json").read_text() if own else store.get_text(f"{folder}/handle.json")
            outcome = backend.teardown(json.loads(handle))
            record = json.dumps({**outcome.to_json(), "reaped_by": stored.run_dir}, indent=2)
            if own:
                (target.dir / "teardown.json").write_text(record)
            else:
                store.put_text(f"{folder}/teardown.json", record)
            log.warning("%s: removed what an earlier attempt left running (%s)", target.target_id, store.uri(folder))
            reaped.append(store.uri(folder))
        return reaped
    for p in earlier_attempts(target):
        outcome = backend.teardown(json.loads(p.read_text()))
        (p.parent / "teardown.json").write_text(
            json.dumps({**outcome.to_json(), "reaped_by": str(target.dir)}, indent=2)
        )
        log.warning("%s: removed what an earlier attempt left running (%s)", target.target_id, p.parent)
        reaped.append(str(p.parent))
    return reaped


def deploy(target: Target, **backend_kwargs: Any) -> Handle:
    planned = ResolvedTarget.of(target)
    with working(planned) as (t, at), stage(t, "deploy"):
        backend = _backend(t, backend_kwargs)
        reaped = reap_earlier_attempts(t, backend, planned if t is not planned else None)
        if reaped:
            record_event(t, "deploy", "reaped", attempts=reaped)
        handle = backend.deploy(t, t.dir)
        (t.dir / "handle.json").write_text(json.dumps(handle, indent=2))
        # A deploy again in this folder (the group cleared, deploy included): the endpoint is new,
        # and the tasks after it must not read the earlier one's teardown as theirs.
        if (t.dir / "teardown.json").exists():
            (t.dir / "teardown.json").replace(t.dir / "teardown.previous.json")
        # the cold start's start (metrics.time_to_ready_s): the create call, as the backend stamped it
        record_event(
            t, "deploy", "created", deployed_at=handle.get("deployed_at"), creates_endpoint=backend.creates_endpoint
        )
        shown = {
            k: v for k, v in handle.items() if isinstance(v, str) and k not in (*SECRET_HANDLE_KEYS, "deployed_at")
        }
        log.info("deployed %s: %s", t.label, ", ".join(f"{k} {v}" for k, v in shown.items()))  # any kind's handle
        # XCom carries no secret: a per-deploy key stays in handle.json (the results store)
        return {k: v for k, v in handle.items() if k not in SECRET_HANDLE_KEYS}


def deploy_within_quota(target: Target, **backend_kwargs: Any) -> Handle | None:
    """deploy, unless the backend says its quota is in use: then None, "not now",
    and the DAG asks again later without holding a worker slot. Callers serialise these calls
    (one pool slot), so two targets cannot both take the last unit of quota."""
    t = ResolvedTarget.of(target)
    busy = quota_busy(t, **backend_kwargs)
    if busy:
        log.info("%s: %s; waiting for the quota", t.target_id, busy)
        return None
    return deploy(t, **backend_kwargs)


def quota_busy(target: Target, **backend_kwargs: Any) -> str | None:
    """One look at the backend's quota, changing nothing: None when a deploy may go now, else
    what holds it (the DAG's deferred deploy waits on the triggerer with this look)."""
    t = ResolvedTarget.of(target)
    with attempt_handles(t) as seen:  # the run's other handles, wherever the results store is
        return _backend(t, backend_kwargs).quota_busy(seen)


def check_ready(target: Target, handle: Handle, **backend_kwargs: Any) -> bool:
    """One readiness look: True when ready, False while starting; raises when the endpoint failed
    or its ready timeout has passed since deploy. Only the outcome is an event."""
    with working(ResolvedTarget.of(target)) as (t, _):
        try:
            _still_deployed(t)
            handle = _secrets(t, handle)
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
    with working(ResolvedTarget.of(target)) as (t, at), stage(t, "wait_ready"):
        _still_deployed(t)
        handle = _secrets(t, handle)
        backend = _backend(t, backend_kwargs)
        backend.wait_ready(handle, backend.ready_timeout_s(t))


def warm_up(target: Target, handle: Handle, **backend_kwargs: Any) -> dict[str, Any]:
    from llmbench.loadgen.sweep import run_warmup

    with working(ResolvedTarget.of(target)) as (t, at), stage(t, "warm_up"):
        _still_deployed(t)
        handle = _secrets(t, handle)
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

    if ResolvedTarget.of(target).quality is None:
        return {"skipped": "the config has no quality section"}
    with working(ResolvedTarget.of(target)) as (t, at), stage(t, "quality"):
        assert t.quality is not None
        _still_deployed(t)
        handle = _secrets(t, handle)
        endpoint = _backend(t, backend_kwargs).endpoint(handle)
        return run_quality(
            endpoint, t.quality, t.dir, progress=_progress(t), max_response_bytes=t.workload.max_response_bytes
        )


def sweep(target: Target, handle: Handle, **backend_kwargs: Any) -> dict[str, str]:
    from llmbench.loadgen.sweep import run_sweep

    with working(ResolvedTarget.of(target)) as (t, at), stage(t, "sweep"):
        _still_deployed(t)
        handle = _secrets(t, handle)
        endpoint = _backend(t, backend_kwargs).endpoint(handle)
        result = run_sweep(
            endpoint, t.workload, t.dir, slo=t.slo, progress=_progress(t), record_hook=chaos.record_hook(t.target_id)
        )
        if t.capacity is not None:
            capacity_search(t, endpoint, result.levels)
        # where they are published (XCom carries no local path: validate may run on another host)
        return {"requests_path": at(result.requests_path), "levels_path": at(result.levels_path)}


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

    with working(ResolvedTarget.of(target)) as (t, at), stage(t, "validate"):
        # the target's own records (the copy this task works on), whatever the sweep returned
        outcome = validate_results(
            t.dir / "requests.parquet",
            t.dir / "levels.parquet",
            t.workload.level_concurrencies(),
            t.validation.max_error_rate,
            t.dir / "validation.json",
            t.workload.arrival_rates_rps,
        )
        if not outcome["validation_passed"]:
            log.warning("validation failed for %s: %s", t.label, "; ".join(outcome["failures"]))
        return {"validation_passed": outcome["validation_passed"], "path": at(outcome["path"])}


def teardown(target: Target, handle: Handle | None, **backend_kwargs: Any) -> dict[str, Any]:
    """Delete what deploy created. A missing handle (deploy never returned) is read from disk."""
    with working(ResolvedTarget.of(target)) as (t, at), stage(t, "teardown"):
        if handle is None:
            p = t.dir / "handle.json"
            handle = json.loads(p.read_text()) if p.exists() else None
        if handle is None:
            return {"endpoint_seconds": None}
        handle = _secrets(t, handle)
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
    with run_folder(run_dir) as (here, locate):
        if mode == "reprocess":
            from llmbench.results.reprocess import reprocess_run

            reprocess_run(here, config, prices, params, locate)
            log.info("reprocessed %s (prices: %s)", run_dir, prices)
        else:
            build_tables(here, locate)
    return run_dir


def publish(run_dir: str, dsn: str | None = None) -> dict[str, Any]:
    """Write the run's tables to the warehouse the config names: the DuckDB file (default), or
    PostgreSQL through `dsn` (the DAG builds it from the config's Airflow connection). Returns
    where (redacted: no credentials) and the rows written, plus `asset_extra`: what the Asset
    carries when check has passed (llmbench.schemas.asset.PublishedAsset, as JSON)."""
    with run_folder(run_dir, raw=False) as (here, _):
        return _publish(here, dsn)


def _publish(run_dir: str, dsn: str | None) -> dict[str, Any]:
    from llmbench import paths, warehouse

    settings = RunPlan.load(run_dir).warehouse
    if settings.kind in ("postgres", "redshift"):
        if not dsn:
            raise ValueError(f"warehouse kind {settings.kind} needs a DSN (connection {settings.conn_id!r})")
        target: str = dsn
        where_to = AssetWarehouse(kind=settings.kind, conn_id=settings.conn_id)
    else:
        target = str(settings.path or paths.default_warehouse_path())
        where_to = AssetWarehouse(kind="duckdb", path=target)
    frames = load_tables(run_dir)
    ensure_report(run_dir, frames)  # runs.report_path names it: it exists before the row does
    written = warehouse.publish(frames, target)
    mark_published(run_dir, frames)  # after the commit: the run key's next attempt inherits from here
    where = warehouse.redact(target)
    log.info("published %s to %s: %s", frames["runs"]["run_key"].iloc[0], where, written)
    return {"warehouse": where, "rows": written, "asset_extra": asset_extra(frames, written, where_to)}


def asset_extra(frames: dict[str, Any], written: dict[str, int], where_to: AssetWarehouse) -> dict[str, Any]:
    """The Asset event's extra for what publish wrote (llmbench.schemas.asset: the contract)."""
    runs = frames["runs"].iloc[0]
    replaced = runs.get("targets_replaced")
    targets = [str(t) for t in frames["targets"]["target_id"]]
    return PublishedAsset(
        run_key=str(runs["run_key"]),
        logical_date=str(runs["logical_date"])[:10],
        config=str(runs["config_name"]),
        status=runs["status"],  # validated by the model: a runs.status
        targets=targets,
        targets_replaced=json.loads(replaced) if isinstance(replaced, str) else targets,
        rows={k: int(v) for k, v in written.items()},
        warehouse=where_to,
    ).model_dump(mode="json")


def report(run_dir: str) -> str:
    """The run's report.html, from its tables; returns where it is published."""
    from llmbench.results.report import write_report

    with run_folder(run_dir, raw=False) as (here, locate):
        written = str(write_report(load_tables(here), Path(here) / "report.html"))
        return locate(written) if locate else written


def history(target: Path | str | None = None, out: Path | str | None = None) -> str:
    """Write the history page of the warehouse `target` (default: the data folder's DuckDB file)
    to `out` (default: history.html in the results store, LLMBENCH_RESULTS_URI, else in the data
    folder); after each publish (the dashboard DAG) and on demand (`llmbench history`). Returns
    where it is."""
    from llmbench import paths
    from llmbench.results.history import write_history
    from llmbench.settings import settings

    if out is None:  # an object store holds it beside the runs, for every host and BI user to read
        store = remote_store(settings("results_uri").results_uri)
        if store is not None:
            import tempfile

            with tempfile.TemporaryDirectory(prefix="llmbench-history-") as d:
                return store.put_file(write_history(Path(d) / "history.html", target), "history.html")
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


def prune_raw_results(results_root: str | None = None) -> str:
    """Apply the retention of the results store at `results_root` (default: the data folder)
    (llmbench.results.retention: LLMBENCH_RAW_RESULTS_WEEKS; by default raw results are kept for
    ever, since a reprocess recomputes history from them). Never fails the run: a refused setting
    prunes nothing and an unreadable attempt is skipped, in one logged line each."""
    from llmbench.results.retention import (
        RAW_RESULTS_WEEKS_ENV,
        prune_raw_results,
        prune_store,
        raw_results_weeks,
    )

    try:
        weeks = raw_results_weeks()
    except ValueError as e:
        log.warning("retention: nothing pruned: %s", e)
        return f"nothing pruned: {e}"
    if weeks is None:
        return f"raw results are kept for ever ({RAW_RESULTS_WEEKS_ENV} unset)"
    store = remote_store(results_root)
    removed = prune_store(store, weeks) if store is not None else prune_raw_results(weeks)
    for attempt in removed:
        log.info("removed raw results older than %d week(s): %s", weeks, attempt)
    return f"removed {len(removed)} attempt folder(s) planned more than {weeks} week(s) ago"


def check(run_dir: str) -> str:
    """Fail loudly, after everything was published, if any target this run ran failed, failed
    validation or failed the quality gate. Targets it inherited from earlier attempts of the date
    (llmbench.results.union) are named when they failed, but do not fail this run: it did not
    run them, and re-running them is what fixes them."""
    with run_folder(run_dir, raw=False) as (here, _):
        targets = load_tables(here)["targets"]
        own = {t.target_id for t in RunPlan.load(here).targets}
    problems: list[str] = []
    inherited: list[str] = []
    for t in targets.to_dict("records"):
        mine = []
        if t["status"] != "succeeded":
            mine.append(f"{t['label']}: failed at {t['failed_stage'] or 'an upstream task'}: {t['error']}")
        else:
            if t["validation_passed"] is False:
                mine.append(f"{t['label']}: validation failed (see {t['raw_dir']}/validation.json)")
            if t.get("quality_passed") is False:  # checked apart: a target can fail both
                mine.append(f"{t['label']}: quality gate failed (see {t['raw_dir']}/quality_validation.json)")
        (problems if t["target_id"] in own else inherited).extend(mine)
    ran = sum(1 for t in targets["target_id"] if t in own)
    if problems:
        raise TargetFailed(f"{len(problems)} of {ran} target(s) failed: " + " | ".join(problems))
    said = f"all {ran} target(s) succeeded and passed validation"
    kept = len(targets) - ran
    if kept:
        said += f"; {kept} other target(s) kept from earlier attempts" + (
            f", of which failed: {' | '.join(inherited)}" if inherited else ""
        )
    return said
