"""One function per DAG task. The DAG file only wires these; each takes and returns small
JSON-able references (target dicts, handles, paths), never frames.

Raw results live under the run folder:
  <run_dir>/plan.json
  <run_dir>/<target_id>/{handle.json, events.jsonl, requests.jsonl, requests.parquet,
                         levels.parquet, validation.json, teardown.json, llama-server.log}
  <run_dir>/tables/<table>.parquet          (what publish writes to the warehouse)
  <run_dir>/report.html
Every stage appends to events.jsonl, so a failed target says where and why, whichever process
ran it.
"""

from __future__ import annotations

import json
import logging
import math
import traceback
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from llmbench import __version__, chaos, metrics, pricing
from llmbench.backends import get_backend
from llmbench.backends.base import DeployError

log = logging.getLogger("llmbench")

STAGES = ("deploy", "wait_ready", "warm_up", "sweep", "validate", "teardown")


class TargetFailed(RuntimeError):
    """Raised by check: at least one target failed or failed validation."""


def run_dir_of(targets: list[dict[str, Any]]) -> str:
    """The run folder of a planned run (every planned target carries it; a plan has >= 1)."""
    return targets[0]["run_dir"]


def target_dir(target: dict[str, Any]) -> Path:
    return Path(target["run_dir"]) / target["target_id"]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _event(target: dict[str, Any], stage: str, status: str, **extra: Any) -> None:
    d = target_dir(target)
    d.mkdir(parents=True, exist_ok=True)
    with (d / "events.jsonl").open("a") as f:
        f.write(json.dumps({"stage": stage, "status": status, "at": _now(), **extra}) + "\n")


def _failed(target: dict[str, Any], name: str, e: BaseException) -> None:
    _event(target, name, "failed", error=f"{type(e).__name__}: {e}"[:2000], traceback=traceback.format_exc()[-4000:])


@contextmanager
def stage(target: dict[str, Any], name: str) -> Iterator[None]:
    """Record a stage's start and outcome; re-raise failures after recording them."""
    _event(target, name, "started")
    try:
        chaos.at_stage(target["target_id"], name)  # a no-op unless LLMBENCH_CHAOS asks for a drill
        yield
    except BaseException as e:  # KeyboardInterrupt / task timeouts too: record, then re-raise
        _failed(target, name, e)
        raise
    _event(target, name, "succeeded")


def read_events(target: dict[str, Any]) -> list[dict[str, Any]]:
    p = target_dir(target) / "events.jsonl"
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


# ---- per-target tasks ------------------------------------------------------------------------


def _progress(target: dict[str, Any]):
    return lambda msg: log.info("%s: %s", target["target_id"], msg)


# backend_kwargs: what the caller's platform provides a backend (SageMaker: session, role_arn,
# endpoint_url, built by the DAG from an Airflow connection). Nothing for the local backend.


def _earlier_attempts(target: dict[str, Any]) -> list[Path]:
    """Handles of this target left by earlier attempts of the same run key that never reached
    teardown: a worker killed mid-run (SIGKILL, lost node) leaves exactly these."""
    here = target_dir(target)
    return sorted(
        p for p in Path(target["run_dir"]).parent.glob(f"*/{target['target_id']}/handle.json")
        if p.parent != here and not (p.parent / "teardown.json").exists()
    )


def reap_earlier_attempts(target: dict[str, Any], backend: Any) -> list[str]:
    """Tear down what earlier attempts of this run key and target left behind, before deploying
    again: a re-run after a killed worker then neither collides with (SageMaker names are derived
    from the run key) nor runs beside (a local server) its predecessor."""
    reaped = []
    for p in _earlier_attempts(target):
        outcome = backend.teardown(json.loads(p.read_text()))
        (p.parent / "teardown.json").write_text(json.dumps({**outcome, "reaped_by": str(target_dir(target))}, indent=2))
        log.warning("%s: removed what an earlier attempt left running (%s)", target["target_id"], p.parent)
        reaped.append(str(p.parent))
    return reaped


