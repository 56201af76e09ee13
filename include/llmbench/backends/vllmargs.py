"""vLLM's own parser on the launch arguments we give vLLM, as each backend kind that launches vLLM
gives them (its BackendSpec.vllm_launch: an instance's container command line, a managed
container's environment as that container turns it into flags, the local engine's command line).
They are parsed by the vLLM that `make vllm` installed
(`make_arg_parser` on a `FlexibleArgumentParser`, then `validate_parsed_serve_args`), in its own
venv, all in one subprocess: nothing starts, no model loads. A typo in `extra_args` or a key
`speculative_config` does not have is found before anything is deployed, naming the flag.

The installed vLLM is not always the container's: where the catalog's image carries another
version, the check says so (flags come and go between releases)."""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from llmbench.backends import registry
from llmbench.schemas.targets import ResolvedTarget

# The checker, run by the vLLM venv's Python: [{"name", "argv"}] on stdin, [{"name", "error"}] out.
_CHECKER = r"""
import contextlib, dataclasses, io, json, sys
from vllm.entrypoints.launchers.cli_args import make_arg_parser, validate_parsed_serve_args
from vllm.utils.argparse_utils import FlexibleArgumentParser
from vllm.config import SpeculativeConfig
import vllm

spec_keys = {f.name for f in dataclasses.fields(SpeculativeConfig)}
out = []
for item in json.load(sys.stdin):
    parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = parser.parse_args(item["argv"])
        validate_parsed_serve_args(args)
        spec = args.speculative_config
        if isinstance(spec, dict):
            unknown = sorted(set(spec) - spec_keys)
            if unknown:
                raise ValueError(f"--speculative-config: unknown key(s) {unknown}")
        out.append({"name": item["name"], "error": None})
    except SystemExit:
        lines = [ln for ln in err.getvalue().strip().splitlines() if ln.strip()]
        out.append({"name": item["name"], "error": lines[-1] if lines else "refused"})
    except Exception as e:  # validate_parsed_serve_args raises ValueError / TypeError
        out.append({"name": item["name"], "error": f"{type(e).__name__}: {e}".splitlines()[0]})
print(json.dumps({"version": vllm.__version__, "results": out}))
"""
PARSE_TIMEOUT_S = 300.0  # ~20 s of imports on two idle cores; far more on a loaded machine
_IMAGE_VERSION = re.compile(r"vllm[-_a-z]*:v?(\d+\.\d+(?:\.\d+)?)")


@dataclass(frozen=True)
class Launch:
    """One vLLM launch as a target gives it: where (target id and path), the serve argv, and the
    vLLM version of the container that would run it (None: unknown, or the local engine)."""

    name: str
    argv: list[str]
    container_version: str | None


def image_version(image: str) -> str | None:
    m = _IMAGE_VERSION.search(image)
    return m.group(1) if m else None


def launches(target: ResolvedTarget) -> list[Launch]:
    """The vLLM launch of a target whose kind launches vLLM for it (BackendSpec.vllm_launch); empty
    otherwise."""
    hook = registry.get(target.backend_kind).vllm_launch
    launch = hook(target) if hook is not None else None
    if launch is None:
        return []
    argv, version = launch
    return [Launch(f"targets[{target.target_id}] ({target.backend_kind})", argv, version)]


def check(items: list[Launch], python: Path, timeout_s: float = PARSE_TIMEOUT_S) -> tuple[str, dict[str, str | None]]:
    """(the installed vLLM's version, {launch name: None if vLLM's parser and validation accept
    its argv, else vLLM's one-line refusal}). Raises OSError / subprocess errors when the venv
    cannot run the checker."""
    payload = json.dumps([{"name": i.name, "argv": i.argv} for i in items])
    proc = subprocess.run(
        [str(python), "-c", _CHECKER],
        input=payload,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"},
    )
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    if proc.returncode != 0 or not last.startswith("{"):
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        raise RuntimeError(f"vLLM's argument checker failed (exit {proc.returncode}): {tail}")
    doc = json.loads(last)
    return str(doc["version"]), {r["name"]: r["error"] for r in doc["results"]}


def line(item: Launch, installed: str, error: str | None) -> str:
    """One line per launch: accepted or vLLM's refusal, and the version caveat where it applies."""
    verdict = "accepted" if error is None else f"refused: {error}"
    caveat = ""
    if item.container_version and item.container_version != installed:
        caveat = f" (checked with vLLM {installed}; the container runs vLLM {item.container_version})"
    return f"{item.name}: vLLM's parser {verdict}{caveat}"
