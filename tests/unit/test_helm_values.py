"""deploy/helm/values.yaml, the official Airflow chart's values for llmbench (issue 44): no cluster
runs here, so these check what can be checked without one: the image carries the code (no DAG
volume, no git-sync), every llmbench variable it sets is a real setting, the sweep queue it names
is one its workers listen on, and no secret is written in it."""

import re
from pathlib import Path

import yaml

from llmbench.settings import Settings, env_var

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "deploy" / "helm" / "values.yaml").read_text()
VALUES = yaml.safe_load(TEXT)


def test_the_image_carries_the_code_and_tasks_run_anywhere():
    assert VALUES["images"]["airflow"]["repository"] and VALUES["images"]["airflow"]["tag"]
    assert VALUES["dags"]["persistence"]["enabled"] is False and VALUES["dags"]["gitSync"]["enabled"] is False
    assert VALUES["workers"]["persistence"]["enabled"] is False  # no shared disk
    assert VALUES["executor"] in ("CeleryExecutor", "KubernetesExecutor")


def test_every_llmbench_variable_is_a_setting_and_the_results_go_to_s3():
    env = {e["name"]: e["value"] for e in VALUES["env"]}
    names = {env_var(f) for f in Settings.model_fields}
    assert {k for k in env if k.startswith("LLMBENCH_")} <= names
    assert env["LLMBENCH_RESULTS_URI"].startswith("s3://")
    queues = re.search(r"--queues (\S+?)\"?$", VALUES["workers"]["args"][-1]).group(1).split(",")
    assert env["LLMBENCH_SWEEP_QUEUE"] in queues and "default" in queues


def test_connections_come_from_a_kubernetes_secret_never_the_file():
    assert "secretRef" in VALUES["extraEnvFrom"]
    assert not re.search(r"(?i)(aws_secret_access_key|password)\s*:", TEXT)