def deploy(target: dict[str, Any], **backend_kwargs: Any) -> dict[str, Any]:
    with stage(target, "deploy"):
        backend = get_backend(target["backend"], **backend_kwargs)
        reaped = reap_earlier_attempts(target, backend)
        if reaped:
            _event(target, "deploy", "reaped", attempts=reaped)
        handle = backend.deploy(target, target_dir(target))
        (target_dir(target) / "handle.json").write_text(json.dumps(handle, indent=2))
        log.info("deployed %s: %s", target["label"], handle.get("base_url"))
        return handle


def deploy_within_quota(target: dict[str, Any], **backend_kwargs: Any) -> dict[str, Any] | None:
    """deploy, unless this instance type already has sagemaker.instance_quota endpoints of ours
    alive (the account's service quota): then None, "not now", and the DAG asks again later
    without holding a worker slot. Callers serialise these calls (one pool slot), so two targets
    cannot both take the last unit of quota."""
    quota = ((target.get("sagemaker") or {}).get("instance_quota") or {}).get(target["instance_type"])
    if quota:
        sm = target["sagemaker"]
        live = get_backend(target["backend"], **backend_kwargs).live_endpoints(sm["region"], target["instance_type"])
        if len(live) >= quota:
            log.info("%s: %d of %d %s endpoint(s) in use (%s); waiting for quota", target["target_id"], len(live),
                     quota, target["instance_type"], ", ".join(live))
            return None
    return deploy(target, **backend_kwargs)


READY, FAILED = "InService", ("Failed", "OutOfService", "Deleting")  # SystemUpdating passes


def check_ready(target: dict[str, Any], handle: dict[str, Any], **backend_kwargs: Any) -> bool:
    """One readiness look (SageMaker): True when InService, False while creating; raises when the
    endpoint failed or endpoint_timeout_s has passed since deploy. Only the outcome is an event."""
    timeout_s = target["sagemaker"]["endpoint_timeout_s"]
    try:
        status, reason = get_backend(target["backend"], **backend_kwargs).status(handle)
        waited_s = (datetime.now(timezone.utc) - datetime.fromisoformat(handle["deployed_at"])).total_seconds()
        if status in FAILED:
            raise DeployError(f"endpoint {handle['endpoint_name']} not InService: {reason or 'status ' + status}")
        if status != READY and waited_s > timeout_s:
            raise DeployError(f"endpoint {handle['endpoint_name']} not InService: status {status} after "
                              f"{timeout_s}s")
    except BaseException as e:
        _failed(target, "wait_ready", e)
        raise
    if status == READY:
        _event(target, "wait_ready", "succeeded", waited_s=waited_s)
    return status == READY


def wait_ready(target: dict[str, Any], handle: dict[str, Any], **backend_kwargs: Any) -> None:
    timeout_s = (target.get("sagemaker") or {}).get("endpoint_timeout_s", 300)
    with stage(target, "wait_ready"):
        get_backend(target["backend"], **backend_kwargs).wait_ready(handle, timeout_s)


def warm_up(target: dict[str, Any], handle: dict[str, Any], **backend_kwargs: Any) -> dict[str, Any]:
    from llmbench.loadgen import run_warmup

    with stage(target, "warm_up"):
        endpoint = get_backend(target["backend"], **backend_kwargs).endpoint(handle)
        return run_warmup(endpoint, target["workload"], progress=_progress(target))


def sweep(target: dict[str, Any], handle: dict[str, Any], **backend_kwargs: Any) -> dict[str, str]:
    from llmbench.loadgen import run_sweep

    with stage(target, "sweep"):
        endpoint = get_backend(target["backend"], **backend_kwargs).endpoint(handle)
        result = run_sweep(endpoint, target["workload"], target_dir(target), slo=target["slo"],
                           progress=_progress(target), record_hook=chaos.record_hook(target["target_id"]))
        return {"requests_path": str(result.requests_path), "levels_path": str(result.levels_path)}


