#!/usr/bin/env bash
# make compose-test: the production compose stack (docker-compose.yaml), brought up for real and
# driven end to end by tests/compose. On a machine that has never had Docker it
#   1. installs Debian's docker.io engine, and the compose v2 / buildx CLI plugins from Debian
#      trixie's docker-compose / docker-buildx packages (bookworm has neither), when absent;
#   2. starts dockerd when none answers (and stops only that one on exit);
#   3. tries to pull the images the compose file names, and builds Debian stand-ins
#      (deploy/standins/) for those it cannot pull;
#   4. builds the llmbench image (Dockerfile), brings the stack up with `docker compose up --wait`,
#      runs tests/compose, and takes the stack down (`down -v`) whatever happened.
# Images stay in dockerd's store (/var/lib/docker) between runs: the second run builds nothing.
# A custom CA bundle the host's pip trusts (PIP_CERT, SSL_CERT_FILE, pip config: a TLS-inspecting
# proxy) is handed to image builds as a BuildKit secret: never in the repository or a layer.
# Usage: scripts/compose_test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
STATE=${LLMBENCH_CACHE:-$HOME/.cache/llmbench}/compose
mkdir -p "$STATE"
export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-llmbench-compose-test}
# the stack, plus the test-only task policy that spreads one target's tasks over the two workers
export COMPOSE_FILE=docker-compose.yaml:deploy/compose.test.yaml
export LLMBENCH_SCHEDULE=none   # the test triggers every run itself: no scheduled run competes
AIRFLOW_IMAGE=apache/airflow:3.3.2-python3.11
BASE_IMAGE=llmbench/debian-bookworm:minbase
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo

say() { echo "compose-test: $*"; }
declare -a TIMINGS=()
phase_start=$SECONDS
phase_end() {  # record how long the phase that just ended took, with the load it ran under
  TIMINGS+=("$1: $((SECONDS - phase_start)) s (load $(cut -d' ' -f1-3 /proc/loadavg))")
  say "${TIMINGS[-1]}"
  phase_start=$SECONDS
}

# --- 1. engine and plugins -------------------------------------------------------------------
install_engine() {
  if command -v dockerd >/dev/null && command -v containerd >/dev/null; then return; fi
  say "installing Debian's docker.io (engine, containerd, runc)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends docker.io >"$STATE/apt.log" 2>&1 \
    || { tail -20 "$STATE/apt.log"; exit 1; }
}

