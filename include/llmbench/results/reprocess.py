"""Reprocess: recompute a published run's tables from its stored raw results with today's code and
today's config settings, and publish them again under the same run key. Nothing is deployed and
no endpoint is called: a past week's measurements stay what they were (the request records are
the facts); what is recomputed is everything derived from them.

What a reprocess takes from where:
- request records (requests.parquet, else requests.jsonl), quality answers, events, endpoint
  seconds and the client's measured CPU per level: the run folder, as measured (never rewritten);
- the workload, the targets and what they ran: the plan as measured (plan.measured.json, a copy
  of the first plan.json, kept the first time a run is reprocessed);
- metric definitions, validation suites, price and roofline arithmetic: today's code;
- the SLO, validation and quality thresholds, price basis, reference figures, roofline inputs and
  warehouse: today's config (`llmbench plan` of the same config and date, written nowhere);
- prices: as measured (`prices="frozen"`, the default: history keeps what it cost then), or
  today's (`prices="current"`).

A run is checked before anything is written: a run folder, a target's folder or a swept target's
request records that are gone (retention, a lost disk) make it RawResultsMissing, one line, and the
run is left as it was (a reprocess never drops a published row it cannot recompute). A data folder
that moved is found again by run key and attempt under today's data folder, and its plan's folders
are read as where it is now. `runs` records who computed the published rows: computed_by
(llmbench.results.codeversion), computed_at, computation ("measure" | "reprocess") and, for a reprocess, which prices.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast

from llmbench.errors import LlmbenchError
from llmbench.results.codeversion import COMPUTATION_FILE, Computation, code_version
from llmbench.results.union import PRUNED_FILE
from llmbench.schemas.targets import ResolvedTarget, RunPlan

PriceChoice = Literal["frozen", "current"]
PRICE_CHOICES: tuple[str, ...] = ("frozen", "current")
MEASURED_PLAN = "plan.measured.json"  # the plan as the run measured it (kept by the first reprocess)
MEASURED_LEVELS = "levels.measured.parquet"  # a target's levels as its sweep wrote them (idem)


class RawResultsMissing(LlmbenchError, RuntimeError):
    """A run's raw results are not there to reprocess: nothing was rewritten. One line."""


def _swept(target: ResolvedTarget) -> bool:
    """The target's sweep wrote levels: it has measurements to recompute."""
    return (target.dir / MEASURED_LEVELS).exists() or (target.dir / "levels.parquet").exists()


def _never_started(d: Path, target_id: str) -> bool:
    """The attempt's own tables published this target as never started (no folder was ever made
    for it): a reprocess would publish the same row. False when the tables do not say so."""
    import pandas as pd

    try:
        rows = pd.read_parquet(d / "tables" / "targets.parquet").to_dict("records")
    except Exception:  # noqa: BLE001 (no tables, or unreadable: nothing says it never started)
        return False
    mine = [r for r in rows if r.get("target_id") == target_id]
    return bool(mine) and all(r.get("failed_stage") is None and r.get("status") == "failed" for r in mine)


def check_raw_results(run_dir: str | Path) -> RunPlan:
    """The run's plan as measured, if every raw result a reprocess reads is there; else
    RawResultsMissing naming the first thing missing. The plan's folders are the run folder
    found (`run_dir`), wherever the plan says it was measured: a data folder that moved still
    reprocesses, and never from the folder it left."""
    d = Path(run_dir)
    if not d.is_dir():
        raise RawResultsMissing(f"raw results gone: {d} does not exist (deleted by retention?)")
    if (d / PRUNED_FILE).exists():  # retention's tombstone (llmbench.results.retention)
        raise RawResultsMissing(f"raw results gone: {d} was pruned by retention; its published rows stay")
    plan_path = d / MEASURED_PLAN if (d / MEASURED_PLAN).exists() else d / "plan.json"
    if not plan_path.exists():
        raise RawResultsMissing(f"raw results incomplete: {plan_path} is missing")
    try:
        run = RunPlan.model_validate_json(plan_path.read_text())
    except (OSError, ValueError) as e:
        raise RawResultsMissing(f"raw results unreadable: {plan_path}: {type(e).__name__}") from None
    if Path(run.run_dir).resolve() != d.resolve():  # moved (plan.json stores absolute folders): rebase
        here = str(d.absolute())
        run = run.model_copy(
            update={"run_dir": here, "targets": [t.model_copy(update={"run_dir": here}) for t in run.targets]}
        )
    for t in run.targets:
        # A target's folder gone reads as "never swept": its published rows would be dropped.
        if not t.dir.is_dir() and not _never_started(d, t.target_id):
            raise RawResultsMissing(f"raw results incomplete: {t.dir} is missing (target {t.target_id})")
        if _swept(t) and not ((t.dir / "requests.parquet").exists() or (t.dir / "requests.jsonl").exists()):
            raise RawResultsMissing(f"raw results incomplete: {t.dir} has levels but no request records")
    return run