def validate(target: dict[str, Any], swept: dict[str, str]) -> dict[str, Any]:
    from llmbench.validation import validate_results

    with stage(target, "validate"):
        outcome = validate_results(
            Path(swept["requests_path"]),
            Path(swept["levels_path"]),
            target["workload"]["concurrency"],
            target["validation"]["max_error_rate"],
            target_dir(target) / "validation.json",
            target["workload"].get("arrival_rates_rps"),
        )
        if not outcome["validation_passed"]:
            log.warning("validation failed for %s: %s", target["label"], "; ".join(outcome["failures"]))
        return {"validation_passed": outcome["validation_passed"], "path": outcome["path"]}


def teardown(target: dict[str, Any], handle: dict[str, Any] | None, **backend_kwargs: Any) -> dict[str, Any]:
    """Delete what deploy created. A missing handle (deploy never returned) is read from disk."""
    with stage(target, "teardown"):
        if handle is None:
            p = target_dir(target) / "handle.json"
            handle = json.loads(p.read_text()) if p.exists() else None
        if handle is None:
            return {"endpoint_seconds": None}
        outcome = get_backend(target["backend"], **backend_kwargs).teardown(handle)
        (target_dir(target) / "teardown.json").write_text(json.dumps(outcome, indent=2))
        return outcome


# ---- run-level tasks -------------------------------------------------------------------------


def _target_row(run: dict[str, Any], target: dict[str, Any]) -> dict[str, Any]:
    events = read_events(target)
    failed = next((e for e in events if e["status"] == "failed"), None)
    finished = {e["stage"] for e in events if e["status"] == "succeeded"}
    d = target_dir(target)
    validation_passed = None
    if (d / "validation.json").exists():
        validation_passed = bool(json.loads((d / "validation.json").read_text())["validation_passed"])
    endpoint_seconds = None
    if (d / "teardown.json").exists():
        endpoint_seconds = json.loads((d / "teardown.json").read_text()).get("endpoint_seconds")
    if failed is None and not {"sweep", "validate"} <= finished:
        status, failed_stage, error = "failed", None, "did not run to the end (an upstream task failed or was skipped)"
    elif failed is not None:
        status, failed_stage, error = "failed", failed["stage"], failed["error"]
    else:
        status, failed_stage, error = "succeeded", None, None
    return {
        "run_key": run["run_key"],
        "target_id": target["target_id"],
        "label": target["label"],
        "backend": target["backend"],
        "instance_type": target["instance_type"],
        "model": target["model"],
        "precision": target["precision"],
        "serving_config": target["serving_config"],
        "serving_json": json.dumps(target["serving"], sort_keys=True),
        "workload_json": json.dumps(target["workload"], sort_keys=True),
        "usd_per_hour": float(target["usd_per_hour"]),
        "price_source": target["price_source"],
        "price_date": target["price_date"],
        "status": status,
        "failed_stage": failed_stage,
        "error": error,
        "validation_passed": validation_passed,
        "endpoint_seconds": endpoint_seconds,
        "benchmark_cost_usd": pricing.benchmark_cost_usd(float(target["usd_per_hour"]), endpoint_seconds),
        "raw_dir": str(d),
    }


