"""`llmbench`: ad-hoc sweeps outside Airflow, plan checks, and a look at published results.

  llmbench sweep --backend openai --url http://HOST:PORT/v1 --concurrency 1,16,64 \\
                 --requests-per-level 32 --input-tokens 512 --output-tokens 128 --out DIR
  llmbench sweep --backend local --parallel 4 ...     # starts and stops llama-server itself
  llmbench sweep --backend sagemaker --endpoint NAME --region us-west-2 [--runtime-url URL] ...
  llmbench plan  --config local [--targets ID,ID] [--concurrency 1,2]
  llmbench show  [--run-key KEY | --config local --date 2026-11-30] [--warehouse PATH]
  llmbench publish RUN_DIR [--warehouse PATH|DSN]   # again, after the warehouse was unreachable
  llmbench rebuild OUT                              # a killed sweep's tables, from its requests.jsonl
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import signal
import sys
import tempfile
import threading
import time
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from llmbench import paths

if TYPE_CHECKING:
    from llmbench.schemas.workload import Workload


def _floats(s: str) -> list[float]:
    try:
        return [float(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {s!r}") from None


def _ints(s: str) -> list[int]:
    try:
        return [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {s!r}") from None


def _say(msg: str) -> None:
    stamp = datetime.now().strftime("%H:%M:%S")
    print(f"[{stamp}] {msg}", file=sys.stderr, flush=True)


LEVEL_COLUMNS = [
    "arrival_rate_rps",
    "concurrency",
    "requests_ok",
    "requests_failed",
    "error_rate",
    "output_tokens_per_s",
    "requests_per_s",
    "ttft_ms_p50",
    "ttft_ms_p99",
    "itl_ms_mean",
    "itl_ms_p50",
    "tpot_ms_p50",
    "e2e_ms_p50",
    "achieved_concurrency",
    "client_cpu_pct",
]
PRICE_COLUMNS = [
    "target_id",
    "concurrency",
    "usd_per_hour",
    "output_tokens_per_s",
    "usd_per_m_output_tokens",
    "ttft_ms_p50",
    "tpot_ms_p50",
    "error_rate",
    "meets_slo",
    "best_under_slo",
    "validation_passed",
]


def _print_frame(df, columns: list[str]) -> None:
    import pandas as pd

    with pd.option_context("display.width", 250, "display.max_columns", 50, "display.float_format", "{:,.3f}".format):
        print(df[[c for c in columns if c in df.columns]].to_string(index=False))


# Workload and llama-server fields -> the sweep flag that sets them (for one-line errors).
SWEEP_FLAGS = {
    "warmup_requests": "--warmup",
    "warmup_each_level": "--warmup-each-level",
    "request_timeout_s": "--timeout",
    "arrival_rates_rps": "--arrival-rates",
}


def cmd_sweep(a: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from llmbench.backends.base import Backend, DeployError
    from llmbench.backends.local.backend import LocalBackend
    from llmbench.backends.openai.backend import OpenAIBackend
    from llmbench.loadgen.sweep import run_sweep, run_warmup
    from llmbench.schemas.targets import LocalServing
    from llmbench.schemas.workload import Workload

    contradiction = _contradiction(a)
    if contradiction:
        print(f"llmbench sweep: {contradiction}", file=sys.stderr)
        return 2
    if a.concurrency is None:
        a.concurrency = DEFAULT_CONCURRENCY
    flags = {
        "input_tokens": a.input_tokens,
        "output_tokens": a.output_tokens,
        "concurrency": sorted(set(a.concurrency)),
        "requests_per_level": a.requests_per_level,
        "warmup_requests": a.warmup,
        "warmup_each_level": a.warmup_each_level,
        "request_timeout_s": a.timeout,
        "seed": a.seed,
    }
    if any(c < 1 for c in flags["concurrency"]) or a.requests_per_level < 1:
        print("llmbench sweep: --concurrency levels and --requests-per-level must be >= 1", file=sys.stderr)
        return 2
    if a.arrival_rates is not None:
        if not a.arrival_rates or any(r <= 0 for r in a.arrival_rates) or a.max_in_flight < 1:
            print("llmbench sweep: --arrival-rates must be > 0 and --max-in-flight >= 1", file=sys.stderr)
            return 2
        flags["arrival_rates_rps"], flags["max_in_flight"] = sorted(set(a.arrival_rates)), a.max_in_flight
    if a.max_response_bytes is not None:
        flags["max_response_bytes"] = a.max_response_bytes
    try:
        workload = Workload.model_validate(flags)
        serving = (
            None
            if a.backend != "local"
            else LocalServing(
                name=f"llama-server-{4 if a.parallel is None else a.parallel}slots",
                parallel=4 if a.parallel is None else a.parallel,
                threads=2 if a.threads is None else a.threads,
                ctx_per_slot=max(1024, a.input_tokens + a.output_tokens + 64),
            )
        )
    except ValidationError as e:  # one line, naming the flag
        err = e.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else ""
        flag = SWEEP_FLAGS.get(field, "--" + field.replace("_", "-"))
        print(f"llmbench sweep: {flag}: {err['msg'].removeprefix('Value error, ')}", file=sys.stderr)
        return 2
    out = Path(a.out)
    refused = _prepare_out(out, a.overwrite)
    if refused:
        print(f"llmbench sweep: --out: {refused}", file=sys.stderr)
        return 2
    if a.backend == "sagemaker":
        return _sweep_existing_sagemaker(a, workload, out)
    if a.backend == "openai" and not a.url:
        print("llmbench sweep: --backend openai needs --url http://HOST:PORT/v1", file=sys.stderr)
        return 2
    backend: Backend
    handle = None
    try:
        _say(f"{a.backend}: deploying")
        # An endpoint of the flags' own, no config target: the backends' CLI entry points.
        if serving is None:
            backend = attacher = OpenAIBackend()
            handle = attacher.attach(a.url, a.model, keep_alive=not a.no_keep_alive)
        else:
            backend = starter = LocalBackend()
            # The server dies with this process however it ends; its handle lets the next sweep
            # into this folder reap it all the same.
            handle = starter.start_server(serving, out, die_with_parent=True)
            (out / "handle.json").write_text(json.dumps(handle, indent=2))
        # An endpoint of your own answers within --timeout or not at all; a server we start may
        # take longer to load its model.
        ready_s = min(300.0, workload.request_timeout_s) if serving is None else 300.0
        _say(f"waiting up to {ready_s:g}s for {a.url or 'llama-server'} to answer")
        backend.wait_ready(handle, ready_s)
        endpoint = backend.endpoint(handle)
        _say(f"endpoint {endpoint.url}")
        run_warmup(endpoint, workload, progress=_say, out_dir=out)
        result = run_sweep(endpoint, workload, out, progress=_say)
    except (DeployError, RuntimeError) as e:  # not reachable, not ready, or every warm-up request failed
        print(f"llmbench sweep: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
        return 1
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise
        print(f"llmbench sweep: --out {out}: {e.strerror}; the records written so far stay in {out}", file=sys.stderr)
        return 1
    finally:
        if handle is not None:
            outcome = backend.teardown(handle)
            if serving is not None:
                with contextlib.suppress(OSError):  # a full disk: the server is stopped all the same
                    (out / "teardown.json").write_text(json.dumps(outcome.to_json(), indent=2))
    return _summarise(result)


SWEEP_FILES = (
    "requests.jsonl",
    "requests.parquet",
    "levels.parquet",
    "handle.json",
    "teardown.json",
    "llama-server.log",
)


def _reap_leftover(out: Path) -> None:
    """A local server a killed sweep into `out` left running (its handle.json, no teardown.json):
    stopped now (only if its process group still serves its port)."""
    from llmbench.backends.local.backend import LocalBackend

    handle_path = out / "handle.json"
    if not handle_path.is_file() or (out / "teardown.json").exists():
        return
    try:
        handle = json.loads(handle_path.read_text())
    except (OSError, ValueError):
        return
    if handle.get("backend") == "local":
        outcome = LocalBackend().teardown(handle)
        (out / "teardown.json").write_text(json.dumps({**outcome.to_json(), "reaped_by": "llmbench sweep"}, indent=2))
        _say(f"stopped llama-server (pid {handle.get('pid')}) that an earlier sweep into {out} left running")


def _prepare_out(out: Path, overwrite: bool) -> str | None:
    """The sweep's folder, ready to write; else why not (one line). A folder that already holds a
    sweep is refused unless --overwrite (its records are not silently replaced); what a killed
    sweep left running there is stopped first."""
    if out.exists() and not out.is_dir():
        return f"{out} is a file, not a folder"
    if out.is_dir():
        _reap_leftover(out)
        held = sorted(p.name for p in out.iterdir())
        if held and not overwrite:
            return (
                f"{out} is not empty ({', '.join(held[:4])}{', ...' if len(held) > 4 else ''}); choose a new "
                f"folder, or --overwrite (after a crash, `llmbench rebuild {out}` rebuilds its tables first)"
            )
        if overwrite:
            for name in SWEEP_FILES:
                (out / name).unlink(missing_ok=True)
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as e:
        return f"cannot write to {out}: {e.strerror or e}"
    return None


DEFAULT_CONCURRENCY = [1, 2, 4, 8]


def _contradiction(a: argparse.Namespace) -> str | None:
    """Flags that contradict each other or the backend (refused, never silently ignored)."""
    if a.arrival_rates is not None and a.concurrency is not None:
        return "--arrival-rates (open loop) and --concurrency (closed loop) contradict each other; give one"
    only = {
        "--url": ("openai", a.url),
        "--model": ("openai", a.model if a.model != "default" else None),
        "--no-keep-alive": ("openai", a.no_keep_alive or None),
        "--endpoint": ("sagemaker", a.endpoint),
        "--region": ("sagemaker", a.region),
        "--runtime-url": ("sagemaker", a.runtime_url),
        "--parallel": ("local", a.parallel),
        "--threads": ("local", a.threads),
    }
    for flag, (backend, value) in only.items():
        if value is not None and a.backend != backend:
            return f"{flag} is for --backend {backend}, not --backend {a.backend}"
    return None


def _summarise(result) -> int:
    """Print a sweep's level table and files; exit status 0 if every request succeeded, else 3."""
    import pandas as pd

    _print_frame(pd.DataFrame(result.levels), LEVEL_COLUMNS)
    print(f"\nrequests: {result.requests_path}\nlevels:   {result.levels_path}")
    failed = sum(lv["requests_failed"] for lv in result.levels)
    if failed == 0:
        return 0
    total = failed + sum(lv["requests_ok"] for lv in result.levels)
    kinds = pd.read_parquet(result.requests_path, columns=["error_kind"])["error_kind"].value_counts()
    why = ", ".join(f"{kind} {n}" for kind, n in kinds.items())
    print(
        f"llmbench sweep: completed, but {failed} of {total} requests failed ({why}); "
        f"their records say why: {result.requests_path}",
        file=sys.stderr,
    )
    return 3


