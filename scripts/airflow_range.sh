#!/usr/bin/env bash
# The Airflow versions the library's wheel is tested with (issue 44; docs/deploy.md): for each, a
# throwaway venv gets that Airflow and the wheel (dist/, from `make wheel` / `make mwaa`), then the DAGs load in
# a DagBag with 0 import errors and the DAG-integrity tests (tests/dags) run against the installed
# wheel, not this checkout. Then Python 3.12 (MWAA's; not on this machine) by resolution only.
#   3.2.1     an MWAA version, from the MWAA bundle (make mwaa): its plugins.zip unpacked, its
#             requirements.txt (the wheel in it) beside apache-airflow==3.2.1 and the providers
#             MWAA preinstalls, resolved as pip would (no lock); its dags/ loaded; tools added after
#   <locked>  the lock's version: requirements.txt, the wheel without its dependencies
# AIRFLOW_VERSIONS="3.2.1 3.3.2" overrides the list. Each venv is deleted when its check ends.
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-.venv/bin/uv}
PY=${PYTHON:-$(command -v python3.11 || command -v python3)}
say() { echo "llmbench: airflow-range: $*"; }

wheel=$(ls -t dist/llmbench-*.whl 2>/dev/null | head -1 || true)
[ -n "$wheel" ] || { say "no wheel in dist/: run make wheel"; exit 1; }
locked=$(sed -n 's/^apache-airflow==//p' requirements.txt)
versions=${AIRFLOW_VERSIONS:-"3.2.1 $locked"}
tools=(pytest pytest-timeout "moto[sagemaker,server]")  # what tests/dags imports beyond the wheel

scratch=$(mktemp -d /tmp/llmbench-airflow-range.XXXXXX)
trap 'rm -rf "$scratch"' EXIT

for v in $versions; do
  t=$SECONDS
  venv=$scratch/venv-$v
  "$UV" venv --quiet --python "$PY" "$venv"
  if [ "$v" = "$locked" ]; then
    "$UV" pip install --quiet --python "$venv/bin/python" -r requirements.txt -c requirements-dev.txt "${tools[@]}"
    "$UV" pip install --quiet --python "$venv/bin/python" --no-deps "$wheel"
    dags_dir=$PWD/dags plugins_dir=$PWD/plugins
  else  # from the MWAA bundle (make mwaa) as MWAA unpacks it: plugins.zip into a plugins folder
    plugins_dir=$scratch/plugins-$v
    "$venv/bin/python" -m zipfile -e dist/mwaa/plugins.zip "$plugins_dir"
    # its constraints line names GitHub, which this machine cannot reach: left out, said here
    grep -v '^--constraint' dist/mwaa/requirements.txt | sed "s#/usr/local/airflow/plugins/#$plugins_dir/#" \
      >"$scratch/requirements-$v.txt"
    # MWAA's image has Airflow and the amazon and postgres providers; a venv gets them here
    "$UV" pip install --quiet --python "$venv/bin/python" "apache-airflow==$v" apache-airflow-providers-amazon \
      apache-airflow-providers-postgres -r "$scratch/requirements-$v.txt" \
      || { say "apache-airflow==$v and the MWAA bundle's requirements do not install together"; exit 1; }
    "$UV" pip install --quiet --python "$venv/bin/python" "${tools[@]}"
    dags_dir=$PWD/dist/mwaa/dags
    say "Airflow $v: from the MWAA bundle (its constraints line left out: GitHub is not reachable here)"
  fi
  got=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("apache-airflow"))')
  [ "$got" = "$v" ] || { say "asked for Airflow $v, the venv has $got"; exit 1; }
  home=$scratch/home-$v
  mkdir -p "$home"
  # The DAGs as a DagBag loads them, from the installed wheel (never this checkout's include/).
  AIRFLOW_HOME=$home/airflow LLMBENCH_HOME=$home/data AIRFLOW__CORE__LOAD_EXAMPLES=False \
  AIRFLOW__CORE__DAGS_FOLDER=$dags_dir AIRFLOW__CORE__PLUGINS_FOLDER=$plugins_dir \
    "$venv/bin/python" - "$venv" "$dags_dir" >"$home/dagbag.log" 2>&1 <<'EOF' || { tail -20 "$home/dagbag.log"; say "Airflow $v: the DAGs do not load"; exit 1; }
import sys
from pathlib import Path

import llmbench
from airflow.dag_processing.dagbag import DagBag

venv = Path(sys.argv[1]).resolve()
assert venv in Path(llmbench.__file__).resolve().parents, f"llmbench imported from {llmbench.__file__}, not the wheel"
bag = DagBag(dag_folder=sys.argv[2])  # examples are off: AIRFLOW__CORE__LOAD_EXAMPLES
assert not bag.import_errors, bag.import_errors
print("DAGS", " ".join(sorted(bag.dag_ids)))
EOF
  dags=$(sed -n 's/^DAGS //p' "$home/dagbag.log")
  AIRFLOW_HOME=$home/airflow LLMBENCH_HOME=$home/data \
    "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/dags >"$home/pytest.log" 2>&1 \
    || { tail -30 "$home/pytest.log"; say "Airflow $v: tests/dags failed"; exit 1; }
  say "Airflow $v: the wheel installs, $(wc -w <<<"$dags") DAGs load with 0 import errors ($dags), $(grep -Eo '[0-9]+ passed' "$home/pytest.log") in tests/dags ($((SECONDS - t)) s)"
  rm -rf "$venv"
done

# Python 3.12 (MWAA runs it; only 3.11 is here): the wheel and an MWAA Airflow resolve together.
printf 'apache-airflow==3.2.1\nllmbench[airflow] @ file://%s\n' "$PWD/$wheel" >"$scratch/py312.in"
"$UV" pip compile --quiet --python-version 3.12 "$scratch/py312.in" -o "$scratch/py312.txt" \
  || { say "Python 3.12: apache-airflow==3.2.1 and the wheel do not resolve"; exit 1; }
say "Python 3.12: apache-airflow==3.2.1 and the wheel resolve ($(grep -c '==' "$scratch/py312.txt") pins; resolution only, not installed)"