def _price_rows(run: dict[str, Any], target: dict[str, Any], levels, validation_passed) -> list[dict[str, Any]]:
    slo, bound = target["slo"], target["validation"]["max_error_rate"]
    usd_h = float(target["usd_per_hour"])
    apis = pricing.api_prices()
    api = apis["apis"][apis["default_api"]]
    break_even = pricing.break_even_output_tokens_per_s(
        usd_h, api["usd_per_m_input"], api["usd_per_m_output"], apis["input_tokens_per_output_token"])
    rows = []
    for raw in levels.to_dict("records"):
        # Parquet gives NaN for a metric a level could not have (no successful request): None here.
        lv = {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in raw.items()}
        out_tps = lv["output_tokens_per_s"]
        total_tps = (out_tps or 0) + (lv["input_tokens_mean"] or 0) * (lv["requests_per_s"] or 0) if out_tps else None
        decode_per_stream = 1000 / lv["tpot_ms_p50"] if lv["tpot_ms_p50"] else None
        meets = (
            lv["ttft_ms_p90"] is not None
            and lv["tpot_ms_p90"] is not None
            and lv["ttft_ms_p90"] <= slo["ttft_ms"]
            and lv["tpot_ms_p90"] <= slo["tpot_ms"]
            and (lv["error_rate"] or 0) <= bound
        )
        rows.append(
            {
                "run_key": run["run_key"],
                "target_id": target["target_id"],
                "concurrency": int(lv["concurrency"]),
                "arrival_rate_rps": float(lv.get("arrival_rate_rps") or 0.0),
                "load_mode": lv.get("load_mode") or "closed",
                "logical_date": run["logical_date"],
                "instance_type": target["instance_type"],
                "model": target["model"],
                "serving_config": target["serving_config"],
                "usd_per_hour": usd_h,
                "price_source": target["price_source"],
                "output_tokens_per_s": out_tps,
                "requests_per_s": lv["requests_per_s"],
                "usd_per_m_output_tokens": pricing.usd_per_million_tokens(usd_h, out_tps),
                "monthly_usd": pricing.monthly_usd(usd_h),
                "ttft_ms_p50": lv["ttft_ms_p50"],
                "ttft_ms_p90": lv["ttft_ms_p90"],
                "tpot_ms_p50": lv["tpot_ms_p50"],
                "tpot_ms_p90": lv["tpot_ms_p90"],
                "e2e_ms_p50": lv["e2e_ms_p50"],
                "error_rate": lv["error_rate"],
                "meets_slo": bool(meets),
                "validation_passed": validation_passed,
                "total_tokens_per_s": total_tps,
                "usd_per_m_total_tokens": pricing.usd_per_million_tokens(usd_h, total_tps),
                "roofline_tokens_per_s": target.get("roofline_tokens_per_s"),
                "decode_tokens_per_s_per_stream": decode_per_stream,
                "roofline_efficiency": pricing.roofline_efficiency(decode_per_stream, target.get("roofline_tokens_per_s")),
                "break_even_api": apis["default_api"],
                "break_even_output_tokens_per_s": break_even,
                "beats_api": bool(out_tps is not None and out_tps >= break_even),
            }
        )
    return rows


