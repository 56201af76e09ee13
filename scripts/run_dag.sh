#!/usr/bin/env bash
# Run llm_benchmark once, in-process (`airflow dags test`), then print what it published.
# Exits non-zero if the DAG run failed or the run is not in the warehouse as succeeded.
# One run per date per data folder (a second is refused in one line). SIGTERM, SIGINT or SIGHUP,
# or the end of the process that started this one (make forwards SIGTERM; a killed shell may not),
# stop the run: airflow, the servers it started and its load generators, within seconds.
#   WAREHOUSE_CONN=postgres://user@host:5432/db   publish to PostgreSQL (as Airflow connection
#                                                  llmbench_warehouse) instead of the config's warehouse
#   PARAMS='{"concurrency": [1, 2]}'               more DAG Params, merged into the run's conf
set -uo pipefail
DATE="${1:?usage: run_dag.sh DATE [CONFIG]}"
CONFIG="${2:-local}"
BIN=${LLMBENCH_BIN:-.venv/bin}  # tests point this at stand-ins
start=$(date +%s)
# CONFIG may be a name or a path: the run key and the log are named after the config's `name`.
name=$("$BIN/python" -c 'import sys
from llmbench.planning.config import ConfigError, load_config
try:
    print(load_config(sys.argv[1]).name)
except ConfigError as e:
    sys.exit(f"llmbench: {e}")' "$CONFIG") || exit 2
log="$LLMBENCH_HOME/logs/llm_benchmark-$name-$DATE.log"
mkdir -p "$(dirname "$log")" "$LLMBENCH_HOME/locks"
# Two `airflow dags test` of one DAG and date share a run id in Airflow's database: the first then
# dies with "Task Instance not found". The lock (fd 9) is held by this script and airflow; llama-server
# does not inherit it (Python closes other descriptors when it starts a process).
lock="$LLMBENCH_HOME/locks/llm_benchmark-$DATE.lock"
exec 9>"$lock"
if ! flock -n 9; then
  echo "llmbench: a run of llm_benchmark for $DATE is already going in $LLMBENCH_HOME; wait for it to end, or stop it (lock: $lock)" >&2
  exit 2
fi
echo "llmbench: running DAG llm_benchmark for $DATE on config '$name' ($CONFIG) (Airflow log: $log)"
# Progress: the task-level lines llmbench logs, filtered from Airflow's output.
conf=$("$BIN/python" -c 'import json, sys; c = {"config": sys.argv[1], **json.loads(sys.argv[2] or "{}")}
if sys.argv[3]: c["warehouse_conn_id"] = "llmbench_warehouse"
print(json.dumps(c))' "$CONFIG" "${PARAMS:-}" "${WAREHOUSE_CONN:-}") || exit 2
show_args=(--config "$CONFIG" --date "$DATE")
if [ -n "${WAREHOUSE_CONN:-}" ]; then
  export AIRFLOW_CONN_LLMBENCH_WAREHOUSE="$WAREHOUSE_CONN"
  show_args+=(--warehouse "postgresql://${WAREHOUSE_CONN#*://}")
fi
# Every process of this run carries $token in its environment (airflow, its task processes, the
# load generators, llama-server): whatever session or process group it is in, a stop finds it.
token="LLMBENCH_RUN_TOKEN=$$-$(date +%s%N)"
scratch=$(mktemp -d)
run_pids() {
  grep -lxzF "$token" /proc/[0-9]*/environ 2>/dev/null | sed -E 's#^/proc/([0-9]+)/environ$#\1#'
}
stop_run() {  # $1: the signal that stopped us; exit 128 + its number, as a shell would
  trap '' TERM INT HUP
  echo "llmbench: $1: stopping the run (airflow, its servers and load generators)" >&2
  local pids i
  pids=$(run_pids)
  [ -n "$pids" ] && kill -TERM $pids 2>/dev/null
  for i in $(seq 1 50); do  # 10 s to end on their own (llama-server's teardown is a SIGTERM too)
    pids=$(run_pids)
    [ -z "$pids" ] && break
    sleep 0.2
  done
  [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
  kill "$watchdog" 2>/dev/null
  rm -rf "$scratch"
  echo "llmbench: the run was stopped; see $log" >&2
  exit "$2"
}
trap 'stop_run SIGTERM 143' TERM
trap 'stop_run SIGINT 130' INT
trap 'stop_run SIGHUP 129' HUP
# In the background, so that a signal's trap runs at once (bash runs traps between commands, and a
# foreground pipeline is one command); airflow's exit status comes back through a file.
( env "$token" "$BIN/airflow" dags test llm_benchmark "$DATE" -c "$conf" 2>&1; echo $? >"$scratch/rc" ) \
  | tee "$log" \
  | grep --line-buffered -E '\[DAG TEST\] starting|\[llmbench\]|DagRun Finished|\[error|TargetFailed|DeployError' \
  | sed -u -E 's/^[0-9-]+T([0-9:]{8})\.[0-9]+Z \[[a-z ]+\] /\1 /; s/ +\[(llmbench|airflow[^]]*)\] loc=.*$//; s/\[DAG TEST\] starting //; s/^(.{200}).*/\1/' &
pipeline=$!
# The process that started us may end without signalling us (a shell killed with -9): then stop too.
parent=$PPID
( while kill -0 "$parent" 2>/dev/null && kill -0 $$ 2>/dev/null; do sleep 1; done
  kill -0 $$ 2>/dev/null && kill -TERM $$ ) &
watchdog=$!
wait "$pipeline"
kill "$watchdog" 2>/dev/null
trap - TERM INT HUP
dag_rc=$(cat "$scratch/rc" 2>/dev/null || echo 1)
rm -rf "$scratch"
echo
"$BIN/llmbench" show "${show_args[@]}"
show_rc=$?
echo "llmbench: wall time $(( $(date +%s) - start )) s"
if [ "$dag_rc" -ne 0 ] || [ "$show_rc" -ne 0 ]; then
  echo "llmbench: the run FAILED (airflow dags test exit $dag_rc, published run status exit $show_rc); see $log" >&2
  exit 1
fi
