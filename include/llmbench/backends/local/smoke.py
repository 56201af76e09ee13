"""Prove a llama-server binary on this CPU before it is trusted: start it on the model, generate a
few tokens through the HTTP API, stop it.

A binary built for another CPU (or with kernels this CPU mishandles: AMX under -march=native) can
load the model and answer /health, then die at the first decode; only a real generation shows it.
Standard library only: `scripts/get_local_server.sh` runs it as `python -m llmbench.backends.local.smoke`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from llmbench.errors import LlmbenchError

SMOKE_TOKENS = 8
# CPU flags worth naming when a binary crashes: the instruction sets llama.cpp's kernels use.
ISA_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "bmi2",
    "avx512f",
    "avx512_bf16",
    "avx512_fp16",
    "avx512_vnni",
    "avx_vnni",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
    "asimd",
    "sve",
    "sve2",
    "i8mm",
)


class SmokeFailed(LlmbenchError):
    """The binary crashed, hung or answered wrongly; the message is one line."""


def cpu_model_and_flags() -> tuple[str, list[str]]:
    model, flags = platform.processor() or platform.machine(), list[str]()
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return model, flags
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("model name", "CPU part") and model in ("", platform.machine()):
            model = value.strip()
        elif key in ("flags", "Features") and not flags:
            flags = sorted(value.split())
    return model, flags


def cpu_fingerprint() -> str:
    """Stable per CPU kind: a cached binary verified on one kind is checked again on another."""
    model, flags = cpu_model_and_flags()
    text = "\n".join([platform.machine(), model, " ".join(flags)])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post_json(url: str, body: dict, timeout_s: float) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout_s) as r:
        return json.load(r)


def _exit_reason(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _check_reply(reply: Any) -> int:
    """The smoke generation's token count, once the reply is a chat completion of SMOKE_TOKENS
    tokens with some text; else SmokeFailed saying what it was."""
    try:
        content = reply["choices"][0]["message"]["content"]
        tokens = reply["usage"]["completion_tokens"]
    except (KeyError, IndexError, TypeError):
        raise SmokeFailed(f"answered wrongly: not a chat completion: {json.dumps(reply)[:200]}") from None
    if tokens != SMOKE_TOKENS or not isinstance(content, str) or not content.strip():
        raise SmokeFailed(f"answered wrongly: {tokens!r} tokens (asked for {SMOKE_TOKENS}), content {content!r:.80}")
    return tokens


def smoke_check(binary: Path, model: Path, log_path: Path, timeout_s: float = 120.0) -> str:
    """Start, generate SMOKE_TOKENS tokens, stop. Returns a one-line summary; raises SmokeFailed."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    threads = str(min(2, os.cpu_count() or 1))
    cmd = [str(binary), "--model", str(model), "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--parallel", "1", "--ctx-size", "512", "--threads", threads, "--no-webui"]
    started = time.monotonic()
    with log_path.open("wb") as log:
        try:
            proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        except OSError as e:
            raise SmokeFailed(f"could not start: {e}") from None
    try:
        deadline = started + timeout_s
        stage = "start"

        def died() -> SmokeFailed:
            return SmokeFailed(f"{_exit_reason(proc.returncode)} during {stage}")

        while True:  # poll for readiness; the model loads in a second or two
            if proc.poll() is not None:
                raise died()
            try:
                with urllib.request.urlopen(base + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise SmokeFailed(f"not healthy within {timeout_s:.0f} s")
            time.sleep(0.1)
        stage = "the first generation"
        body = {
            "messages": [{"role": "user", "content": "Say hello."}],
            "max_tokens": SMOKE_TOKENS,
            "ignore_eos": True,
            "temperature": 0,
        }
        try:
            reply = _post_json(base + "/v1/chat/completions", body, max(5.0, deadline - time.monotonic()))
        except (urllib.error.URLError, OSError, ValueError) as e:
            try:  # a crash closes the connection an instant before the process is gone
                proc.wait(2)
            except subprocess.TimeoutExpired:
                pass
            if proc.poll() is not None:
                raise died() from None
            raise SmokeFailed(f"generation request failed: {e}") from None
        tokens = _check_reply(reply)
        if proc.poll() is not None:
            raise died()
        return f"{tokens} tokens in {time.monotonic() - started:.1f} s"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m llmbench.backends.local.smoke", description=__doc__.splitlines()[0])
    ap.add_argument("--fingerprint", action="store_true", help="print this CPU's fingerprint and exit")
    ap.add_argument("--binary", type=Path)
    ap.add_argument("--model", type=Path)
    ap.add_argument("--log", type=Path)
    ap.add_argument("--build-flags", default="(unknown)")
    ap.add_argument("--mark-dir", type=Path, help="on success, write verified-<fingerprint> here")
    args = ap.parse_args(argv)
    if args.fingerprint:
        print(cpu_fingerprint())
        return 0
    if not (args.binary and args.model and args.log):
        ap.error("--binary, --model and --log are required")
    try:
        summary = smoke_check(args.binary, args.model, args.log)
    except SmokeFailed as e:
        model, flags = cpu_model_and_flags()
        isa = " ".join(f for f in flags if f in ISA_FLAGS)
        print(
            f"llmbench: llama-server smoke check FAILED: {e}; binary {args.binary}; CPU {model} [{isa}]; "
            f"build flags: {args.build_flags.strip()}; log: {args.log}",
            file=sys.stderr,
        )
        return 1
    if args.mark_dir:
        (args.mark_dir / f"verified-{cpu_fingerprint()}").write_text(f"{cpu_model_and_flags()[0]}\n{summary}\n")
    print(f"llmbench: llama-server smoke check passed ({summary})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
