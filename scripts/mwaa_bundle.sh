#!/usr/bin/env bash
# `make mwaa`: what an Amazon MWAA environment (Airflow 3.2.1, Python 3.12) takes, in dist/mwaa/
# (docs/deploy.md, "Amazon MWAA"):
#   dags/              the DAG files, for the environment's S3 dags/ prefix
#   plugins.zip        the plugin module and the library's wheel (MWAA installs private wheels from
#                      /usr/local/airflow/plugins/, where it unpacks plugins.zip)
#   requirements.txt   MWAA's constraints line for 3.2.1 / Python 3.12, then the wheel
#   startup.sh         the environment's startup script: llmbench's settings (LLMBENCH_*)
#   connections.json   the connections the DAGs use, without secrets (`airflow connections import`
#                      format; on MWAA, one Secrets Manager secret each: docs/deploy.md)
#   pools.json         the pools the DAGs use (`airflow pools import`)
# The wheel comes from dist/ (make wheel). AIRFLOW_VERSION / PYTHON_VERSION change the constraints line.
set -euo pipefail
cd "$(dirname "$0")/.."
AIRFLOW_VERSION=${AIRFLOW_VERSION:-3.2.1}
PYTHON_VERSION=${PYTHON_VERSION:-3.12}
PY=${PYTHON:-.venv/bin/python}
say() { echo "llmbench: mwaa: $*"; }

wheel=$(ls -t dist/llmbench-*.whl 2>/dev/null | head -1 || true)
[ -n "$wheel" ] || { say "no wheel in dist/: run make wheel"; exit 1; }
out=dist/mwaa
rm -rf "$out"
mkdir -p "$out/dags"
cp dags/*.py "$out/dags/"
"$PY" - "$out/plugins.zip" "$wheel" plugins/llmbench_airflow.py <<'EOF'
import sys
import zipfile
from pathlib import Path

target, *files = sys.argv[1:]
with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
    for f in files:  # at the zip's root: MWAA unpacks it into /usr/local/airflow/plugins/
        z.write(f, Path(f).name)
EOF
cat >"$out/requirements.txt" <<EOF
--constraint "https://raw.githubusercontent.com/apache/airflow/constraints-${AIRFLOW_VERSION}/constraints-${PYTHON_VERSION}.txt"
/usr/local/airflow/plugins/$(basename "$wheel")
EOF
cat >"$out/startup.sh" <<'EOF'
#!/bin/sh
# MWAA startup script (docs/deploy.md, "Amazon MWAA"): llmbench's settings for every component.
# Every task hands the next its results through the results store: set your bucket. Without it
# the plan refuses to run, in one line, naming this setting.
export LLMBENCH_RESULTS_URI="${LLMBENCH_RESULTS_URI:-s3://CHANGE-ME-results-bucket/llmbench}"
# Each worker's own scratch space: nothing in it outlives a task.
export LLMBENCH_HOME=/usr/local/airflow/llmbench
# MWAA runs no llama-server: a weekly run measures the configs' cloud targets (EC2, SageMaker, Bedrock).
export LLMBENCH_SCHEDULE="${LLMBENCH_SCHEDULE:-@weekly}"
EOF
chmod +x "$out/startup.sh"
"$PY" - deploy/connections.json "$out/connections.json" <<'EOF'
import json
import sys

conns = json.load(open(sys.argv[1]))
# the compose stack's stand-ins become what an AWS account has: no endpoint override, no password
conns["llmbench_results"]["extra"] = json.dumps({"region_name": "us-east-1"})
conns["llmbench_results"]["description"] = "the results store (LLMBENCH_RESULTS_URI): the environment's execution role reads and writes it"
conns["llmbench_warehouse"].update(host="CHANGE-ME.redshift.amazonaws.com", port=5439, login="llmbench", password="")
conns["llmbench_warehouse"]["description"] = "the price-performance warehouse (PostgreSQL or Redshift): its password from Secrets Manager, never this file"
json.dump(conns, open(sys.argv[2], "w"), indent=2)
EOF
cp deploy/pools.json "$out/pools.json"
say "wrote $out: dags/ ($(ls "$out/dags" | wc -l) files), plugins.zip ($(basename "$wheel"), llmbench_airflow.py), requirements.txt (constraints for Airflow $AIRFLOW_VERSION, Python $PYTHON_VERSION), startup.sh, connections.json, pools.json"
