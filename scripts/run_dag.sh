#!/usr/bin/env bash
# Run llm_benchmark once, in-process (`airflow dags test`), then print what it published.
# Exits non-zero if the DAG run failed or the run is not in the warehouse as succeeded.
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
mkdir -p "$(dirname "$log")"
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
"$BIN/airflow" dags test llm_benchmark "$DATE" -c "$conf" 2>&1 \
  | tee "$log" \
  | grep --line-buffered -E '\[DAG TEST\] starting|\[llmbench\]|DagRun Finished|\[error|TargetFailed|DeployError' \
  | sed -u -E 's/^[0-9-]+T([0-9:]{8})\.[0-9]+Z \[[a-z ]+\] /\1 /; s/ +\[(llmbench|airflow[^]]*)\] loc=.*$//; s/\[DAG TEST\] starting //; s/^(.{200}).*/\1/'
dag_rc=${PIPESTATUS[0]}
echo
"$BIN/llmbench" show "${show_args[@]}"
show_rc=$?
echo "llmbench: wall time $(( $(date +%s) - start )) s"
if [ "$dag_rc" -ne 0 ] || [ "$show_rc" -ne 0 ]; then
  echo "llmbench: the run FAILED (airflow dags test exit $dag_rc, published run status exit $show_rc); see $log" >&2
  exit 1
fi
