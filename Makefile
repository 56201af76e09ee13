# llmbench: every setup step a fresh machine needs lives here.
#   make run    run the whole benchmark DAG once, in-process, on the embedded local default
#   make test   the test suite (unit, DAG integrity, integration against real servers)
#   make test-fast  lint beside unit + DAG integrity tests: no server, no build, under a minute
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
UV_VERSION := 0.13.9
export LLMBENCH_HOME ?= $(CURDIR)/.llmbench
export LLMBENCH_CACHE ?= $(HOME)/.cache/llmbench
DATE ?= $(shell date -u +%F)
CONFIG ?= local

# Airflow runs in-process with its metadata in SQLite under the data folder.
export AIRFLOW_HOME := $(LLMBENCH_HOME)/airflow
export AIRFLOW__CORE__DAGS_FOLDER := $(CURDIR)/dags
export AIRFLOW__CORE__PLUGINS_FOLDER := $(CURDIR)/plugins
export AIRFLOW__CORE__LOAD_EXAMPLES := False

.PHONY: wheel airflow-range mwaa help preflight-run preflight-test preflight-fast venv server vllm browser airflow-db run test test-fast unit-fast lint bench lock clean compose-test
help:
	@echo "make run [DATE=YYYY-MM-DD] [CONFIG=local]   run the benchmark DAG once (airflow dags test)"
	@echo "    [WAREHOUSE_CONN=postgres://...] [PARAMS='{\"concurrency\": [1, 2]}']  publish to PostgreSQL; more DAG Params"
	@echo "make test                                   run the test suite (preflight, build once, then everything)"
	@echo "make test-fast                              lint beside unit + DAG integrity tests (no server, no build; < 1 min)"
	@echo "make lint                                   ruff (lint + format check) and mypy"
	@echo "make server                                 build llama-server and unpack the model (once, cached in $(LLMBENCH_CACHE))"
	@echo "make vllm                                   build vLLM for CPU in its own venv and convert the model (once, cached; after make server)"
	@echo "make browser                                install Debian's chromium for the report test (once)"
	@echo "make bench                                  benchmarks (results in benchmarks/results/)"
	@echo "make wheel                                  build the library's wheel into dist/ (python -m build)"
	@echo "make mwaa                                   the Amazon MWAA bundle in dist/mwaa/ (dags, plugins.zip, requirements.txt, startup.sh)"
	@echo "make airflow-range                          the wheel with Airflow 3.2.1 (MWAA) and the lock's: DAGs load, tests/dags pass"
	@echo "make lock                                   recompile requirements.txt (runtime) and requirements-dev.txt (tests, lint)"
	@echo "make compose-test                           the docker-compose stack, up for real and driven end to end (installs Docker when absent)"

