"""One DAG run, every serving path side by side: a local llama-server, an OpenAI-compatible endpoint
that already runs (no price), vLLM on EC2 (control plane on moto, the real llama-server standing in
for vLLM), a SageMaker endpoint (moto + the SigV4 event-stream runtime server) and Bedrock (the
ConverseStream wire-format server). Everything lands under one run key; nothing may remain, and
the AWS secret reaches neither the output nor any file."""

import json
from pathlib import Path

import boto3
import duckdb
import yaml

from llmbench.testing._serve import ServerProcess

from .conftest import dags_test, llama_server_pids
from .sagemaker_fixtures import ROLE

AK, SK = "AKIDLLMBENCHTEST", "llmbench-test-secret"
RUN_KEY = "every-path-2026-11-16"


def _config(tmp_path: Path, moto_url: str, sm_runtime: str, bedrock_runtime: str, upstream: dict, ami: str) -> Path:
    port = int(upstream["base_url"].rsplit(":", 1)[1].split("/")[0])
    cfg = {
        "name": "every-path",
        "backend": "local",
        "sagemaker": {"region": "us-east-2", "role_arn": ROLE, "runtime_url": sm_runtime, "endpoint_timeout_s": 60},
        "ec2": {"region": "us-east-2", "ami_id": ami, "runner_cidr": "127.0.0.1/32", "server_port": port,
                "server_url": "http://127.0.0.1:{port}/v1", "ready_timeout_s": 60},
        "bedrock": {"region": "us-east-1", "runtime_url": bedrock_runtime},
        "workload": {"input_tokens": 64, "output_tokens": 16, "concurrency": [1, 2], "requests_per_level": 3,
                     "warmup_requests": 1, "request_timeout_s": 60},
        "targets": [
            {"id": "local-2slots", "instance_type": "local-cpu-2c", "model": "smollm2-135m-instruct",
             "precision": "q4_1", "serving": {"kind": "llama-server", "name": "llama-server-2slots", "parallel": 2,
                                              "ctx_per_slot": 512}},
            {"id": "mine-unpriced", "backend": "openai", "model": "smollm2-135m-instruct",
             "serving": {"kind": "openai", "name": "existing", "base_url": upstream["base_url"]}},
            {"id": "ec2-g6", "backend": "ec2", "instance_type": "g6.xlarge", "model": "gemma-4-e2b",
             "precision": "bf16", "serving": {"kind": "vllm", "name": "vllm-tp1", "max_model_len": 4096}},
            {"id": "sm-g6", "backend": "sagemaker", "instance_type": "ml.g6.xlarge", "model": "gemma-4-e2b",
             "precision": "bf16", "serving": {"kind": "vllm", "name": "vllm-tp1", "max_model_len": 4096}},
            {"id": "nova-micro", "backend": "bedrock", "model": "nova-micro",
             "serving": {"kind": "bedrock", "name": "on-demand", "api": "bedrock-nova-micro"}},
        ],
    }
    path = tmp_path / "every-path.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_one_run_every_path_one_run_key_nothing_left(airflow_env, local_server, tmp_path):
    servers_before = llama_server_pids()
    with ServerProcess("tests.integration.moto_server") as moto, \
            ServerProcess("llmbench.testing.sagemaker_runtime", "--upstream", local_server["base_url"],
                          "--access-key", AK, "--secret-key", SK, "--fresh-upstream-connections",
                          "--region", "us-east-2") as sm_runtime, \
            ServerProcess("llmbench.testing.bedrock_runtime", "--upstream", local_server["base_url"],
                          "--access-key", AK, "--secret-key", SK, "--fresh-upstream-connections",
                          "--region", "us-east-1", "--model-id", "us.amazon.nova-micro-v1:0") as br_runtime:
        aws = {"aws_access_key_id": AK, "aws_secret_access_key": SK, "endpoint_url": moto.url}
        ec2 = boto3.client("ec2", region_name="us-east-2", **aws)
        ami = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
        path = _config(tmp_path, moto.url, sm_runtime.url, br_runtime.url, local_server, ami)
        env = {**airflow_env, "AIRFLOW_CONN_AWS_DEFAULT": json.dumps({
            "conn_type": "aws", "login": AK, "password": SK,
            "extra": {"region_name": "us-east-2", "endpoint_url": moto.url}})}
        r = dags_test(env, "2026-11-16", {"config": str(path)})
        out = r.stdout + r.stderr
        assert r.returncode == 0, out[-6000:]

        # Nothing left on the (fake) cloud: no instance that is not terminated, no security group
        # of ours, no endpoint, endpoint config or model.
        live = [i["InstanceId"] for res in ec2.describe_instances()["Reservations"] for i in res["Instances"]
                if i["State"]["Name"] != "terminated"]
        assert live == []
        ours = [g["GroupId"] for g in ec2.describe_security_groups()["SecurityGroups"]
                if any(t["Key"] == "managed-by" and t["Value"] == "llmbench" for t in g.get("Tags", []))]
        assert ours == []
        sm = boto3.client("sagemaker", region_name="us-east-2", **aws)
        assert sm.list_endpoints()["Endpoints"] == [] and sm.list_endpoint_configs()["EndpointConfigs"] == []
        assert sm.list_models()["Models"] == []
        assert SK not in out  # the secret never reaches the output ...
        # ... nor any file the run left: Airflow's metadata DB (XCom) and task logs, raw results,
        # validation results, the report, the warehouse.
        leaked = [str(f) for f in Path(airflow_env["LLMBENCH_HOME"]).rglob("*")
                  if f.is_file() and SK.encode() in f.read_bytes()]
        assert leaked == []
    # the local target's own server is gone (servers of other runs on this machine may come and go)
    assert llama_server_pids() <= servers_before

    con = duckdb.connect(airflow_env["LLMBENCH_HOME"] + "/warehouse.duckdb", read_only=True)
    try:
        targets = {row[0]: row[1:] for row in con.execute(
            "SELECT target_id, backend, status, price_basis, usd_per_hour, price_note, endpoint_seconds, "
            "benchmark_cost_usd FROM llmbench.targets WHERE run_key = ?", [RUN_KEY]).fetchall()}
        assert set(targets) == {"local-2slots", "mine-unpriced", "ec2-g6", "sm-g6", "nova-micro"}
        assert {t: v[0] for t, v in targets.items()} == {
            "local-2slots": "local", "mine-unpriced": "openai", "ec2-g6": "ec2", "sm-g6": "sagemaker",
            "nova-micro": "bedrock"}
        assert all(v[1] == "succeeded" for v in targets.values()), targets
        assert targets["ec2-g6"][2:4] == ("per_hour", 0.8048) and targets["ec2-g6"][5] > 0  # instance-seconds
        assert targets["ec2-g6"][6] > 0
        assert targets["nova-micro"][2:4] == ("per_token", None) and targets["nova-micro"][6] > 0  # tokens x list
        assert targets["mine-unpriced"][2:4] == ("none", None) and "no usd_per_hour" in targets["mine-unpriced"][4]
        assert targets["mine-unpriced"][6] is None
        # The SageMaker path end to end (test_dag_sagemaker's run until issue 34: one DAG run fewer):
        # its endpoint lived and was billed, every request of every level came back, and the
        # catalog's price of its instance in its region is frozen on the row.
        assert targets["sm-g6"][2:4] == ("per_hour", 1.1267) and targets["sm-g6"][5] > 0
        levels = con.execute("SELECT concurrency, requests_ok, output_tokens_per_s, ttft_ms_p50 FROM llmbench.levels "
                             "WHERE run_key = ? AND target_id = 'sm-g6' ORDER BY concurrency", [RUN_KEY]).fetchall()
        assert [lv[0] for lv in levels] == [1, 2] and all(lv[1] == 3 and lv[2] > 0 and lv[3] > 0 for lv in levels)
        (sm_failed_stage,), = con.execute("SELECT failed_stage FROM llmbench.targets WHERE run_key = ? "
                                          "AND target_id = 'sm-g6'", [RUN_KEY]).fetchall()
        assert sm_failed_stage is None
        assert set(con.execute("SELECT usd_per_hour FROM llmbench.price_performance WHERE run_key = ? "
                               "AND target_id = 'sm-g6'", [RUN_KEY]).fetchall()) == {(1.1267,)}

        rows = con.execute(
            "SELECT backend, target_id, concurrency, usd_per_m_output_tokens, usd_per_m_output_tokens_with_input, "
            "monthly_usd, break_even_output_tokens_per_s_vs_per_token, per_token_target_id, output_tokens_per_s "
            "FROM llmbench.v_path_comparison WHERE run_key = ? ORDER BY backend, concurrency", [RUN_KEY]).fetchall()
        # one row per path and concurrency
        assert sorted((r[1], r[2]) for r in rows) == sorted(
            (t, c) for t in targets for c in (1, 2))
        by = {(r[1], r[2]): r for r in rows}
        for c in (1, 2):
            nova = by[("nova-micro", c)]
            assert nova[3] == 0.14 and nova[4] > 0.14 and nova[5] is None and nova[6] is None  # per token
            unpriced = by[("mine-unpriced", c)]
            assert unpriced[3] is None and unpriced[4] is None and unpriced[5] is None and unpriced[8] > 0
            for hourly in ("local-2slots", "ec2-g6", "sm-g6"):
                row = by[(hourly, c)]
                assert row[3] > 0 and row[4] == row[3] and row[5] > 0
                assert row[7] == "nova-micro" and row[6] > 0
        # The comparison as a user reads it (shown with pytest -s).
        print(con.execute(
            "SELECT target_id, backend, concurrency AS c, price_basis, round(output_tokens_per_s, 1) AS out_tps, "
            "round(ttft_ms_p50, 1) AS ttft_p50, round(usd_per_m_output_tokens_with_input, 3) AS usd_m_out_w_in, "
            "round(monthly_usd, 0) AS monthly, round(break_even_output_tokens_per_s_vs_per_token, 1) AS break_even_tps, "
            "price_note FROM llmbench.v_path_comparison WHERE run_key = ? ORDER BY c, usd_m_out_w_in NULLS LAST",
            [RUN_KEY]).fetchdf().to_string(index=False))
        overhead = con.execute("SELECT instance_type, concurrency, managed_overhead_ttft_ms_p50 "
                               "FROM llmbench.v_managed_overhead WHERE run_key = ? ORDER BY concurrency",
                               [RUN_KEY]).fetchall()
        assert [(o[0], o[1]) for o in overhead] == [("ml.g6.xlarge", 1), ("ml.g6.xlarge", 2)]
        pairs = con.execute("SELECT target_id, concurrency, per_token_target_id, break_even_output_tokens_per_s "
                            "FROM llmbench.break_even WHERE run_key = ?", [RUN_KEY]).fetchall()
        assert sorted((p[0], p[1], p[2]) for p in pairs) == sorted(
            (t, c, "nova-micro") for t in ("local-2slots", "ec2-g6", "sm-g6") for c in (1, 2))
        assert all(o[2] is not None for o in overhead)
        # Each path at the SLO (one row per target) and break-even against each per-token path.
        at_slo = con.execute("SELECT target_id, backend, workload_label, levels_meeting_slo, concurrency AS c, "
                             "round(output_tokens_per_s, 1) AS out_tps, round(usd_per_m_headline, 3) AS usd_m "
                             "FROM llmbench.v_path_at_slo WHERE run_key = ? ORDER BY target_id", [RUN_KEY]).fetchdf()
        print(at_slo.to_string(index=False))
        assert sorted(at_slo["target_id"]) == sorted(targets)
        assert con.execute("SELECT count(*) FROM llmbench.v_break_even WHERE run_key = ? AND cheapest_per_token",
                           [RUN_KEY]).fetchone()[0] == len(pairs)
    finally:
        con.close()
