#!/usr/bin/env bash
# What `make run` / `make test` need from the machine, checked in seconds, before anything is built
# or any test runs. Each missing piece is one line naming it and how to provide it.
#   preflight.sh run|test
set -uo pipefail
#   preflight.sh fast: what the fast lane needs (Python, PostgreSQL for the warehouse unit tests)
what="${1:?usage: preflight.sh run|test|fast}"
PYTHON="${PYTHON:-python3}"
# shellcheck source=scripts/llama_server_recipe.sh
. "$(dirname "$0")/llama_server_recipe.sh"
missing=0
need() { echo "llmbench preflight: $*" >&2; missing=$((missing + 1)); }

# port_open HOST PORT: a TCP connect within 2 s (bash's /dev/tcp: no client tools needed)
port_open() { timeout 2 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] < (3, 11))' 2>/dev/null; then
  need "Python 3.11 or newer not found (PYTHON=$PYTHON): install python3.11 (e.g. apt-get install python3.11 python3.11-venv) or set PYTHON=/path/to/python3.11"
elif ! "$PYTHON" -c 'import venv, ensurepip' 2>/dev/null; then
  need "$PYTHON cannot create a virtual environment: apt-get install python3.11-venv"
fi
# The compiler and CMake are needed only while this recipe's llama-server still has to be built.
if [ ! -x "$BINARY" ]; then
  command -v c++ >/dev/null || command -v g++ >/dev/null \
    || need "no C++ compiler (to build llama-server once): apt-get install g++"
  command -v cmake >/dev/null || need "no cmake (to build llama-server once): apt-get install cmake"
fi
if [ "$what" != fast ] && [ -n "${UNSUPPORTED_ARCH:-}" ]; then
  need "no llama-server build recipe for CPU architecture '$ARCH' (x86_64 and aarch64 are supported)"
fi
if [ "$what" != run ]; then
  port_open 127.0.0.1 5432 || need "PostgreSQL is not listening on 127.0.0.1:5432 (trust auth, user postgres): apt-get install postgresql, then pg_ctlcluster \$(ls /etc/postgresql) main start"
fi
if [ "$what" = test ]; then
  port_open 127.0.0.1 6379 || need "Redis is not listening on 127.0.0.1:6379: apt-get install redis-server, then redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save ''"
  command -v chromium >/dev/null || command -v apt-get >/dev/null \
    || need "no chromium and no apt-get to install it (the report test opens the report headless): install Chromium"
fi
if [ "$missing" -gt 0 ]; then
  echo "llmbench preflight: $missing missing; nothing was built or run" >&2
  exit 1
fi
