"""issue 26 #1: an API key never reaches an event, a table, the report or an alert. A key pasted
with a newline (or an injected header) is refused at deploy, naming the Airflow connection it came
from, not the key; and any error text that quotes a key (urllib's "Invalid header value
b'Bearer sk-...'") is redacted where it is recorded, tabled and alerted.

The Airflow side is real: connections from AIRFLOW_CONN_* variables, plugins/llmbench_airflow.py's
backend_kwargs and the Notifier every DAG alerts through, a webhook server that records what it received."""

import json
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from llmbench import pipeline
from llmbench.backends.base import DeployError
from llmbench.results.events import record_failure
from llmbench.results.tables import build_tables
from llmbench.schemas.targets import ResolvedTarget
from llmbench.testing._serve import alert_webhook

from .conftest import ROOT

KEY = "sk-proj-h26aPASTEDkey0123456789"


@pytest.fixture
def planned(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path))
    monkeypatch.syspath_prepend(str(ROOT / "plugins"))
    return pipeline.plan("openai-example", "2026-12-04", {})[0]  # api_key_conn_id: llmbench_openai


@pytest.mark.parametrize("pasted", [KEY + "\n", KEY + "\r\nX-Injected: 1"], ids=["newline", "injected header"])
def test_a_key_with_a_control_character_is_refused_at_deploy_naming_the_connection(planned, monkeypatch, pasted):
    import llmbench_airflow

    monkeypatch.setenv("AIRFLOW_CONN_LLMBENCH_OPENAI", json.dumps({"conn_type": "http", "password": pasted}))
    with pytest.raises(DeployError) as e:  # before: deployed, and failed at wait_ready quoting the key
        pipeline.deploy(planned, **llmbench_airflow.backend_kwargs(planned))
    assert str(e.value).startswith("connection 'llmbench_openai': the API key holds a control character")
    assert "\n" not in str(e.value) and "h26aPASTED" not in str(e.value)
    events = (ResolvedTarget.of(planned).dir / "events.jsonl").read_text()
    assert "llmbench_openai" in events and "h26aPASTED" not in events


def test_error_text_quoting_a_key_is_redacted_in_events_tables_and_the_alert(planned, monkeypatch):
    import llmbench_airflow

    secret = "sk-live-h26aNEVERREGISTERED98765"  # not given to any backend: the patterns must catch it
    target = ResolvedTarget.of(planned)
    req = urllib.request.Request("http://127.0.0.1:9/v1/models", headers={"Authorization": f"Bearer {secret}\n"})
    try:
        urllib.request.urlopen(req, timeout=1)
    except ValueError as e:  # what the reporter saw: "Invalid header value b'Bearer sk-...\n'"
        exc = e
        assert "h26aNEVERREGISTERED" in str(e)
        record_failure(target, "wait_ready", e)
    events = (target.dir / "events.jsonl").read_text()
    assert "Invalid header value" in events and "h26aNEVERREGISTERED" not in events  # error and traceback
    row = build_tables(target.run_dir)["targets"].iloc[0]
    assert row["failed_stage"] == "wait_ready" and "Bearer ***" in row["error"] and "h26aNEVER" not in row["error"]
    stored = pd.read_parquet(Path(target.run_dir) / "tables" / "targets.parquet")  # what publish loads
    assert not stored["error"].str.contains("h26aNEVER").any()

    with alert_webhook() as (conn, alerts):
        monkeypatch.setenv("AIRFLOW_CONN_LLMBENCH_ALERTS", conn)
        ti = SimpleNamespace(dag_id="llm_benchmark", task_id="wait_ready", map_index=0, run_id="manual__x")
        llmbench_airflow.LlmbenchNotifier().notify({"ti": ti, "exception": exc})
    assert len(alerts) == 1 and "Invalid header value" in alerts[0]["text"]
    assert "h26aNEVERREGISTERED" not in alerts[0]["text"]  # before: the webhook got the key