def settings_today(
    measured: RunPlan, config: str | None = None, prices: str = "frozen", params: dict[str, Any] | None = None
) -> RunPlan:
    """The measured plan with today's config settings in place of its own (see the module doc);
    a target the config no longer has keeps its measured settings. Raises ConfigError when the
    config no longer plans."""
    from llmbench.planning.plan import plan_checked

    extra = {k: v for k, v in (params or {}).items() if k == "warehouse_conn_id" and v}
    today, _ = plan_checked(config or measured.config_name, measured.logical_date, extra, write=False)
    now = {t.target_id: t for t in today.targets}
    targets = []
    for t in measured.targets:
        n = now.get(t.target_id)
        if n is None:
            targets.append(t)
            continue
        update: dict[str, Any] = {
            "slo": n.slo,
            "validation": n.validation,
            "quality": n.quality,
            "roofline_tokens_per_s": n.roofline_tokens_per_s,
            "weight_gb_per_token": n.weight_gb_per_token,
            "weights_not_read": n.weights_not_read,
        }
        if prices == "current":
            update["price"] = n.price
        targets.append(t.model_copy(update=update))
    ids = {t.target_id for t in measured.targets}
    return measured.model_copy(
        update={
            "targets": targets,
            "price_basis": today.price_basis,
            "reference": [r for r in today.reference if r.target is None or r.target in ids],
            "warehouse": today.warehouse,
        }
    )


def recompute_levels(target: ResolvedTarget) -> bool:
    """levels.parquet again from the target's request records with today's metric code and the
    target's SLO, keeping what only the sweep could measure (the client's CPU, its processes, the
    level's warm-up count and the server's counters: sweep.SWEEP_ONLY_COLUMNS);
    then its validation again, if its sweep had reached validation. False: nothing was swept."""
    import pandas as pd

    from llmbench.loadgen.sweep import level_row, read_jsonl_records, read_records, records_by_level, write_requests
    from llmbench.results.validation import validate_results

    d = target.dir
    if not _swept(target):
        return False
    if not (d / MEASURED_LEVELS).exists():
        shutil.copy2(d / "levels.parquet", d / MEASURED_LEVELS)
    requests = d / "requests.parquet"
    if requests.exists():
        groups = records_by_level(read_records(requests))
    else:  # a sweep killed before its Parquet: its records as `llmbench rebuild` reads them
        groups = records_by_level(read_jsonl_records(d / "requests.jsonl")[0])
        write_requests(requests, groups)
    measured = {
        (float(r.get("arrival_rate_rps") or 0.0), int(r["concurrency"])): r
        for r in pd.read_parquet(d / MEASURED_LEVELS).to_dict("records")
    }
    rows = []
    for (rate, c), recs in groups.items():
        m = measured.get((float(rate), int(c)), {})
        cpu_pct, window_s, procs = m.get("client_cpu_pct"), m.get("window_s"), m.get("client_processes")
        cpu_s = None if cpu_pct is None or cpu_pct != cpu_pct or not window_s else cpu_pct * window_s / 100.0
        rq_pct = m.get("client_runqueue_pct")  # measured as the level ran, like its CPU
        rq_s = None if rq_pct is None or rq_pct != rq_pct or not window_s else rq_pct * window_s / 100.0
        kept = {k: None if v != v else v for k, v in m.items()}  # NaN (Parquet's null float) -> None
        mode = str(m.get("load_mode") or "poisson")  # open loop: its arrivals (poisson, gamma, constant, trace)
        row = level_row(recs, c, rate, target.slo, cpu_s, None if procs != procs else procs, kept, mode, rq_s)
        for col, pct in (("client_cpu_pct", cpu_pct), ("client_runqueue_pct", rq_pct)):
            if pct is not None and pct == pct:  # as measured, bit for bit: the round trip through seconds is not
                row[col] = pct
        rows.append(row)
    pd.DataFrame(rows).to_parquet(d / "levels.parquet", index=False)
    if (d / "validation.json").exists():
        validate_results(
            requests,
            d / "levels.parquet",
            target.workload.level_concurrencies(),
            target.validation.max_error_rate,
            d / "validation.json",
            target.workload.arrival_rates_rps,
        )
    return True