def _sweep_existing_sagemaker(a: argparse.Namespace, workload: Workload, out: Path) -> int:
    """Drive an existing SageMaker endpoint (nothing is deployed or deleted); credentials come from
    the standard AWS chain (environment, profile, instance role)."""
    import boto3

    from llmbench.backends.awsstream import SigV4Signer, runtime_url, sagemaker_headers
    from llmbench.backends.base import Endpoint
    from llmbench.loadgen.sweep import run_sweep, run_warmup

    if not a.endpoint or not a.region:
        print("llmbench sweep: --backend sagemaker needs --endpoint NAME and --region REGION", file=sys.stderr)
        return 2
    try:
        signer = SigV4Signer(boto3.Session(region_name=a.region).get_credentials(), a.region)
    except ValueError as e:
        print(f"llmbench sweep: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 (no credentials, a bad profile: one line, not a traceback)
        print(f"llmbench sweep: AWS credentials: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    endpoint = Endpoint(
        url=runtime_url(a.region, a.endpoint, a.runtime_url),
        headers=sagemaker_headers(),
        wire="sagemaker",
        signer=signer,
        keep_alive=True,
    )
    _say(f"endpoint {endpoint.url}")
    try:
        run_warmup(endpoint, workload, progress=_say, out_dir=out)
    except RuntimeError as e:
        print(f"llmbench sweep: {e}", file=sys.stderr)
        return 1
    return _summarise(run_sweep(endpoint, workload, out, progress=_say))


def cmd_rebuild(a: argparse.Namespace) -> int:
    """requests.parquet and levels.parquet of a sweep folder again, from its requests.jsonl (after
    a crash or kill -9 left the tables unwritten or unreadable)."""
    from llmbench.loadgen.sweep import rebuild

    out = Path(a.out)
    if not (out / "requests.jsonl").is_file():
        print(f"llmbench rebuild: {out} holds no requests.jsonl", file=sys.stderr)
        return 2
    try:
        result, skipped = rebuild(out)
    except OSError as e:
        print(f"llmbench rebuild: cannot rebuild {out}: {e.strerror or e}", file=sys.stderr)
        return 1
    if skipped:
        _say(f"skipped {skipped} unreadable line(s) of requests.jsonl (a line cut by the kill)")
    if not result.levels:
        print(f"llmbench rebuild: {out}/requests.jsonl holds no record", file=sys.stderr)
        return 1
    return _summarise(result)


def price_label(price) -> str:
    """A target's price as the plan prints it: $/hour, $/M input and output tokens, or none."""
    if price.basis == "per_hour":
        return f"${price.usd_per_hour:.4f}/h"
    if price.basis == "per_token":
        return f"${price.usd_per_m_input_tokens:g}/${price.usd_per_m_output_tokens:g} per M"
    return "no price"


def price_basis_line(basis: str, input_mean: float, output_mean: float) -> str:
    """What the run's $/M figures count (config `price_basis`), as the plan prints it."""
    ratio = (input_mean + output_mean) / output_mean if output_mean else 1.0
    if basis == "total":
        return (
            f"price basis: $/M total tokens (input + output: ~{input_mean:.0f} + ~{output_mean:.0f} per request), "
            f"which ranks best_under_slo and heads the report; {ratio:.2f}x the tokens, so ~1/{ratio:.2f} of $/M "
            "per output token (also on every row)"
        )
    return (
        f"price basis: $/M output tokens, which ranks best_under_slo and heads the report; $/M total tokens "
        f"(~{input_mean:.0f} in + ~{output_mean:.0f} out per request) is on every row too"
    )


def _usd(usd: float | None) -> str:
    """An estimated cost: cents for most targets, more digits below a cent (per-token APIs)."""
    if usd is None:
        return "-"
    return f"{usd:.2f}" if usd >= 0.01 or usd == 0 else f"{usd:.4f}"


def cmd_plan(a: argparse.Namespace) -> int:
    from llmbench.planning.config import ConfigError
    from llmbench.planning.plan import plan_checked

    params = {"targets": a.targets or [], "concurrency": a.concurrency or []}
    if a.requests_per_level is not None:
        params["requests_per_level"] = a.requests_per_level
    try:
        with tempfile.TemporaryDirectory() as tmp:  # a dry plan leaves no run folder behind
            run, checks = plan_checked(a.config, a.date, params, runs_root=Path(tmp))
    except ConfigError as e:
        print(f"llmbench plan: {e}", file=sys.stderr)
        return 2
    from llmbench.schemas.workload import length_mean, length_range

    w = run.targets[0].workload

    def tokens(spec) -> str:  # "128", or "~1000 (700-1300)" for a distribution
        lo, hi = length_range(spec)
        return str(lo) if lo == hi else f"~{length_mean(spec):.0f} ({lo}-{hi})"

    prefix = f" + {w.shared_prefix_tokens} shared prefix" if w.shared_prefix_tokens else ""
    print(
        f"run key {run.run_key} ({', '.join(run.backends)}): {len(run.targets)} target(s), concurrency "
        f"{w.concurrency}, {w.requests_per_level} requests/level, {tokens(w.input_tokens)} in{prefix}"
        f" / {tokens(w.output_tokens)} out; every check passed"
    )
    print(
        price_basis_line(
            run.price_basis, length_mean(w.input_tokens) + w.shared_prefix_tokens, length_mean(w.output_tokens)
        )
    )
    for t in run.targets:
        print(f"\n  {t.target_id} ({t.backend_kind}, {t.region}): {t.label}")
        for outcome in checks[t.target_id]:
            print(f"    {outcome}")
        cost = f"${_usd(t.estimated_usd)}" if t.estimated_usd is not None else "- (no price)"
        basis = {"per_hour": "endpoint-hours x $/h", "per_token": "tokens at list price", "none": "no price"}
        print(f"    estimated cost: {cost} ({basis[t.price.basis]})")
    print()
    print(
        f"  {'target':<24} {'backend':<9} {'instance':<18} {'serving':<26} {'prec':<6} {'price':>20} "
        f"{'roofline tok/s':>14} {'est. hours':>10} {'est. $':>8}"
    )
    for t in run.targets:
        roof = f"{t.roofline_tokens_per_s:.0f}" if t.roofline_tokens_per_s else "-"
        usd = f"{_usd(t.estimated_usd):>8}"
        print(
            f"  {t.target_id:<24} {t.backend_kind:<9} {t.instance_type:<18} {t.serving_config:<26} "
            f"{t.precision:<6} {price_label(t.price):>20} {roof:>14} {t.estimated_endpoint_hours:>10.2f} {usd}"
        )
    unpriced = [t.target_id for t in run.targets if t.estimated_usd is None]
    print(
        f"  estimated total: {run.estimated_endpoint_hours:.2f} endpoint-hours, ${run.estimated_usd:.2f} "
        "(deploy + InService + warm-up + sweep at 60 % of the bandwidth roofline; per-token targets: "
        "every request's tokens at list price; an estimate, not a quote)"
        + (f"; without {', '.join(unpriced)} (no price)" if unpriced else "")
    )
    for warning in run.warnings:
        print(f"  WARNING {warning}")
    return 0


def cmd_show(a: argparse.Namespace) -> int:
    try:
        return _show(a)
    except Exception as e:  # noqa: BLE001 (a warehouse that cannot be read: one line, not a traceback)
        why = str(e).splitlines()[0] if str(e) else ""
        print(f"llmbench show: cannot read the warehouse: {type(e).__name__}: {why}", file=sys.stderr)
        return 1


def _show(a: argparse.Namespace) -> int:
    from llmbench import warehouse
    from llmbench.planning.config import ConfigError, load_config, make_run_key

    if a.warehouse and warehouse.is_postgres(a.warehouse):
        db = a.warehouse
    else:
        db = Path(a.warehouse) if a.warehouse else paths.default_warehouse_path()
        if not db.exists():
            print(f"llmbench show: no warehouse at {db}", file=sys.stderr)
            return 1
    if a.run_key:
        run_key = a.run_key
    elif a.config:
        try:
            run_key = make_run_key(load_config(a.config).name, a.date)  # a config path's run key: its name
        except (ConfigError, ValueError) as e:
            print(f"llmbench show: {e}", file=sys.stderr)
            return 2
    else:
        latest = warehouse.query("SELECT run_key FROM llmbench.runs ORDER BY published_at DESC LIMIT 1", target=db)
        if latest.empty:
            print("llmbench show: the warehouse holds no run yet", file=sys.stderr)
            return 1
        run_key = latest["run_key"].iloc[0]
    runs = warehouse.query("SELECT * FROM llmbench.runs WHERE run_key = ?", [run_key], target=db)
    if runs.empty:
        print(f"llmbench show: run key {run_key!r} is not in {db}", file=sys.stderr)
        return 1
    run = runs.iloc[0]
    pp = warehouse.query(
        "SELECT * FROM llmbench.price_performance WHERE run_key = ? ORDER BY target_id, concurrency",
        [run_key],
        target=db,
    )
    targets = warehouse.query(
        "SELECT target_id, status, failed_stage, error, validation_passed, raw_dir FROM llmbench.targets "
        "WHERE run_key = ? ORDER BY target_id",
        [run_key],
        target=db,
    )
    print(
        f"llmbench run {run_key}: {run['status']} ({run['targets_planned']} targets, "
        f"{run['targets_failed']} failed, {run['targets_validation_failed']} failed validation)\n"
    )
    print("price-performance ($ per million output tokens at each concurrency):")
    _print_frame(pp, PRICE_COLUMNS)
    for t in targets.to_dict("records"):
        if t["status"] != "succeeded":
            print(f"\nFAILED {t['target_id']} at {t['failed_stage']}: {t['error']}")
    print(f"\nwarehouse:          {warehouse.redact(db)}")
    print(f"raw results:        {run['run_dir']}")
    print(
        "validation results: "
        + ", ".join(
            str(Path(d) / "validation.json") for d in targets["raw_dir"] if (Path(d) / "validation.json").exists()
        )
    )
    report = Path(run["run_dir"]) / "report.html"
    if report.exists():
        print(f"report:             {report}")
    return 0 if run["status"] == "succeeded" else 1


def cmd_publish(a: argparse.Namespace) -> int:
    """Publish a run folder's tables (written by price_performance) to the warehouse: what an
    operator does after the publish task failed because the warehouse was down. Replaces the run
    key's rows, like the task."""
    from llmbench import warehouse
    from llmbench.pipeline import ensure_report, load_tables, publish

    run_dir = Path(a.run_dir)
    if not (run_dir / "tables" / "runs.parquet").exists():
        print(f"llmbench publish: {run_dir} holds no tables/ (did price_performance run?)", file=sys.stderr)
        return 2
    try:
        if a.warehouse:
            frames = load_tables(str(run_dir))
            ensure_report(str(run_dir), frames)  # runs.report_path names it
            written = warehouse.publish(frames, a.warehouse)
            where = warehouse.redact(a.warehouse)
        else:
            out = publish(str(run_dir))
            written, where = out["rows"], out["warehouse"]
    except Exception as e:  # noqa: BLE001 (one clear line for the operator, not a traceback)
        print(f"llmbench publish: failed, the warehouse is unchanged: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(f"published {run_dir} to {where}: {written}")
    return 0


def _warehouse_of(a: argparse.Namespace) -> Path | str:
    """--warehouse, else the config's DuckDB file, else the default one. A PostgreSQL warehouse is
    reached through an Airflow connection in the DAG; from the CLI, name its DSN with --warehouse."""
    from llmbench import warehouse
    from llmbench.planning.config import load_config

    if a.warehouse:
        return a.warehouse if warehouse.is_postgres(a.warehouse) else Path(a.warehouse)
    settings = load_config(a.config).warehouse if a.config else None
    if settings is not None and settings.kind != "duckdb":
        raise ValueError(f"config {a.config}: its warehouse is {settings.kind}; name its DSN with --warehouse")
    return Path(settings.path) if settings is not None and settings.path else paths.default_warehouse_path()


def cmd_reprocess(a: argparse.Namespace) -> int:
    """Recompute published runs from their stored raw results with today's code and config, and
    publish them again under the same run keys (llmbench.results.reprocess). Nothing is deployed."""
    from llmbench.planning.config import ConfigError
    from llmbench.results.reprocess import reprocess_range

    try:
        date_from, date_to = (date.fromisoformat(d).isoformat() for d in (a.date_from, a.date_to))
        target = _warehouse_of(a)
    except (ValueError, ConfigError) as e:
        print(f"llmbench reprocess: {e}", file=sys.stderr)
        return 2
    if date_from > date_to:
        print(f"llmbench reprocess: --from {date_from} is after --to {date_to}", file=sys.stderr)
        return 2
    if isinstance(target, Path) and not target.exists():
        print(f"llmbench reprocess: no warehouse at {target}", file=sys.stderr)
        return 1
    t0 = time.monotonic()
    try:
        outcomes = reprocess_range(target, date_from, date_to, a.config, a.prices, progress=_say)
    except Exception as e:  # noqa: BLE001 (the warehouse or a run failed: one line; published runs stay)
        print(
            f"llmbench reprocess: failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
            file=sys.stderr,
        )
        return 1
    done = sum(o.status == "reprocessed" for o in outcomes)
    _say(f"reprocessed {done} run(s), skipped {len(outcomes) - done}, in {time.monotonic() - t0:.1f}s")
    return 0 if done == len(outcomes) else 1


def _weeks(s: str) -> int:
    from llmbench.results.retention import parse_weeks

    try:
        return parse_weeks(s)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def cmd_prune(a: argparse.Namespace) -> int:
    """Delete raw results older than the retention (LLMBENCH_RAW_RESULTS_WEEKS, or --weeks)."""
    from llmbench.results.retention import RAW_RESULTS_WEEKS_ENV, prune_raw_results, raw_results_weeks

    try:
        weeks = a.weeks if a.weeks is not None else raw_results_weeks()
    except ValueError as e:
        print(f"llmbench prune: {e}", file=sys.stderr)
        return 2
    if weeks is None:
        print(f"llmbench prune: raw results are kept for ever ({RAW_RESULTS_WEEKS_ENV} unset; or pass --weeks)")
        return 0
    removed = prune_raw_results(weeks, dry_run=a.dry_run, say=lambda m: print(m, file=sys.stderr))
    for attempt in removed:
        print(f"{'would remove' if a.dry_run else 'removed'} {attempt}")
    print(f"{len(removed)} attempt folder(s) planned more than {weeks} week(s) ago")
    return 0


EXIT_CODES = """exit status (every command):
  0    done (sweep: every request succeeded)
  1    the run failed: endpoint unreachable or unusable, warehouse unreadable or busy, run not succeeded
  2    bad input: a flag, config, date or folder refused, in one line naming it
  3    sweep completed, but some requests failed (their records say why)
  130  interrupted (SIGINT), 143 terminated (SIGTERM): a local server is torn down first"""


class OneLineParser(argparse.ArgumentParser):
    """argparse, whose usage errors are one line (exit status 2) like every other refusal."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="llmbench",
        description="LLM serving price-performance benchmarks.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=OneLineParser)

    s = sub.add_parser("sweep", help="drive a streaming endpoint through a concurrency sweep")
    s.add_argument("--backend", choices=["openai", "local", "sagemaker"], default="openai")
    s.add_argument("--url", help="OpenAI-compatible base URL ending in /v1 (backend openai)")
    s.add_argument("--endpoint", help="an existing SageMaker endpoint's name (backend sagemaker)")
    s.add_argument("--region", help="its AWS region (backend sagemaker)")
    s.add_argument("--runtime-url", help="override the SageMaker runtime host (VPC endpoints, tests)")
    s.add_argument("--model", default="default", help="model name sent in the request (backend openai)")
    s.add_argument(
        "--no-keep-alive",
        action="store_true",
        help="a fresh connection per request (Connection: close) instead of one kept per stream (backend openai)",
    )
    s.add_argument("--parallel", type=int, help="llama-server slots (backend local; default 4)")
    s.add_argument("--threads", type=int, help="llama-server threads (backend local; default 2)")
    s.add_argument("--concurrency", type=_ints, help="closed-loop levels (default 1,2,4,8)")
    s.add_argument("--requests-per-level", type=int, default=16)
    s.add_argument(
        "--arrival-rates",
        type=_floats,
        default=None,
        help="open loop instead: Poisson arrival rates, requests/s, one level each (e.g. 0.5,1,2)",
    )
    s.add_argument("--max-in-flight", type=int, default=256, help="open loop: requests in flight at most")
    s.add_argument("--input-tokens", type=int, default=256)
    s.add_argument("--output-tokens", type=int, default=64)
    s.add_argument("--warmup", type=int, default=2, help="warm-up requests, timings discarded")
    s.add_argument(
        "--warmup-each-level",
        type=int,
        default=0,
        help="closed loop: before each level, this many warm-up requests per stream at its concurrency (warmup.jsonl)",
    )
    s.add_argument("--timeout", type=float, default=120.0, help="per-request timeout, seconds (a hard deadline)")
    s.add_argument("--max-response-bytes", type=int, help="one response's byte budget (default 16 MiB)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument(
        "--out", required=True, help="a new or empty folder for requests.jsonl, requests.parquet, levels.parquet"
    )
    s.add_argument("--overwrite", action="store_true", help="replace the sweep a non-empty --out already holds")
    s.set_defaults(func=cmd_sweep)

    pl = sub.add_parser("plan", help="resolve a config and Params into targets, or say what is wrong")
    pl.add_argument("--config", default="local")
    pl.add_argument("--date", default=date.today().isoformat())
    pl.add_argument("--targets", type=lambda s: [x for x in s.split(",") if x])
    pl.add_argument("--concurrency", type=_ints)
    pl.add_argument("--requests-per-level", type=int)
    pl.set_defaults(func=cmd_plan)

    sh = sub.add_parser("show", help="print a published run's price-performance and where its files are")
    sh.add_argument("--run-key")
    sh.add_argument("--config")
    sh.add_argument("--date", default=datetime.now(UTC).date().isoformat())
    sh.add_argument("--warehouse", help="a DuckDB file (default .llmbench/warehouse.duckdb) or a postgresql:// DSN")
    sh.set_defaults(func=cmd_show)

    rb = sub.add_parser("rebuild", help="rebuild a sweep folder's tables from its requests.jsonl (after a crash)")
    rb.add_argument("out", help="the sweep's --out folder")
    rb.set_defaults(func=cmd_rebuild)

    pb = sub.add_parser("publish", help="publish a run folder's tables again (after a failed publish task)")
    pb.add_argument("run_dir")
    pb.add_argument("--warehouse", help="a DuckDB file or a postgresql:// DSN (default: the run's config)")
    pb.set_defaults(func=cmd_publish)

    rp = sub.add_parser(
        "reprocess",
        help="recompute published runs from their raw results with today's code and config, and publish them again",
    )
    rp.add_argument("--from", dest="date_from", required=True, help="first logical date (YYYY-MM-DD)")
    rp.add_argument("--to", dest="date_to", required=True, help="last logical date (YYYY-MM-DD)")
    rp.add_argument("--config", help="only this config's runs, with its settings today (default: each run's own)")
    rp.add_argument(
        "--prices",
        choices=["frozen", "current"],
        default="frozen",
        help="frozen: the prices each run was measured at (default); current: today's",
    )
    rp.add_argument(
        "--warehouse", help="a DuckDB file or a postgresql:// DSN (default: the config's, else the default file)"
    )
    rp.set_defaults(func=cmd_reprocess)

    pr = sub.add_parser("prune", help="delete raw results older than the retention (LLMBENCH_RAW_RESULTS_WEEKS)")
    pr.add_argument("--weeks", type=_weeks, help="override the setting for this call (whole weeks >= 1)")
    pr.add_argument("--dry-run", action="store_true", help="list what would go; delete nothing")
    pr.set_defaults(func=cmd_prune)
    return p


class Interrupted(KeyboardInterrupt):
    """SIGTERM, raised like SIGINT so that every `finally` (the server's teardown) runs."""

    signum = signal.SIGTERM


def _on_sigterm(signum, frame) -> None:
    raise Interrupted()


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    t0 = time.monotonic()
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if main_thread else None
    try:
        rc = a.func(a)
    except KeyboardInterrupt as e:
        signum = getattr(e, "signum", signal.SIGINT)
        where = f"; the records so far are in {a.out}/requests.jsonl" if a.command == "sweep" else ""
        print(f"llmbench {a.command}: interrupted ({signal.Signals(signum).name}){where}", file=sys.stderr)
        return 128 + signum
    finally:
        if main_thread and previous is not None:
            signal.signal(signal.SIGTERM, previous)
    if a.command == "sweep" and rc in (0, 3):
        _say(f"done in {time.monotonic() - t0:.1f}s")
    return rc


if __name__ == "__main__":
    sys.exit(main())
