"""The plan: every target of a config resolved and checked, with its estimate, before anything runs.

A config names a workload and a list of targets (instance type x model x serving configuration),
each on a backend (its own `backend:`, else the config's): one run may mix them. `plan()` resolves
every target against the catalogs and the DAG Params into a typed `RunPlan`
(llmbench.schemas.targets) that every task of the run reads, and estimates its hours and dollars.
"""

from __future__ import annotations

import subprocess
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from llmbench import paths
from llmbench.backends import registry
from llmbench.planning.checks import DECODE_EFFICIENCY, _Checked, check_target
from llmbench.planning.config import (
    BenchmarkConfig,
    ConfigError,
    _apply_params,
    load_catalogs,
    load_config,
    make_run_key,
)
from llmbench.schemas.dataset import DatasetSummary, scan, scan_trace, summary
from llmbench.schemas.targets import Price, ResolvedTarget, RunPlan
from llmbench.schemas.workload import Workload, length_mean


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
    hours = registry.get(kind).deploy_overhead_min / 60 + sweep_s / 3600
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
    revision (BackendSpec.pins_revision: the serving kinds its backend passes it to); else None: a
    GGUF file, an endpoint or API someone else runs, a container we do not pass it to."""
    rev = model.get("hf_revision")
    return str(rev) if rev and serving.kind in registry.get(kind).pins_revision else None


def _check_vllm_args(targets: list[ResolvedTarget], checks: dict[str, list[str]]) -> None:
    """Each vLLM target's launch (its kind's BackendSpec.vllm_launch: backends.vllmargs) through
    the installed vLLM's parser and validation, one subprocess for all; a refusal is a
    ConfigError naming the target and vLLM's words (the flag). Without the vLLM venv: a check line
    saying it was skipped and why."""
    from llmbench.backends import vllmargs
    from llmbench.backends.local import vllm

    launches = {t.target_id: vllmargs.launches(t) for t in targets}
    if not any(launches.values()):
        return
    why_not = vllm.missing()
    if why_not:
        for tid, items in launches.items():
            if items:
                checks[tid].append(f"vLLM's own parser: skipped ({why_not})")
        return
    try:
        version, errors = vllmargs.check([x for xs in launches.values() for x in xs], vllm.vllm_python())
    except (OSError, RuntimeError, subprocess.SubprocessError) as e:
        raise ConfigError(f"vLLM's own parser could not run: {e}") from None
    for tid, items in launches.items():
        for x in items:
            if errors[x.name]:
                raise ConfigError(f"{x.name}.serving: vLLM {version} refused the launch arguments: {errors[x.name]}")
            checks[tid].append(vllmargs.line(x, version, None))


def _checked_dataset(w: Workload) -> DatasetSummary | None:
    """The workload's dataset (or trace) scanned (every line checked, hashed) and what the run
    records of it; a bad file, or too few rows to draw a level without replacement, is a
    ConfigError (one line)."""
    if w.trace is not None:
        trace = scan_trace(w.trace)  # DatasetError: timestamps going backwards, a malformed line, ...
        return DatasetSummary(
            path=str(trace.path),
            format="mooncake-trace",
            sha256=trace.sha256,
            rows_total=len(trace),
            rows_used=len(trace),
            filter=None,
            sample="in order, at its own times" + (f" x {w.trace.time_scale:g}" if w.trace.time_scale != 1 else ""),
            output="data",
        )
    spec = w.dataset
    if spec is None:
        return None
    index = scan(spec)  # DatasetError (a ConfigError) names the file, the line and what is wrong
    if spec.sample == "without_replacement" and w.requests_per_level > index.rows_used:
        raise ConfigError(
            f"dataset {index.path}: {index.rows_used} rows pass the filter, fewer than the {w.requests_per_level} "
            "requests of a level drawn without replacement"
        )
    return summary(spec, index)


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
    check_vllm_args: bool = False,
) -> tuple[RunPlan, dict[str, list[str]]]:
    """plan(), and every check's outcome per target id, in the order they ran (`llmbench plan`
    prints them; a check that fails raises ConfigError instead, as in plan()). write=False: the
    plan only, no folder and no plan.json (a reprocess reads today's settings this way).
    check_vllm_args: every vLLM target's launch arguments parsed by vLLM itself where `make vllm`
    installed it (_check_vllm_args; ~20 s, so asked for: `llmbench plan --check-vllm-args`)."""
    cfg = _apply_params(load_config(config_name), params or {})
    cat = load_catalogs()
    run_key = make_run_key(cfg.name, logical_date)
    run_dir, store, results_root = _attempt_folder(cfg, run_key, runs_root)
    # Every target's workload and data first: a bad file refuses the whole run.
    workloads = {t.id: cfg.workload_of(t) for t in cfg.targets}
    datasets = {t.id: _checked_dataset(workloads[t.id]) for t in cfg.targets}
    targets: list[ResolvedTarget] = []
    warnings: list[str] = []
    checks: dict[str, list[str]] = {}
    for t in cfg.targets:
        kind = cfg.backend_of(t)
        checked = _Checked()
        checks[t.id] = checked.checks
        own = cfg if workloads[t.id] is cfg.workload else cfg.model_copy(update={"workload": workloads[t.id]})
        region, price, backend = check_target(own, t, cat, checked)
        hours, usd = _estimate(own, kind, price, checked.roofline)
        warnings.extend(checked.warnings)
        resolved = (region, price, backend)
        targets.append(
            _resolved(cfg, t, cat, run_key, str(run_dir), workloads[t.id], datasets[t.id], checked, resolved,
                      (hours, usd), results_root)
        )  # fmt: skip
    if check_vllm_args:
        _check_vllm_args(targets, checks)
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
        traffic=cfg.traffic,
        budget=cfg.budget,
        results_root=results_root,
        results_conn_id=cfg.results.conn_id,
    )
    if write and store is not None and store.remote:
        store.put_text(f"{store.key_of(str(run_dir))}/plan.json", run.model_dump_json(indent=2))
    elif write:
        Path(run_dir).mkdir(parents=True, exist_ok=True)
        (Path(run_dir) / "plan.json").write_text(run.model_dump_json(indent=2))
    return run, checks


def _attempt_folder(cfg: BenchmarkConfig, run_key: str, runs_root: Path | None) -> tuple[Path | str, Any, str | None]:
    """(the attempt's run folder, its results store or None, the store's root URI when it is not
    the data folder). Each attempt at a run key gets its own folder, so re-running a date never
    overwrites what an earlier attempt measured; the warehouse keeps only the latest publish."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    try:
        run_dir: Path | str = paths.under(runs_root or paths.runs_dir(), run_key, stamp)
        for t in cfg.targets:
            paths.under(run_dir, t.id)
    except ValueError as e:
        raise ConfigError(f"name: {e}") from None
    # Where the attempt's raw results go: the results store (llmbench.store) the config or
    # LLMBENCH_RESULTS_URI names; by default the data folder, as above.
    store, results_root = None, None
    if runs_root is None:
        from llmbench.store import open_store

        store = open_store(cfg.results.uri)
        if store.root != str(paths.data_home()):
            results_root = store.uri()
            run_dir = store.uri(store.layout.attempt(run_key, stamp))
    return run_dir, store, results_root


def _resolved(
    cfg: BenchmarkConfig,
    t: Any,
    cat: dict[str, Any],
    run_key: str,
    run_dir: str,
    workload: Any,
    dataset: Any,
    checked: _Checked,
    resolved: tuple[Any, Price, Any],
    estimate: tuple[float, float | None],
    results_root: str | None,
) -> ResolvedTarget:
    """A target as plan resolved and checked it: what every task of the run receives."""
    region, price, backend = resolved
    hours, usd = estimate
    kind = cfg.backend_of(t)
    instance_type = t.instance_type or registry.get(kind).instance_label
    return ResolvedTarget(
        run_key=run_key,
        run_dir=run_dir,
        target_id=t.id,
        label=f"{instance_type} / {t.model} / {t.serving.name}",
        instance_type=instance_type,
        model=t.model,
        hf_id=(cat["models"].get(t.model) or {}).get("hf_id"),
        model_revision=_pinned_revision(t.serving, kind, cat["models"].get(t.model) or {}),
        precision=t.precision or "undisclosed",
        serving=t.serving,
        workload=workload,
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
        quality=t.quality.applied_to(cfg.quality) if t.quality and cfg.quality else cfg.quality,
        dataset=dataset,
        # hourly paths only: a per-token API has no instance whose capacity matters
        capacity=cfg.capacity if price.basis == "per_hour" else None,
        results_root=results_root,
        results_conn_id=cfg.results.conn_id,
    )