def _reprocess_folder(
    d: Path, only: set[str] | None, config: str | None, prices: str, params: dict[str, Any] | None
) -> list[str]:
    """One attempt folder's plan with today's settings, and its targets' levels recomputed: all of
    them, or those in `only` (the others keep the settings they had). Returns the ids recomputed."""
    measured = check_raw_results(d)
    plan = settings_today(measured, config, prices, params)
    if only is not None:  # the plan as it stands (an earlier reprocess's settings), in the folder found
        here = str(d.absolute())
        now = {t.target_id: t.model_copy(update={"run_dir": here}) for t in RunPlan.load(d).targets}
        plan = plan.model_copy(
            update={"targets": [t if t.target_id in only else now.get(t.target_id, t) for t in plan.targets]}
        )
    if not (d / MEASURED_PLAN).exists():
        shutil.copy2(d / "plan.json", d / MEASURED_PLAN)
    recorded = json.loads((d / "plan.json").read_text())["run_dir"]
    # an object store's attempt keeps naming itself (this folder is a task's local copy of it)
    (d / "plan.json").write_text((plan.located(recorded) if "://" in recorded else plan).model_dump_json(indent=2))
    done = []
    for t in plan.targets:
        if only is None or t.target_id in only:
            recompute_levels(t)
            done.append(t.target_id)
    return done


def reprocess_run(
    run_dir: str | Path,
    config: str | None = None,
    prices: str = "frozen",
    params: dict[str, Any] | None = None,
    locate: Callable[[str], str] | None = None,
) -> dict[str, Any]:
    """Recompute one published run's tables (see the module doc); returns them as frames (as
    tables.build_tables does). Publishing them is the caller's: the same as a measurement.
    locate: as build_tables' (a task's local copy of an object store).

    What is recomputed is the run key's published union (llmbench.results.union): the attempt's
    own targets and every target it inherited, each in the attempt folder it came from. The Param
    `targets` (in params) limits that to those targets; the others are rebuilt from their raw
    results as they stand. Every folder is checked before any is written."""
    from llmbench.results.tables import build_tables
    from llmbench.results.union import union_plan

    if prices not in PRICE_CHOICES:
        raise ValueError(f"prices: {prices!r}; allowed: {list(PRICE_CHOICES)}")
    d = Path(run_dir)
    measured = check_raw_results(d)  # before anything is written
    _, attempts = union_plan(measured)
    wanted = set((params or {}).get("targets") or []) or None
    own = {t.target_id for t in measured.targets}
    folders: dict[Path, set[str]] = {d: set()}
    for target_id, source in attempts.items():
        if wanted is None or target_id in wanted:
            folders.setdefault(d if target_id in own else Path(source), set()).add(target_id)
    for folder in folders:
        if folder != d:
            check_raw_results(folder)
    for folder, ids in folders.items():
        _reprocess_folder(folder, None if folder == d and wanted is None else ids, config, prices, params)
    stamp = Computation(code_version(), datetime.now(UTC).isoformat(), "reprocess", cast(PriceChoice, prices))
    (d / COMPUTATION_FILE).write_text(json.dumps(stamp.__dict__, indent=2))
    return build_tables(str(d), locate)


@dataclass(frozen=True)
class RunOutcome:
    """What a range reprocess did with one published run (one line of its output)."""

    run_key: str
    logical_date: str
    status: Literal["reprocessed", "skipped"]
    detail: str  # reprocessed: the rows published; skipped: why, in one line


