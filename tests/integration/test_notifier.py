"""Issue 45: every DAG alerts through one Notifier (plugins/llmbench_airflow.LlmbenchNotifier).
A janitor run that fails for real (`airflow dags test`, its AWS connection one that does not exist)
reaches a local webhook receiver with the failed task's alert. (The DAG run's own failure callback
runs in the DAG processor, which `airflow dags test` does not start: not seen here.)"""

import json
import subprocess

from llmbench.testing._serve import alert_webhook

from .conftest import BIN


def test_a_failing_janitor_run_reaches_the_webhook(airflow_env):
    with alert_webhook() as (conn, alerts):
        env = {**airflow_env, "LLMBENCH_RETRIES": "0", "AIRFLOW_CONN_LLMBENCH_ALERTS": conn}
        conf = {"aws_conn_id": "no_such_connection", "regions": ["us-east-1"]}
        r = subprocess.run([str(BIN / "airflow"), "dags", "test", "llmbench_janitor", "2026-12-01", "-c", json.dumps(conf)],
                           env=env, capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    assert "failed" in out.lower(), out[-3000:]
    task_alerts = [a for a in alerts if a.get("task_id", "").startswith("sweep_expired")]
    assert task_alerts, (alerts, out[-3000:])
    # the failure as the task raised it: the connection does not exist, so no credentials either
    assert task_alerts[0]["dag_id"] == "llmbench_janitor"
    assert "llmbench_janitor.sweep_expired failed in run manual__" in task_alerts[0]["text"]
    assert "Error" in task_alerts[0]["text"]
    assert all(a["text"].startswith("llmbench: ") for a in alerts)
    print(f"\nalerts received: {[a['text'][:120] for a in alerts]}")
