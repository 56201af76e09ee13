"""The whole DAG on the SageMaker path: control plane on moto (a server process), data plane through
the SigV4-checking event-stream server in front of the real local model. Nothing may remain."""

import json

import boto3
import duckdb
import yaml

from llmbench.testing._serve import ServerProcess

from .conftest import dags_test
from .sagemaker_fixtures import ROLE

AK, SK = "AKIDLLMBENCHTEST", "llmbench-test-secret"


def test_dag_runs_sagemaker_path_end_to_end_and_leaves_nothing(airflow_env, local_server, tmp_path):
    with ServerProcess("tests.integration.moto_server") as moto, \
            ServerProcess("llmbench.testing.sagemaker_runtime", "--upstream", local_server["base_url"],
                          "--access-key", AK, "--secret-key", SK, "--fresh-upstream-connections",
                          "--region", "us-west-2") as runtime:
        cfg = {
            "name": "sm-e2e", "backend": "sagemaker",
            "sagemaker": {"region": "us-west-2", "role_arn": ROLE, "runtime_url": runtime.url,
                          "endpoint_timeout_s": 60},
            "workload": {"input_tokens": 64, "output_tokens": 16, "concurrency": [1, 2], "requests_per_level": 3,
                         "warmup_requests": 1},
            "targets": [{"id": "g7e-vllm", "instance_type": "ml.g7e.2xlarge", "model": "qwen3-32b",
                         "precision": "bf16", "serving": {"kind": "vllm", "name": "vllm-tp1", "max_model_len": 4096}}],
        }
        path = tmp_path / "sm-e2e.yaml"
        path.write_text(yaml.safe_dump(cfg))
        env = {**airflow_env, "AIRFLOW_CONN_AWS_DEFAULT": json.dumps({
            "conn_type": "aws", "login": AK, "password": SK,
            "extra": {"region_name": "us-west-2", "endpoint_url": moto.url}})}
        r = dags_test(env, "2026-11-09", {"config": str(path)})
        out = r.stdout + r.stderr
        assert r.returncode == 0, out[-4000:]

        sm = boto3.client("sagemaker", region_name="us-west-2", endpoint_url=moto.url,
                          aws_access_key_id=AK, aws_secret_access_key=SK)
        assert sm.list_endpoints()["Endpoints"] == []
        assert sm.list_endpoint_configs()["EndpointConfigs"] == []
        assert sm.list_models()["Models"] == []
        assert SK not in out  # the secret never reaches the output ...
        # ... nor any file the run left: Airflow's metadata DB (XCom) and task logs, raw results,
        # validation results, the report, the warehouse.
        from pathlib import Path

        leaked = [str(f) for f in Path(airflow_env["LLMBENCH_HOME"]).rglob("*")
                  if f.is_file() and SK.encode() in f.read_bytes()]
        assert leaked == []

    con = duckdb.connect(airflow_env["LLMBENCH_HOME"] + "/warehouse.duckdb", read_only=True)
    try:
        (status, stage, secs), = con.execute(
            "SELECT status, failed_stage, endpoint_seconds FROM llmbench.targets WHERE run_key = 'sm-e2e-2026-11-09'"
        ).fetchall()
        assert status == "succeeded" and stage is None and secs > 0
        levels = con.execute("SELECT concurrency, requests_ok, output_tokens_per_s, ttft_ms_p50 FROM llmbench.levels "
                             "WHERE run_key = 'sm-e2e-2026-11-09' ORDER BY concurrency").fetchall()
        assert [lv[0] for lv in levels] == [1, 2] and all(lv[1] == 3 and lv[2] > 0 and lv[3] > 0 for lv in levels)
        (usd_h,), = set(con.execute("SELECT usd_per_hour FROM llmbench.price_performance "
                                    "WHERE run_key = 'sm-e2e-2026-11-09'").fetchall())
        assert usd_h == 4.20  # the catalog price of ml.g7e.2xlarge, frozen on the row
    finally:
        con.close()