def _found(run: dict) -> Path:
    """A published run's folder: where the warehouse says, else the same attempt under today's data
    folder (the data folder moved: runs/<run key>/<attempt>)."""
    from llmbench import paths

    d = Path(run["run_dir"])
    try:
        moved = paths.under(paths.runs_dir(), str(run["run_key"]), d.name)
    except ValueError:  # not a name a run key or attempt has: where the warehouse says
        return d
    return moved if not d.is_dir() and moved.is_dir() else d


def published_runs(target: Path | str, date_from: str, date_to: str, config_name: str | None = None) -> list[dict]:
    """The runs a warehouse holds with a logical date in [date_from, date_to] (of one config, if
    named), oldest first: run_key, logical_date, run_dir (the attempt that was published)."""
    from llmbench import warehouse

    sql = "SELECT run_key, logical_date, run_dir FROM llmbench.runs WHERE logical_date BETWEEN ? AND ?"
    args: list[Any] = [date_from, date_to]
    if config_name:
        sql += " AND config_name = ?"
        args.append(config_name)
    frame = warehouse.query(sql + " ORDER BY logical_date, run_key", args, target=target)
    return [{**r, "logical_date": str(r["logical_date"])[:10]} for r in frame.to_dict("records")]


def reprocess_range(
    target: Path | str,
    date_from: str,
    date_to: str,
    config: str | None = None,
    prices: str = "frozen",
    progress: Callable[[str], None] | None = None,
) -> list[RunOutcome]:
    """Reprocess every run the warehouse `target` published in the date range (of `config`, if
    given: its name selects the runs and its settings apply; else each run's own config) and
    publish each again to the same warehouse, one run at a time: a run whose raw results are gone,
    or whose config no longer plans, is skipped with the reason and left as published."""
    from llmbench import warehouse
    from llmbench.planning.config import ConfigError, load_config
    from llmbench.results.report import write_report
    from llmbench.results.union import mark_published

    say = progress or (lambda _m: None)
    name = load_config(config).name if config else None
    runs = published_runs(target, date_from, date_to, name)
    say(f"{len(runs)} published run(s) from {date_from} to {date_to}" + (f" of config {name}" if name else ""))
    outcomes = []
    for i, r in enumerate(runs, 1):
        run_dir = _found(r)
        try:
            frames = reprocess_run(run_dir, config, prices)
        except (RawResultsMissing, ConfigError) as e:
            outcomes.append(RunOutcome(r["run_key"], r["logical_date"], "skipped", str(e).splitlines()[0]))
            say(f"[{i}/{len(runs)}] {r['run_key']}: skipped: {outcomes[-1].detail}")
            continue
        write_report(frames, run_dir / "report.html")  # runs.report_path names it: today's
        written = warehouse.publish(frames, target)
        mark_published(run_dir, frames)
        detail = ", ".join(f"{k} {v}" for k, v in written.items() if v)
        outcomes.append(RunOutcome(r["run_key"], r["logical_date"], "reprocessed", detail))
        say(f"[{i}/{len(runs)}] {r['run_key']}: reprocessed, published {detail}")
    return outcomes


def latest_targets(config: str, logical_date: Any) -> list[dict[str, Any]]:
    """A reprocess's targets: those of the run key's latest published attempt, whose raw results
    are checked to be all there first (RawResultsMissing, one line, otherwise); nothing is planned
    anew. In an object store the attempt is listed there; its raw results are checked when they
    are reprocessed."""
    from llmbench import paths
    from llmbench.planning.config import load_config, make_run_key
    from llmbench.results.union import latest_published
    from llmbench.results.workspace import load_plan
    from llmbench.store import open_store

    cfg = load_config(config)
    run_key = make_run_key(cfg.name, logical_date)
    store = open_store(cfg.results.uri)
    if store.remote:  # listed in the store; its raw results are checked when they are reprocessed
        from llmbench.results.union import latest_published_in_store

        attempt = latest_published_in_store(store, run_key)
        if attempt is None:
            raise RawResultsMissing(
                f"{run_key}: no published run under {store.uri(store.layout.run_key_prefix(run_key))}"
            )
        return [t.model_dump(mode="json") for t in load_plan(store.uri(attempt)).targets]
    last = latest_published(paths.runs_dir() / run_key)
    if last is None:
        raise RawResultsMissing(f"{run_key}: no published run under {paths.runs_dir() / run_key}")
    return [t.model_dump(mode="json") for t in check_raw_results(last.run_dir).targets]
