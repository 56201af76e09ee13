"""`llmbench sweep`: drive a streaming endpoint through a concurrency (or arrival-rate) sweep.

The workload's flags are derived from the `Workload` model (schemas.workload): each flag in
WORKLOAD_FLAGS sets the field it names, with the field's default and description; a flag not
given leaves the model's default. The endpoint's flags (--backend, --url, ...) are this command's.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import sys
import tempfile
from pathlib import Path
from types import UnionType
from typing import TYPE_CHECKING, Annotated, Any, Union, get_args, get_origin

from llmbench.cli.output import floats, ints, safe
from llmbench.cli.output import say as _say
from llmbench.cli.output import summarise as _summarise
from llmbench.errors import InputError, LlmbenchError, one_line

if TYPE_CHECKING:
    from pydantic.fields import FieldInfo

    from llmbench.schemas.workload import Workload

# Workload field -> the sweep flag that sets it, in the order `llmbench sweep --help` lists them.
# Everything else about the flag (type, default, help) is the field's.
WORKLOAD_FLAGS = {
    "concurrency": "--concurrency",
    "requests_per_level": "--requests-per-level",
    "arrival_rates_rps": "--arrival-rates",
    "max_in_flight": "--max-in-flight",
    "input_tokens": "--input-tokens",
    "output_tokens": "--output-tokens",
    "warmup_requests": "--warmup",
    "warmup_each_level": "--warmup-each-level",
    "request_timeout_s": "--timeout",
    "max_response_bytes": "--max-response-bytes",
    "seed": "--seed",
}

SWEEP_FILES = (
    "requests.jsonl",
    "requests.parquet",
    "levels.parquet",
    "handle.json",
    "teardown.json",
    "llama-server.log",
    "sweep.owner",
)


def _scalar(t: Any) -> Any:
    """int or float out of Annotated[...] (StrictInt is Annotated[int, Strict()])."""
    return get_args(t)[0] if get_origin(t) is Annotated else t


def flag_type(info: FieldInfo) -> Any:
    """The argparse type of a Workload field: int, float, or a comma list of either. A field that
    may also be a distribution (input_tokens) takes its plain number from the command line."""
    ann = info.annotation
    union = get_origin(ann) in (Union, UnionType)
    first = next(t for t in get_args(ann) if t is not type(None)) if union else ann  # int of int | LengthDist
    if get_origin(first) is list:
        return ints if _scalar(get_args(first)[0]) is int else floats
    kind = _scalar(first)
    if kind not in (int, float):
        raise TypeError(f"no flag type for {info.annotation}")
    return kind


def default_text(default: Any) -> str:
    """A default as it would be typed: 1,2,4,8 for a list, 120 for 120.0."""
    if isinstance(default, list):
        return ",".join(default_text(x) for x in default)
    return f"{default:g}" if isinstance(default, float) else str(default)


def flag_help(info: FieldInfo) -> str:
    """The field's description and its default, as the flag's help (argparse formats '%')."""
    default = info.get_default(call_default_factory=True)
    text = (info.description or "") + ("" if default is None else f" (default {default_text(default)})")
    return text.replace("%", "%%")


def add_parser(sub: Any) -> None:
    from llmbench.schemas.workload import Workload

    s = sub.add_parser("sweep", help="drive a streaming endpoint through a concurrency sweep")
    s.add_argument("--backend", choices=["openai", "local", *_existing_kinds()], default="openai")
    s.add_argument("--url", help="OpenAI-compatible base URL ending in /v1 (backend openai)")
    s.add_argument("--endpoint", help=f"an existing endpoint's name (backend {'/'.join(_existing_kinds())})")
    s.add_argument("--region", help=f"its AWS region (backend {'/'.join(_existing_kinds())})")
    s.add_argument("--runtime-url", help="override the runtime host (VPC endpoints, tests)")
    s.add_argument("--model", default="default", help="model name sent in the request (backend openai)")
    s.add_argument(
        "--no-keep-alive",
        action="store_true",
        help="a fresh connection per request (Connection: close) instead of one kept per stream (backend openai)",
    )
    s.add_argument("--parallel", type=int, help="llama-server slots (backend local; default 4)")
    s.add_argument("--threads", type=int, help="llama-server threads (backend local; default 2)")
    for field, flag in WORKLOAD_FLAGS.items():
        info = Workload.model_fields[field]
        # default None: a flag not given leaves the model's default (and --arrival-rates can tell
        # an explicit --concurrency from none)
        s.add_argument(
            flag,
            dest=field,
            type=flag_type(info),
            default=None,
            metavar=flag.removeprefix("--").replace("-", "_").upper(),
            help=flag_help(info),
        )
    s.add_argument(
        "--out", required=True, help="a new or empty folder for requests.jsonl, requests.parquet, levels.parquet"
    )
    s.add_argument("--overwrite", action="store_true", help="replace the sweep a non-empty --out already holds")
    s.set_defaults(func=run)


def workload_of(a: argparse.Namespace) -> Workload:
    """The Workload the flags give (the model's defaults for those not given); InputError naming
    the flag otherwise. Repeated levels or rates are merged, as a command line means them."""
    from pydantic import ValidationError

    from llmbench.schemas.workload import Workload

    given: dict[str, Any] = {}
    for field in WORKLOAD_FLAGS:
        value = getattr(a, field)
        if value is not None:
            given[field] = sorted(set(value)) if isinstance(value, list) else value
    try:
        return Workload.model_validate(given)
    except ValidationError as e:  # one line, naming the flag
        err = e.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else ""
        flag = WORKLOAD_FLAGS.get(field, "--" + field.replace("_", "-")) if field else ""
        msg = err["msg"].removeprefix("Value error, ")
        raise InputError(f"{flag}: {msg}" if flag else msg) from None


def run(a: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from llmbench.backends.base import Backend
    from llmbench.backends.local.backend import LocalBackend
    from llmbench.backends.local.models import LocalServing
    from llmbench.backends.openai.backend import OpenAIBackend
    from llmbench.loadgen.sweep import run_sweep, run_warmup
    from llmbench.schemas.workload import length_range

    contradiction = _contradiction(a)
    if contradiction:
        raise InputError(contradiction)
    workload = workload_of(a)
    try:
        serving = (
            None
            if a.backend != "local"
            else LocalServing(
                name=f"llama-server-{4 if a.parallel is None else a.parallel}slots",
                parallel=4 if a.parallel is None else a.parallel,
                threads=2 if a.threads is None else a.threads,
                ctx_per_slot=max(
                    1024, length_range(workload.input_tokens)[1] + length_range(workload.output_tokens)[1] + 64
                ),
            )
        )
    except ValidationError as e:  # one line, naming the flag
        err = e.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else ""
        raise InputError(f"--{field.replace('_', '-')}: {err['msg'].removeprefix('Value error, ')}") from None
    out = Path(a.out)
    refused = _prepare_out(out, a.overwrite)
    if refused:
        raise InputError(f"--out: {refused}")
    if a.backend in _existing_kinds():
        return _sweep_existing(a, workload, out)
    if a.backend == "openai" and not a.url:
        raise InputError("--backend openai needs --url http://HOST:PORT/v1")
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
    except RuntimeError as e:  # DeployError: not reachable or not ready; or every warm-up request failed
        if isinstance(e, LlmbenchError):
            raise
        raise LlmbenchError(one_line(e)) from e
    except OSError as e:  # a full disk under --out: one line, the records so far kept
        if e.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise
        raise LlmbenchError(f"--out {out}: {e.strerror}; the records written so far stay in {out}") from e
    finally:
        if handle is not None:
            outcome = backend.teardown(handle)
            if serving is not None:
                with contextlib.suppress(OSError):  # a full disk: the server is stopped all the same
                    (out / "teardown.json").write_text(json.dumps(outcome.to_json(), indent=2))
    return _summarise(result)


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


def _contradiction(a: argparse.Namespace) -> str | None:
    """Flags that contradict each other or the backend (refused, never silently ignored)."""
    if a.arrival_rates_rps is not None and a.concurrency is not None:
        return "--arrival-rates (open loop) and --concurrency (closed loop) contradict each other; give one"
    only = {
        "--url": ("openai", a.url),
        "--model": ("openai", a.model if a.model != "default" else None),
        "--no-keep-alive": ("openai", a.no_keep_alive or None),
        "--endpoint": ("/".join(_existing_kinds()), a.endpoint),
        "--region": ("/".join(_existing_kinds()), a.region),
        "--runtime-url": ("/".join(_existing_kinds()), a.runtime_url),
        "--parallel": ("local", a.parallel),
        "--threads": ("local", a.threads),
    }
    for flag, (backend, value) in only.items():
        if value is not None and a.backend not in backend.split("/"):
            return f"{flag} is for --backend {backend}, not --backend {a.backend}"
    return None


def _existing_kinds() -> tuple[str, ...]:
    """The backend kinds that can drive an endpoint that already exists (BackendSpec.existing_endpoint)."""
    from llmbench.backends import registry

    return tuple(spec.kind for spec in registry.specs() if spec.existing_endpoint is not None)


def _sweep_existing(a: argparse.Namespace, workload: Workload, out: Path) -> int:
    """Drive an existing endpoint of a.backend (nothing is deployed or deleted); credentials come
    from the standard AWS chain (environment, profile, instance role)."""
    from llmbench.backends import registry
    from llmbench.loadgen.sweep import run_sweep, run_warmup

    existing = registry.get(a.backend).existing_endpoint
    assert existing is not None
    if not a.endpoint or not a.region:
        print(f"llmbench sweep: --backend {a.backend} needs --endpoint NAME and --region REGION", file=sys.stderr)
        return 2
    try:
        endpoint = existing(a.endpoint, a.region, a.runtime_url)
    except ValueError as e:
        print(f"llmbench sweep: {safe(e)}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 (no credentials, a bad profile: one line, not a traceback)
        print(f"llmbench sweep: AWS credentials: {type(e).__name__}: {safe(e)}", file=sys.stderr)
        return 1
    _say(f"endpoint {endpoint.url}")
    try:
        run_warmup(endpoint, workload, progress=_say, out_dir=out)
    except RuntimeError as e:
        print(f"llmbench sweep: {safe(e)}", file=sys.stderr)
        return 1
    return _summarise(run_sweep(endpoint, workload, out, progress=_say))
