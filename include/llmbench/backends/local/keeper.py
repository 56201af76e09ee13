"""`python -m llmbench.backends.local.keeper --bind ADDR --port P [--key-file-flag F] -- CMD...`: a
local server reachable from other hosts (issue 42), kept by a small process on its own host.

Airflow may run a target's teardown, or the reaping of an earlier attempt, on another worker
than its deploy: a process id means nothing there. The keeper runs the server's command as its
child (in the keeper's process group, so that a stop of the group on this host still stops all),
and listens on ADDR:P for `POST /stop` carrying the deploy's API key (`Authorization: Bearer`),
from any host: it then stops the server (SIGTERM, SIGKILL after 10 s), answers once it is gone,
and exits. It also exits when the server does.

The API key comes on stdin (never on a command line, which every local user can read). With
--key-file-flag, the server is given a private file holding it (llama-server's --api-key-file);
else the key is in its environment as VLLM_API_KEY (vLLM's). The file goes when the keeper does.
"""

from __future__ import annotations

import argparse
import hmac
import os
import signal
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

__all__ = ["main"]


def _stop(child: subprocess.Popen) -> None:
    if child.poll() is None:
        child.send_signal(signal.SIGTERM)  # `timeout` forwards it to the server
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(10)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="llmbench.backends.local.keeper")
    p.add_argument("--bind", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--key-file-flag", default=None)
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    key = sys.stdin.readline().strip()
    if not key or not cmd:
        print("keeper: no API key on stdin, or no command", file=sys.stderr)
        return 2
    private = Path(tempfile.mkdtemp(prefix="llmbench-keeper-"))
    env = dict(os.environ)
    if a.key_file_flag:
        key_file = private / "api-key"
        key_file.write_text(key)
        key_file.chmod(0o600)
        cmd = [*cmd, a.key_file_flag, str(key_file)]
    else:
        env["VLLM_API_KEY"] = key
    child = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL)
    stopping = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            given = self.headers.get("Authorization", "").removeprefix("Bearer ").strip()
            if self.path != "/stop" or not hmac.compare_digest(given.encode(), key.encode()):
                self.send_response(403)
                self.end_headers()
                return
            _stop(child)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(f'{{"stopped": true, "exit_code": {child.returncode}}}'.encode())
            stopping.set()

        def log_message(self, *_args: object) -> None:  # the server's log is the server's
            return

    server = ThreadingHTTPServer((a.bind, a.port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    try:
        while not stopping.is_set() and child.poll() is None:
            stopping.wait(0.5)
    finally:
        _stop(child)
        server.shutdown()
        for f in private.iterdir():
            f.unlink()
        private.rmdir()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