# Bytecode compiled at install: uv does not by default, and with PYTHONDONTWRITEBYTECODE set every
# test process would compile Airflow, pandas and Great Expectations from source again.
# The runtime lock and, beside it, the test and lint tools' lock (requirements-dev.txt).
$(BIN)/.installed: requirements.txt requirements-dev.txt pyproject.toml
	@test -x $(BIN)/python || { echo "llmbench: creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"
	@echo "llmbench: installing the locks (requirements.txt, requirements-dev.txt) into $(VENV)"
	@$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -r requirements.txt -r requirements-dev.txt
	@$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps -e .
	@touch $@

venv: $(BIN)/.installed

# What the machine must provide (Python, a compiler, PostgreSQL, Redis): one line each, in seconds.
preflight-run:
	@PYTHON=$(PYTHON) scripts/preflight.sh run
preflight-test:
	@PYTHON=$(PYTHON) scripts/preflight.sh test
preflight-fast:
	@PYTHON=$(PYTHON) scripts/preflight.sh fast

# Built for a portable CPU baseline, smoke-checked on this CPU before use (scripts/get_local_server.sh).
server: venv
	@PYTHON=$(BIN)/python scripts/get_local_server.sh

# vLLM on the CPU, the local backend's second engine (serving.kind vllm): its own venv under the
# cache, built with the system Python and pip (scripts/get_vllm.sh). Not on `venv`: it never touches
# .venv, and `make test` does not need it (the vLLM tests skip with one line when it is absent).
vllm:
	@VLLM_PYTHON=$(PYTHON) scripts/get_vllm.sh

# Migrated once per SQLite home and install: `airflow db migrate` takes 15-30 s with nothing to do,
# on every `make run`. A new lock (.installed) or a removed airflow.db migrates again.
airflow-db: venv
	@mkdir -p $(AIRFLOW_HOME)
	@if [ -f $(AIRFLOW_HOME)/airflow.db ] && [ $(AIRFLOW_HOME)/.migrated -nt $(BIN)/.installed ] \
	  && [ $(AIRFLOW_HOME)/.migrated -nt deploy/pools.json ]; then :; else \
	  $(BIN)/airflow db migrate >$(AIRFLOW_HOME)/db-migrate.log 2>&1 || { tail -20 $(AIRFLOW_HOME)/db-migrate.log; exit 1; }; \
	  $(BIN)/airflow pools import deploy/pools.json >/dev/null && touch $(AIRFLOW_HOME)/.migrated; fi

run: preflight-run server airflow-db
	@scripts/run_dag.sh "$(DATE)" "$(CONFIG)"

# Debian's Chromium, for the test that opens the report headless (about 30 s, once per machine).
browser:
	@command -v chromium >/dev/null || { echo "llmbench: installing Debian's chromium (report test)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; }

test: preflight-test server browser airflow-range
	@scripts/test.sh

# The library as a wheel carrying its data (catalog, migrations, shipped configs and datasets).
wheel: venv
	@rm -f dist/llmbench-*.whl; mkdir -p $(LLMBENCH_HOME)
	@$(BIN)/python -m build --wheel --outdir dist . >$(LLMBENCH_HOME)/wheel.log 2>&1 || { tail -20 $(LLMBENCH_HOME)/wheel.log; exit 1; }
	@rm -rf build/lib build/bdist.*
	@echo "llmbench: built $$(ls dist/llmbench-*.whl)"

# What an Amazon MWAA environment takes (scripts/mwaa_bundle.sh; docs/deploy.md).
mwaa: wheel
	@scripts/mwaa_bundle.sh

# The Airflow versions the wheel is tested with, 3.2.1 from the MWAA bundle (scripts/airflow_range.sh).
airflow-range: mwaa
	@scripts/airflow_range.sh

# Lint beside the tests, and the tests in one pytest worker per core (pytest-xdist): they are
# CPU-bound and independent, and mypy from an empty cache takes half a minute (its cache is the
# machine's, see lint, so only a machine's first run pays it).
# Each one's output is shown whole when it ends; either failing fails test-fast.
test-fast: preflight-fast venv
	@$(MAKE) --no-print-directory -j 2 --output-sync=target lint unit-fast

unit-fast: venv
	@scripts/test.sh -n logical -m "not integration" tests/unit tests/dags

# ruff (lint + format check) and mypy over the library, the DAGs and the plugin; part of test-fast and CI.
# mypy's cache lives in the machine's cache, not the checkout: a fresh clone would otherwise spend
# 30 CPU-seconds of its first test-fast re-checking Airflow and pandas. mypy validates every entry
# by its source's hash, so clones and venvs on other paths share it safely.
lint: venv
	@$(BIN)/ruff check include/llmbench dags plugins
	@$(BIN)/ruff format --check --quiet include/llmbench dags plugins || { echo "llmbench: run '$(BIN)/ruff format include/llmbench dags plugins'"; exit 1; }
	@$(BIN)/mypy --cache-dir $(LLMBENCH_CACHE)/mypy

# Benchmarks write benchmarks/results/*.{json,md}; run them on an otherwise idle machine.
bench: venv
	$(BIN)/python benchmarks/client_fidelity.py
	$(BIN)/python benchmarks/sustained_load.py
	$(BIN)/python benchmarks/seed_reproduction.py
	$(BIN)/python benchmarks/offered_load.py
	$(BIN)/python benchmarks/pipeline_overhead.py
	$(BIN)/python benchmarks/image_resolution.py
	$(BIN)/python benchmarks/traffic.py
	$(BIN)/python benchmarks/capacity_search.py

# The compose stack (docker-compose.yaml) end to end: installs the engine and plugins when absent,
# builds Debian stand-ins for images it cannot pull, up --wait, tests/compose, down -v.
compose-test: venv server
	@scripts/compose_test.sh

lock:
	$(BIN)/uv pip compile --python-version 3.11 --custom-compile-command "make lock" requirements.in -o requirements.txt
	$(BIN)/uv pip compile --python-version 3.11 --custom-compile-command "make lock" requirements-dev.in -o requirements-dev.txt

clean:
	rm -rf $(LLMBENCH_HOME)
