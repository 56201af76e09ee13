"""The fault matrix (Guarantees) for the EC2 and Bedrock paths: one DAG run mixing both, each target
failing at a different point, and what is left afterwards — instances and security groups, raw
records, task and run states, rows.

EC2: moto's server behind the fault-injecting proxy (control plane; EC2 speaks the Query protocol,
so the proxy answers its XML errors) and the real local llama-server as each instance's model
server (data plane). Bedrock: the ConverseStream wire-format server in front of the same
llama-server, with throttling and corrupt frames selected per model id. Every fault comes from
outside the pipeline: an AWS error, an instance EC2 reports as pending, a 429, a bad checksum.
"""

import json
from pathlib import Path

import boto3
import yaml

from llmbench.backends.base import TAG_TARGET
from llmbench.testing._serve import BackgroundServer, ServerProcess

from .aws_fault_proxy import make_app as fault_proxy
from .conftest import dags_test
from .test_fault_matrix import AK, SK, attempt_dirs, aws_env, task_states, warehouse

EC2_REGION, BEDROCK_REGION = "us-east-2", "us-east-1"
DATE, RUN_KEY = "2026-11-23", "paths-matrix-2026-11-23"
READY_TIMEOUT_S = 10
WORKLOAD = {"input_tokens": 64, "output_tokens": 16, "concurrency": [1, 2], "requests_per_level": 3,
            "warmup_requests": 1, "request_timeout_s": 60}
NOVA = "us.amazon.nova-micro-v1:0"
# bedrock target id -> its model id: the wire-format server picks each one's fault by a substring
MODEL_IDS = {
    "br-healthy": NOVA,
    "br-throttle-all": "us.amazon.nova-micro-throttle-all-v1:0",
    "br-throttle-half": "us.amazon.nova-micro-throttle-half-v1:0",
    "br-crc-all": "us.amazon.nova-micro-crc-all-v1:0",
    "br-crc-half": "us.amazon.nova-micro-crc-half-v1:0",
}
BEDROCK_FAULTS = ["--throttle-model", "throttle-all:1", "--throttle-model", "throttle-half:2",
                  # frames after the 4th (messageStart and 3 deltas) carry a corrupt checksum
                  "--fault-model", "crc-all:bad_crc_after=4", "--fault-model", "crc-half:bad_crc_after=4,every=2"]

# target id -> (backend, status, failed_stage, fragments of the error, levels kept, the task that failed,
#               endpoint_seconds set, validation_passed, {error_kind: count} in the warehouse's requests)
MATRIX = {
    "ec2-healthy": ("ec2", "succeeded", None, (), 2, None, True, True, {None: 6}),
    # RunInstances refused: the security group deploy made for it is deleted before deploy raises
    "ec2-no-capacity": ("ec2", "failed", "deploy",
                        ("failed at run instances", "InsufficientInstanceCapacity", "removed ['security group sg-"),
                        0, "deploy", False, None, {}),
    # EC2 says pending for ever: the ready timeout fails it; teardown terminates the instance
    "ec2-never-ready": ("ec2", "failed", "wait_ready", ("not ready: instance i-", f"pending after {READY_TIMEOUT_S}s"),
                        0, "wait_ready", True, None, {}),
    # Bedrock deploys nothing: no endpoint-seconds, ever
    "br-healthy": ("bedrock", "succeeded", None, (), 2, None, False, True, {None: 6}),
    # every request 429: the one warm-up request fails, so warm_up fails (run_warmup: all failed)
    "br-throttle-all": ("bedrock", "failed", "warm_up", ("every warm-up request failed; first: throttled: HTTP 429",
                                                         "Too many requests"), 0, "warm_up", False, None, {}),
    # every 2nd request to the model 429 (warm-up is the 1st): 3 of the 6 measured, error rate 0.5
    "br-throttle-half": ("bedrock", "succeeded", None, (), 2, None, False, False, {None: 3, "throttled": 3}),
    # every stream's checksum breaks after the 4th frame: the warm-up request fails, so warm_up fails
    "br-crc-all": ("bedrock", "failed", "warm_up", ("every warm-up request failed; first: stream_error",
                                                    "Checksum"), 0, "warm_up", False, None, {}),
    # every 2nd stream of the model is corrupt: 3 stream_error records of 6, measured and flagged
    "br-crc-half": ("bedrock", "succeeded", None, (), 2, None, False, False, {None: 3, "stream_error": 3}),
}
RULES = [
    {"action": "RunInstances", "match": "ec2-no-capacity", "error": "InsufficientInstanceCapacity",
     "message": "injected: We currently do not have sufficient g6.xlarge capacity in the Availability Zone you "
                "requested."},
    # this instance's DescribeInstances answers (its tags carry the target id) say pending, not running
    {"action": "DescribeInstances", "match_response": "ec2-never-ready",
     "replace": [["<name>running</name>", "<name>pending</name>"], ["<code>16</code>", "<code>0</code>"]]},
]
STAGES = ("deploy", "wait_ready", "warm_up", "sweep", "validate", "teardown_target")