def price_performance(run_dir: str) -> str:
    """Assemble every table of the run from the raw results and catalog prices; write them under
    <run_dir>/tables/ and return run_dir. Runs whatever happened to the targets: a failed target
    is a row too."""
    import pandas as pd

    run = json.loads((Path(run_dir) / "plan.json").read_text())
    targets, levels, requests, prices = [], [], [], []
    for target in run["targets"]:
        row = _target_row(run, target)
        targets.append(row)
        d = target_dir(target)
        if not (d / "levels.parquet").exists():
            continue
        lv = pd.read_parquet(d / "levels.parquet")
        rq = pd.read_parquet(d / "requests.parquet")
        for frame in (lv, rq):
            frame.insert(0, "target_id", target["target_id"])
            frame.insert(0, "run_key", run["run_key"])
            frame["validation_passed"] = row["validation_passed"]
        levels.append(lv)
        requests.append(rq)
        # Per target, over its closed-loop levels: the knee and how much latency the highest
        # level costs (an open-loop curve is over arrival rates, not concurrency).
        level_rows = [r for r in lv.to_dict("records") if not r.get("arrival_rate_rps")]
        row["knee_concurrency"] = metrics.knee_concurrency(level_rows)
        row["e2e_ms_p50_degradation"] = metrics.latency_degradation(level_rows)
        prices.extend(_price_rows(run, target, lv, row["validation_passed"]))

    pp = pd.DataFrame(prices)
    if not pp.empty:
        # Best configuration per model: the cheapest tokens among levels that meet the SLO.
        ok = pp[pp["meets_slo"] & pp["usd_per_m_output_tokens"].notna()]
        best = ok.loc[ok.groupby("model")["usd_per_m_output_tokens"].idxmin()] if not ok.empty else ok
        pp["best_under_slo"] = pp.index.isin(best.index)
    tdf = pd.DataFrame(targets)
    failed = int((tdf["status"] == "failed").sum())
    invalid = int((tdf["validation_passed"] == False).sum())  # noqa: E712 (None is not False)
    costs = [c for c in tdf["benchmark_cost_usd"] if c is not None and c == c]
    runs = pd.DataFrame(
        [
            {
                "run_key": run["run_key"],
                "config_name": run["config_name"],
                "logical_date": run["logical_date"],
                "run_dir": run_dir,
                "report_path": str(Path(run_dir) / "report.html"),
                "planned_at": run["planned_at"],
                "published_at": _now(),
                "status": "succeeded" if failed == 0 and invalid == 0 else ("failed" if failed == len(tdf) else "partial"),
                "targets_planned": len(tdf),
                "targets_failed": failed,
                "targets_validation_failed": invalid,
                "benchmark_cost_usd": sum(costs) if costs else None,
                "llmbench_version": __version__,
            }
        ]
    )
    for col in ("planned_at", "published_at"):
        runs[col] = pd.to_datetime(runs[col], utc=True)
    tables = Path(run_dir) / "tables"
    tables.mkdir(exist_ok=True)
    frames = {
        "runs": runs,
        "targets": tdf,
        "levels": pd.concat(levels, ignore_index=True) if levels else pd.DataFrame(),
        "requests": pd.concat(requests, ignore_index=True) if requests else pd.DataFrame(),
        "price_performance": pp,
    }
    for name, frame in frames.items():
        frame.to_parquet(tables / f"{name}.parquet", index=False)
    return run_dir


def load_tables(run_dir: str) -> dict[str, Any]:
    import pandas as pd

    from llmbench.warehouse import TABLES

    return {t: pd.read_parquet(Path(run_dir) / "tables" / f"{t}.parquet") for t in TABLES}


def publish(run_dir: str, dsn: str | None = None) -> dict[str, Any]:
    """Write the run's tables to the warehouse the config names: the DuckDB file (default), or
    PostgreSQL through `dsn` (the DAG builds it from the config's Airflow connection)."""
    from llmbench import paths, warehouse

    settings = json.loads((Path(run_dir) / "plan.json").read_text()).get("warehouse") or {}
    if settings.get("kind") in ("postgres", "redshift"):
        if not dsn:
            raise ValueError(f"warehouse kind {settings['kind']} needs a DSN (connection {settings.get('conn_id')!r})")
        target: str = dsn
    else:
        target = str(settings.get("path") or paths.default_warehouse_path())
    frames = load_tables(run_dir)
    written = warehouse.publish(frames, target)
    where = warehouse.redact(target)
    log.info("published %s to %s: %s", frames["runs"]["run_key"].iloc[0], where, written)
    return {"warehouse": where, "rows": written}


def report(run_dir: str) -> str:
    from llmbench.report import write_report

    return str(write_report(load_tables(run_dir), Path(run_dir) / "report.html"))


def check(run_dir: str) -> str:
    """Fail loudly, after everything was published, if any target failed or failed validation."""
    targets = load_tables(run_dir)["targets"]
    problems = []
    for t in targets.to_dict("records"):
        if t["status"] != "succeeded":
            problems.append(f"{t['label']}: failed at {t['failed_stage'] or 'an upstream task'}: {t['error']}")
        elif t["validation_passed"] is False:
            problems.append(f"{t['label']}: validation failed (see {t['raw_dir']}/validation.json)")
    if problems:
        raise TargetFailed(f"{len(problems)} of {len(targets)} target(s) failed: " + " | ".join(problems))
    return f"all {len(targets)} target(s) succeeded and passed validation"