install_plugins() {
  local want=()
  docker compose version >/dev/null 2>&1 || want+=(docker-compose)
  docker buildx version >/dev/null 2>&1 || want+=(docker-buildx)
  [ ${#want[@]} -eq 0 ] && return
  say "installing ${want[*]} from Debian trixie as CLI plugins in ~/.docker/cli-plugins"
  # apt with a private trixie source list and state: the host's sources stay as they are.
  local apt="$STATE/trixie-apt"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
    >"$apt/sources.list"
  local opts=(-o "Dir::Etc::sourcelist=$apt/sources.list" -o Dir::Etc::sourceparts=- -o "Dir::State::Lists=$apt/lists"
    -o "Dir::Cache=$apt/cache" -o APT::Sandbox::User=root)
  apt-get -qq "${opts[@]}" update
  (cd "$apt/debs" && apt-get -qq "${opts[@]}" download "${want[@]}")
  mkdir -p "$HOME/.docker/cli-plugins"
  local deb
  for deb in "$apt"/debs/*.deb; do
    rm -rf "$apt/x" && dpkg-deb -x "$deb" "$apt/x"
    cp "$apt"/x/usr/libexec/docker/cli-plugins/* "$HOME/.docker/cli-plugins/"
  done
  rm -rf "$apt/x"
  docker compose version && docker buildx version
}

# --- 2. the daemon -----------------------------------------------------------------------------
STARTED_DOCKERD=
start_dockerd() {
  if docker info >/dev/null 2>&1; then say "using the dockerd that is already running"; return; fi
  say "starting dockerd (log: $STATE/dockerd.log)"
  $SUDO dockerd >"$STATE/dockerd.log" 2>&1 &
  STARTED_DOCKERD=$!
  local i
  for i in $(seq 120); do
    docker info >/dev/null 2>&1 && return
    kill -0 "$STARTED_DOCKERD" 2>/dev/null || { tail -20 "$STATE/dockerd.log"; exit 1; }
    sleep 0.5
  done
  say "dockerd did not answer within 60 s"; tail -20 "$STATE/dockerd.log"; exit 1
}

stop_dockerd() {
  [ -n "$STARTED_DOCKERD" ] || return 0
  say "stopping the dockerd this run started (pid $STARTED_DOCKERD)"
  $SUDO kill "$STARTED_DOCKERD" 2>/dev/null || true
  local i
  for i in $(seq 60); do kill -0 "$STARTED_DOCKERD" 2>/dev/null || return 0; sleep 0.5; done
  $SUDO kill -9 "$STARTED_DOCKERD" 2>/dev/null || true
}

# --- 3. images -----------------------------------------------------------------------------------
# The CA bundle the host's pip trusts, if any: passed to builds as the secret `pip_ca`.
pip_ca() {
  local ca=${PIP_CERT:-}
  [ -n "$ca" ] || ca=$(pip config get global.cert 2>/dev/null || true)
  [ -n "$ca" ] || ca=${SSL_CERT_FILE:-}
  [ -n "$ca" ] && [ -s "$ca" ] && echo "$ca"
  return 0
}

build() {  # build TAG CONTEXT [buildx args...]: BuildKit, with the host's CA bundle as a secret
  local tag=$1 context=$2; shift 2
  local ca; ca=$(pip_ca)
  local secret=(); [ -n "$ca" ] && secret=(--secret "id=pip_ca,src=$ca")
  local log="$STATE/build-${tag//[\/:]/_}.log" t=$SECONDS
  docker buildx build --progress=plain "${secret[@]}" -t "$tag" "$@" "$context" >"$log" 2>&1 || { tail -30 "$log"; exit 1; }
  say "built $tag in $((SECONDS - t)) s${ca:+ (with $ca, the CA bundle pip trusts, as the build secret pip_ca)}"
}

base_image() {
  docker image inspect "$BASE_IMAGE" >/dev/null 2>&1 && return
  command -v mmdebstrap >/dev/null || {
    say "installing mmdebstrap (the stand-ins' base image)"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends mmdebstrap >>"$STATE/apt.log" 2>&1
  }
  local t=$SECONDS
  $SUDO mmdebstrap --quiet --variant=minbase bookworm - http://deb.debian.org/debian | docker import - "$BASE_IMAGE" >/dev/null
  say "made $BASE_IMAGE with mmdebstrap --variant=minbase bookworm in $((SECONDS - t)) s"
}

# The local engine the image bakes in (Dockerfile: build/engine): the host's llama-server, built
# for a portable baseline and smoke-checked by `make server`, and its model.
stage_engine() {
  local cache=${LLMBENCH_CACHE:-$HOME/.cache/llmbench}
  mkdir -p build/engine
  cp -L "$cache/bin/llama-server" build/engine/llama-server
  cp -L "$cache/models/SmolLM2-135M-Instruct.Q4_1.gguf" build/engine/model.gguf
}

images() {
  # Every image that is absent or a stand-in: pull the official one first (the three at once, at
  # most 120 s: a registry that drops packets must not cost minutes each); stand-ins for the rest.
  local ref t=$SECONDS want=() missing=() failed=()
  for ref in postgres:16 redis:7.2-bookworm "$AIRFLOW_IMAGE"; do
    if ! docker image inspect "$ref" >/dev/null 2>&1 \
      || [ -n "$(docker image inspect -f '{{index .Config.Labels "org.llmbench.standin"}}' "$ref")" ]; then
      want+=("$ref")
    fi
  done
  for ref in "${want[@]}"; do timeout 120 docker pull -q "$ref" >"$STATE/pull-${ref//[\/:]/_}.log" 2>&1 & done
  for ref in "${want[@]}"; do wait -n || true; done
  for ref in "${want[@]}"; do
    if [ -n "$(docker image inspect -f '{{index .Config.Labels "org.llmbench.standin"}}' "$ref" 2>/dev/null || echo none)" ]; then
      missing+=("$ref")
      failed+=("$ref: ...$(tail -1 "$STATE/pull-${ref//[\/:]/_}.log" | tail -c 60)")
    fi
  done
  if [ ${#missing[@]} -gt 0 ]; then
    say "pull failed in $((SECONDS - t)) s (${failed[0]}): building Debian stand-ins for ${missing[*]} (deploy/standins, docs/operations.md)"
    base_image
    for ref in "${missing[@]}"; do
      case $ref in
        postgres:*) build "$ref" deploy/standins/postgres --build-arg "BASE=$BASE_IMAGE" ;;
        redis:*) build "$ref" deploy/standins/redis --build-arg "BASE=$BASE_IMAGE" ;;
        apache/airflow:*) build "$ref" . -f deploy/standins/airflow/Dockerfile --build-arg "BASE=$BASE_IMAGE" ;;
      esac
    done
  fi
  stage_engine
  build llmbench-airflow:latest . -f Dockerfile --build-arg WITH_S3_STANDIN=true
}

# --- 4. the stack --------------------------------------------------------------------------------
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# How long each service's health checks took (the slowest of its last five): what the timeouts
# in docker-compose.yaml are sized against.
health_check_seconds() {
  docker inspect $(docker compose ps -q) | python3 -c '
import json, sys
from datetime import datetime
def t(s): return datetime.fromisoformat(s[:26].rstrip("Z") if "." in s else s.rstrip("Z"))
out = []
for c in json.load(sys.stdin):
    log = (c["State"].get("Health") or {}).get("Log") or []
    if log:
        out.append("%s %.1f" % (c["Config"]["Labels"]["com.docker.compose.service"], max((t(h["End"]) - t(h["Start"])).total_seconds() for h in log)))
print("compose-test: slowest health check (s): " + ", ".join(sorted(out)))'
}

STACK_UP=
teardown() {
  local rc=$?
  if [ -n "$STACK_UP" ]; then
    phase_start=$SECONDS
    health_check_seconds || true
    [ "$rc" = 0 ] || docker compose ps -a >"$STATE/ps.log" 2>&1 || true
    [ "$rc" = 0 ] || docker compose logs --no-color >"$STATE/stack.log" 2>&1 || true
    [ "$rc" = 0 ] || say "the stack's logs: $STATE/stack.log"
    docker compose down -v --remove-orphans >"$STATE/down.log" 2>&1 || say "down -v failed: $STATE/down.log"
    docker image prune -f >/dev/null 2>&1 || true  # the untagged images earlier builds left (2 GB each)
    phase_end "down"
  fi
  say "disk: $(du -sh /var/lib/docker 2>/dev/null | cut -f1) in /var/lib/docker; images: $(docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' 2>/dev/null | tr '\n' ' ' || true)"
  stop_dockerd
  printf 'compose-test: %s\n' "${TIMINGS[@]}"
  exit "$rc"
}
trap teardown EXIT

install_engine
install_plugins
phase_end "install"
start_dockerd
phase_end "dockerd"
images
phase_end "images"

scripts/compose_env.sh    # .env: the shared secrets, generated on first use (git ignores it)
export AIRFLOW_API_PORT=${AIRFLOW_API_PORT:-$(free_port)}
say "bringing the stack up (api-server on 127.0.0.1:$AIRFLOW_API_PORT)"
STACK_UP=1
docker compose up -d --wait --no-build >"$STATE/up.log" 2>&1 || { tail -20 "$STATE/up.log"; exit 1; }
phase_end "up"
LLMBENCH_COMPOSE_TEST=1 AIRFLOW_API_URL="http://127.0.0.1:$AIRFLOW_API_PORT" \
  .venv/bin/python -m pytest -p no:cacheprovider -s tests/compose "$@"
phase_end "DAG run (tests/compose)"