def _config(tmp_path: Path, bedrock_url: str, upstream: dict, ami: str) -> Path:
    port = int(upstream["base_url"].rsplit(":", 1)[1].split("/")[0])
    ec2 = {"instance_type": "g6.xlarge", "model": "gemma-4-e2b", "precision": "bf16",
           "serving": {"kind": "vllm", "name": "vllm-tp1", "max_model_len": 4096}}
    cfg = {
        "name": "paths-matrix",
        "backend": "ec2",
        # every instance's server is the local llama-server: the control plane decides the outcome
        "ec2": {"region": EC2_REGION, "ami_id": ami, "runner_cidr": "127.0.0.1/32", "server_port": port,
                "server_url": "http://127.0.0.1:{port}/v1", "ready_timeout_s": READY_TIMEOUT_S},
        "bedrock": {"region": BEDROCK_REGION, "runtime_url": bedrock_url},
        "workload": WORKLOAD,
        "targets": [{"id": t, **ec2} for t, row in MATRIX.items() if row[0] == "ec2"] + [
            {"id": t, "backend": "bedrock", "model": "nova-micro",
             "serving": {"kind": "bedrock", "name": "on-demand", "api": "bedrock-nova-micro", "model_id": model_id}}
            for t, model_id in MODEL_IDS.items()],
    }
    path = tmp_path / "paths-matrix.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_ec2_and_bedrock_fault_matrix_leaves_nothing_and_fails_the_run(airflow_env, local_server, tmp_path):
    rules = json.loads(json.dumps(RULES))
    with ServerProcess("tests.integration.moto_server") as moto, \
            BackgroundServer(fault_proxy(moto.url, rules)) as proxy, \
            ServerProcess("llmbench.testing.bedrock_runtime", "--upstream", local_server["base_url"],
                          "--access-key", AK, "--secret-key", SK, "--fresh-upstream-connections",
                          "--region", BEDROCK_REGION, *(w for m in MODEL_IDS.values() for w in ("--model-id", m)),
                          *BEDROCK_FAULTS) as br_runtime:
        ec2 = boto3.client("ec2", region_name=EC2_REGION, endpoint_url=moto.url, aws_access_key_id=AK,
                           aws_secret_access_key=SK)
        ami = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
        path = _config(tmp_path, br_runtime.url, local_server, ami)
        env = aws_env(airflow_env, proxy.url)
        env["AIRFLOW_CONN_AWS_DEFAULT"] = env["AIRFLOW_CONN_AWS_DEFAULT"].replace("us-west-2", EC2_REGION)
        r = dags_test(env, DATE, {"config": str(path)})
        out = r.stdout + r.stderr
        assert r.returncode != 0 and "TargetFailed" in out, out[-6000:]
        assert SK not in out

        # Nothing of ours left on the (fake) cloud: every instance terminated (the never-ready one
        # by its teardown), no security group (the refused launch's by deploy itself).
        instances = [i for res in ec2.describe_instances()["Reservations"] for i in res["Instances"]]
        assert [i["InstanceId"] for i in instances if i["State"]["Name"] != "terminated"] == []
        launched = sorted(t["Value"] for i in instances for t in i.get("Tags", []) if t["Key"] == TAG_TARGET)
        assert launched == ["ec2-healthy", "ec2-never-ready"], launched  # the refused launch started nothing
        ours = [g["GroupId"] for g in ec2.describe_security_groups()["SecurityGroups"]
                if any(t["Key"] == "managed-by" and t["Value"] == "llmbench" for t in g.get("Tags", []))]
        assert ours == []
    assert all(rule.get("fired") for rule in rules), rules

    rows = {t: rest for t, *rest in warehouse(
        airflow_env, "SELECT target_id, backend, status, failed_stage, error, validation_passed, endpoint_seconds "
                     "FROM llmbench.targets WHERE run_key = ?", RUN_KEY)}
    assert set(rows) == set(MATRIX)
    levels = dict(warehouse(airflow_env, "SELECT target_id, count(*) FROM llmbench.levels WHERE run_key = ? "
                                         "GROUP BY target_id", RUN_KEY))
    kinds: dict[str, dict] = {}
    for target_id, kind, n in warehouse(airflow_env, "SELECT target_id, error_kind, count(*) FROM llmbench.requests "
                                                     "WHERE run_key = ? GROUP BY ALL", RUN_KEY):
        kinds.setdefault(target_id, {})[kind] = n
    plan = json.loads((attempt_dirs(airflow_env, RUN_KEY)[-1] / "plan.json").read_text())
    order = [t["target_id"] for t in plan["targets"]]
    run_state, tis = task_states(airflow_env, DATE, keep_group=True)
    assert run_state == "failed"
    for target_id, (backend, status, stage, fragments, n_levels, failed_task, has_seconds, valid,
                    error_kinds) in MATRIX.items():
        got_backend, got_status, got_stage, error, got_valid, seconds = rows[target_id]
        assert (got_backend, got_status, got_stage) == (backend, status, stage), (target_id, rows[target_id])
        assert all(f in (error or "") for f in fragments), (target_id, error)
        assert levels.get(target_id, 0) == n_levels, (target_id, levels)
        assert got_valid is valid, (target_id, got_valid)
        assert (seconds is not None) == has_seconds and (seconds is None or seconds > 0), (target_id, seconds)
        assert kinds.get(target_id, {}) == error_kinds, (target_id, kinds.get(target_id))
        i = [t for t in order if MATRIX[t][0] == backend].index(target_id)  # map index within its group
        states = {task: tis[(f"{backend}.{task}", i)] for task in STAGES}
        if failed_task:
            assert states[failed_task] == "failed", (target_id, states)
            after = STAGES[STAGES.index(failed_task) + 1:-1]
            assert {states[t] for t in after} == {"upstream_failed"}, (target_id, states)
        else:
            assert set(states.values()) == {"success"}, (target_id, states)
        # Teardown runs whenever deploy returned; a deploy that failed cleaned up itself.
        assert states["teardown_target"] == ("upstream_failed" if failed_task == "deploy" else "success"), states
    for task in ("price_performance", "publish", "report"):
        assert tis[(task, -1)] == "success", task
    assert tis[("check", -1)] == "failed"
    # the measured-but-flagged targets: half of all measured requests failed (error rate 0.5 over 6)
    for target_id in ("br-throttle-half", "br-crc-half"):
        (ok, failed), = warehouse(airflow_env, "SELECT sum(requests_ok), sum(requests_failed) FROM llmbench.levels "
                                               "WHERE run_key = ? AND target_id = ?", RUN_KEY, target_id)
        assert (ok, failed) == (3, 3), target_id
