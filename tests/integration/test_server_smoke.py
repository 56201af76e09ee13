"""A llama-server binary is proven on this CPU before it is trusted: the smoke check passes the real
binary, refuses one that crashes at the first decode or answers wrongly, and the build script
removes a cached binary that fails instead of installing or reusing it."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from llmbench.backends.local.backend import model_file, server_binary
from llmbench.backends.local.smoke import cpu_fingerprint

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "get_local_server.sh"

# A stand-in for a broken build, as an executable taking llama-server's flags: it loads (answers
# /health) and then fails the way the AMX build did, at the first generation.
BROKEN = '''#!{python}
import json, os, signal, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
port = int(sys.argv[sys.argv.index("--port") + 1])
MODE = {mode!r}
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b'{{"status":"ok"}}')
    def do_POST(self):
        if MODE == "segv":
            os.kill(os.getpid(), signal.SIGSEGV)
        body = json.dumps({{"choices": [{{"message": {{"content": ""}}}}], "usage": {{"completion_tokens": 0}}}})
        self.send_response(200); self.send_header("Content-Type", "application/json"); self.end_headers()
        self.wfile.write(body.encode())
HTTPServer(("127.0.0.1", port), H).serve_forever()
'''


def broken_binary(path: Path, mode: str) -> Path:
    path.write_text(BROKEN.format(python=sys.executable, mode=mode))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def smoke(binary: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "llmbench.backends.local.smoke", "--binary", str(binary),
                           "--model", str(model_file()), "--log", str(tmp_path / "smoke.log"),
                           "--build-flags=-DTEST=ON"], capture_output=True, text=True, timeout=180)


def test_the_real_binary_generates_and_passes(tmp_path):
    r = smoke(server_binary(), tmp_path)
    assert r.returncode == 0, r.stderr
    assert "passed (8 tokens" in r.stdout


@pytest.mark.parametrize("mode, reason", [("segv", "killed by SIGSEGV during the first generation"),
                                          ("wrong", "answered wrongly: 0 tokens (asked for 8)")])
def test_a_broken_binary_is_refused_in_one_line(tmp_path, mode, reason):
    r = smoke(broken_binary(tmp_path / "llama-server", mode), tmp_path)
    assert r.returncode == 1
    (line,) = r.stderr.strip().splitlines()
    assert reason in line
    # what failed, the CPU, the build flags and the log, so the line alone can be acted on
    assert "CPU " in line and "build flags: -DTEST=ON" in line and str(tmp_path / "smoke.log") in line


def _status(env: dict) -> dict[str, str]:
    r = subprocess.run(["bash", str(SCRIPT), "--status"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return dict(line.split(": ", 1) for line in r.stdout.strip().splitlines())


def _fake_cache(tmp_path: Path) -> tuple[dict, Path, Path]:
    """An empty cache holding only the (real) model, and the key dir the script would build into."""
    cache = tmp_path / "cache"
    (cache / "models").mkdir(parents=True)
    (cache / "models" / model_file().name).symlink_to(model_file().resolve())
    env = {**os.environ, "LLMBENCH_CACHE": str(cache), "PYTHON": sys.executable}
    env.pop("LLMBENCH_LLAMA_CMAKE_FLAGS", None)
    keydir = cache / "llama-server" / _status(env)["key"]
    keydir.mkdir(parents=True)
    return env, cache, keydir


def test_the_cache_key_follows_the_build_recipe(tmp_path):
    env, _, _ = _fake_cache(tmp_path)
    default = _status(env)
    assert "-DGGML_NATIVE=OFF" in default["flags"] and "-march=native" not in default["flags"]
    changed = _status({**env, "LLMBENCH_LLAMA_CMAKE_FLAGS": "-DGGML_AVX2=OFF"})
    assert changed["key"] != default["key"] and changed["binary"].startswith(str(Path(env["LLMBENCH_CACHE"])))
    assert "(missing on cpu" in changed["binary"]


def test_a_cached_binary_that_fails_its_first_check_here_is_removed(tmp_path):
    env, cache, keydir = _fake_cache(tmp_path)
    broken_binary(keydir / "llama-server", "segv")
    (cache / "bin").mkdir()
    (cache / "bin" / "llama-server").symlink_to(keydir / "llama-server")
    r = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=180)
    assert r.returncode != 0
    assert "smoke check FAILED: killed by SIGSEGV during the first generation" in r.stderr
    assert not (keydir / "llama-server").exists() and not (cache / "bin" / "llama-server").is_symlink()
    assert not list(keydir.glob("verified-*"))


def test_a_binary_left_by_another_recipe_is_not_reused(tmp_path):
    """bin/llama-server as a plain file (the layout before keyed builds, a native build) is replaced
    by a link to this recipe's binary, which is checked on this CPU before the link is made."""
    env, cache, keydir = _fake_cache(tmp_path)
    (cache / "bin").mkdir()
    old = broken_binary(cache / "bin" / "llama-server", "segv")
    # this recipe's binary, already built (the real one, so no 5-minute build in a test)
    (keydir / "llama-server").symlink_to(server_binary().resolve())
    r = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "smoke check passed" in r.stdout
    assert old.is_symlink() and os.readlink(old) == str(keydir / "llama-server")
    assert (keydir / f"verified-{cpu_fingerprint()}").exists()
