"""The EC2 backend: control plane on moto (EC2 + SSM), data plane the real local llama-server
standing in for vLLM on the instance (same OpenAI wire). Launch, tag, guard, wait, sweep,
terminate, clean up part-way failures, janitor, quota; nothing of ours may remain."""

import base64
import json
import socket
import time
from datetime import UTC, datetime, timedelta

import pytest

from llmbench.backends.base import DeployError
from llmbench.backends.ec2.backend import Ec2Backend, janitor
from llmbench.loadgen.sweep import run_sweep, run_warmup

from .ec2_fixtures import (  # noqa: F401 (fixture)
    AMI_PARAMETER,
    REGION,
    aws,
    ec2_target,
    live_instances,
    our_groups,
    register_dlami,
)

RUNNER_CIDR = "203.0.113.7/32"  # TEST-NET-3: the in-process mock has no endpoint host to route toward


def served_by(server_port: int, **settings):
    """Settings whose server URL is the local llama-server (the instance's address is moto's)."""
    return dict(
        ami_ssm_parameter=AMI_PARAMETER,
        runner_cidr=RUNNER_CIDR,
        server_port=server_port,
        server_url="http://127.0.0.1:{port}/v1",
        **settings,
    )


def describe(session, instance_id):
    ec2 = session.client("ec2", region_name=REGION)
    return ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]


def test_deploy_ready_sweep_teardown_leaves_nothing(aws, local_server, tmp_path):  # noqa: F811
    t = ec2_target(tmp_path, **served_by(local_server["port"], expiry_hours=2, root_volume_gb=120))
    backend = Ec2Backend(aws)
    before = datetime.now(UTC)
    handle = backend.deploy(t, tmp_path)
    try:
        assert json.loads(json.dumps(handle)) == handle  # travels through XCom
        assert handle["created_security_group"] is True and handle["model"] == "qwen3-8b"
        ec2 = aws.client("ec2", region_name=REGION)
        instance = describe(aws, handle["instance_id"])
        assert instance["InstanceType"] == "g6.xlarge"
        tags = {x["Key"]: x["Value"] for x in instance["Tags"]}
        assert tags["managed-by"] == "llmbench" and tags["llmbench:run-key"] == "ec2-test-2026-12-01"
        assert tags["llmbench:target-id"] == "g6-vllm" and tags["llmbench:instance-type"] == "g6.xlarge"
        assert tags["Name"].startswith("llmb-g6-vllm-ec2-test")
        expires = datetime.fromisoformat(tags["llmbench:expires-at"])
        assert before + timedelta(hours=2) - timedelta(seconds=2) <= expires <= datetime.now(UTC) + timedelta(hours=2)
        (volume,) = ec2.describe_volumes(Filters=[{"Name": "tag:llmbench:target-id", "Values": ["g6-vllm"]}])["Volumes"]
        assert volume["Size"] == 120 and volume["VolumeType"] == "gp3"
        assert volume["Attachments"][0]["InstanceId"] == handle["instance_id"]
        # The guard: the instance powers itself off at expiry, and powering off terminates it.
        behaviour = ec2.describe_instance_attribute(
            InstanceId=handle["instance_id"], Attribute="instanceInitiatedShutdownBehavior"
        )
        assert behaviour["InstanceInitiatedShutdownBehavior"]["Value"] == "terminate"
        script = base64.b64decode(
            ec2.describe_instance_attribute(InstanceId=handle["instance_id"], Attribute="userData")["UserData"]["Value"]
        ).decode()
        assert "shutdown -h +120" in script and "vllm/vllm-openai:v0.15.1 --model Qwen/Qwen3-8B" in script
        # The security group: tagged like the instance, admitting only the runner, only on the port.
        group = our_groups(aws)[handle["security_group_id"]]
        assert {x["Key"]: x["Value"] for x in group["Tags"]}["llmbench:expires-at"] == tags["llmbench:expires-at"]
        assert [g["GroupId"] for g in instance["SecurityGroups"]] == [handle["security_group_id"]]
        (rule,) = group["IpPermissions"]
        port = local_server["port"]
        assert (rule["IpProtocol"], rule["FromPort"], rule["ToPort"]) == ("tcp", port, port)
        assert [r["CidrIp"] for r in rule["IpRanges"]] == [RUNNER_CIDR] and not rule.get("Ipv6Ranges")

        backend.wait_ready(handle, 30)
        assert backend.status(handle).state == "ready"
        endpoint = backend.endpoint(handle)
        assert endpoint.url == f"http://127.0.0.1:{port}/v1/chat/completions"
        assert endpoint.wire == "sse" and endpoint.model == "qwen3-8b"
        run_warmup(endpoint, t.workload)
        result = run_sweep(endpoint, t.workload, tmp_path / "sweep")
        records = [json.loads(line) for line in result.requests_path.with_suffix(".jsonl").read_text().splitlines()]
        assert len(records) == 6 and all(r["ok"] for r in records), records
        assert all(r["output_tokens"] >= 1 for r in records)
        assert [row["requests_ok"] for row in result.levels] == [3, 3]
    finally:
        out = backend.teardown(handle)
    assert live_instances(aws) == {} and our_groups(aws) == {}
    assert describe(aws, handle["instance_id"])["State"]["Name"] == "terminated"
    assert out.endpoint_seconds > 0 and out.deleted_at
    again = backend.teardown(handle)  # already gone: tolerated
    assert again.endpoint_seconds >= out.endpoint_seconds
    backend.teardown({**handle, "instance_id": "i-0123456789abcdef0"})  # never existed: tolerated too


def test_control_plane_through_endpoint_url_and_runner_address(tmp_path, monkeypatch):
    """A moto server process as the control-plane endpoint (ec2 and ssm both): the AMI comes from
    SSM through it, and with no runner_cidr the group admits this runner's address on the route to
    that endpoint (here loopback) and nothing else."""
    import boto3

    from llmbench.testing._serve import ServerProcess

    monkeypatch.setenv("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")  # the server process inherits it
    # moto's own server: EC2 and SSM need none of the SageMaker widening tests.integration.moto_server adds.
    with ServerProcess("moto.server") as moto:
        session = boto3.Session(
            aws_access_key_id="AKIDLLMBENCHTEST", aws_secret_access_key="llmbench-test-secret", region_name=REGION
        )
        ec2 = session.client("ec2", endpoint_url=moto.url)
        ami = register_dlami(session, moto.url)
        backend = Ec2Backend(session, endpoint_url=moto.url)
        handle = backend.deploy(ec2_target(tmp_path, ami_ssm_parameter=AMI_PARAMETER), tmp_path)
        try:
            assert describe_via(ec2, handle["instance_id"])["ImageId"] == ami
            (rule,) = our_groups(session, moto.url)[handle["security_group_id"]]["IpPermissions"]
            assert [r["CidrIp"] for r in rule["IpRanges"]] == ["127.0.0.1/32"] and rule["FromPort"] == 8000
        finally:
            backend.teardown(handle)
        assert live_instances(session, moto.url) == {} and our_groups(session, moto.url) == {}


def describe_via(ec2, instance_id):
    return ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]


@pytest.mark.parametrize(
    ("settings", "step"),
    [
        ({"iam_instance_profile": "no-such-profile"}, "run instances"),  # after the group was created
        ({"subnet_id": "subnet-00000000bogus"}, "create security group"),  # the group's VPC lookup
        ({"ami_ssm_parameter": "/llmbench-test/no-such-parameter"}, "resolve AMI"),
    ],
)
def test_launch_failing_part_way_leaves_nothing_and_names_the_step(aws, tmp_path, settings, step):  # noqa: F811
    t = ec2_target(tmp_path, **{**served_by(8000), **settings})
    with pytest.raises(DeployError, match=f"failed at {step}: ") as err:
        Ec2Backend(aws).deploy(t, tmp_path)
    assert our_groups(aws) == {} and live_instances(aws) == {}
    if step == "run instances":
        assert "removed ['security group sg-" in str(err.value)


def test_network_defaults_from_the_connection_and_settings_overriding_them(aws, tmp_path):  # noqa: F811
    """network (the connection extra) supplies subnet and group; a given group is used, never
    created, and never deleted by teardown; the config's settings win over the connection."""
    ec2 = aws.client("ec2", region_name=REGION)
    subnet = ec2.describe_subnets()["Subnets"][0]
    theirs = ec2.create_security_group(GroupName="theirs", Description="not ours")["GroupId"]
    backend = Ec2Backend(aws, network={"subnet_id": subnet["SubnetId"], "security_group_id": theirs})
    handle = backend.deploy(ec2_target(tmp_path, **served_by(8000)), tmp_path)
    instance = describe(aws, handle["instance_id"])
    assert instance["SubnetId"] == subnet["SubnetId"] and handle["created_security_group"] is False
    assert [g["GroupId"] for g in instance["SecurityGroups"]] == [theirs]
    backend.teardown(handle)
    assert theirs in {g["GroupId"] for g in ec2.describe_security_groups()["SecurityGroups"]}
    other = ec2.create_subnet(VpcId=subnet["VpcId"], CidrBlock="172.31.200.0/24")["Subnet"]["SubnetId"]
    handle = backend.deploy(ec2_target(tmp_path, **served_by(8000), subnet_id=other), tmp_path)
    assert describe(aws, handle["instance_id"])["SubnetId"] == other
    backend.teardown(handle)
    assert live_instances(aws) == {}


def test_server_that_never_answers_times_out_then_teardown_terminates(aws, tmp_path):  # noqa: F811
    """The instance runs but its port accepts and never answers (a container still loading a
    model): wait_ready gives up within its timeout, naming what it saw; teardown then terminates."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        t = ec2_target(tmp_path, **served_by(silent.getsockname()[1]))
        backend = Ec2Backend(aws)
        handle = backend.deploy(t, tmp_path)
        assert backend.status(handle, http_timeout_s=0.5).state == "pending"
        started = time.monotonic()
        # the last look's own deadline (backends.deadline): a server that accepts and never answers
        with pytest.raises(DeployError, match=r"not serving within 3s: instance running; .*/v1/models: "
                                              r"timeout: no complete response within"):
            backend.wait_ready(handle, 3)
        assert 2.5 < time.monotonic() - started < 4.5
    backend.teardown(handle)
    assert describe(aws, handle["instance_id"])["State"]["Name"] == "terminated"
    assert live_instances(aws) == {} and our_groups(aws) == {}


def test_instance_that_goes_away_fails_readiness_with_its_reason(aws, tmp_path):  # noqa: F811
    backend = Ec2Backend(aws)
    handle = backend.deploy(ec2_target(tmp_path, **served_by(8000)), tmp_path)
    aws.client("ec2", region_name=REGION).stop_instances(InstanceIds=[handle["instance_id"]])
    started = time.monotonic()
    with pytest.raises(DeployError, match=f"instance {handle['instance_id']} stopped: .*shutdown"):
        backend.wait_ready(handle, 30)
    assert time.monotonic() - started < 5  # failed is final: no waiting out the timeout
    backend.teardown(handle)
    assert live_instances(aws) == {} and our_groups(aws) == {}


def test_janitor_removes_only_what_expired_and_is_ours(aws, tmp_path):  # noqa: F811
    ec2 = aws.client("ec2", region_name=REGION)
    backend = Ec2Backend(aws)
    old = backend.deploy(ec2_target(tmp_path, "old", **served_by(8000, expiry_hours=1)), tmp_path)
    new = backend.deploy(ec2_target(tmp_path, "new", **served_by(8000, expiry_hours=48)), tmp_path)
    ami = ec2.describe_images(Owners=["self"])["Images"][0]["ImageId"]
    stranger = ec2.run_instances(ImageId=ami, MinCount=1, MaxCount=1, InstanceType="g6.xlarge")["Instances"][0]
    ec2.create_security_group(GroupName="strangers", Description="not ours")

    removed = janitor(aws, REGION, now=datetime.now(UTC) + timedelta(hours=2))
    assert {(r["kind"], r["id"]) for r in removed} == {
        ("instance", old["instance_id"]),
        ("security_group", old["security_group_id"]),
    }
    assert all(r["tags"]["llmbench:target-id"] == "old" and r["name"] for r in removed)
    assert set(live_instances(aws)) == {new["instance_id"], stranger["InstanceId"]}
    assert set(our_groups(aws)) == {new["security_group_id"]}
    assert "strangers" in {g["GroupName"] for g in ec2.describe_security_groups()["SecurityGroups"]}
    assert janitor(aws, REGION) == []  # nothing else expired now: safe to run again
    assert backend.janitor(REGION, now=datetime.now(UTC) + timedelta(hours=49))[0]["id"] == new["instance_id"]
    assert set(live_instances(aws)) == {stranger["InstanceId"]} and our_groups(aws) == {}


def test_quota_blocks_a_second_instance_of_a_type(aws, tmp_path):  # noqa: F811
    backend = Ec2Backend(aws)
    quota = {"g6.xlarge": 1}
    first, second = (ec2_target(tmp_path, f"q{i}", **served_by(8000, instance_quota=quota)) for i in (1, 2))
    bigger = ec2_target(tmp_path, "q3", instance_type="g6.2xlarge", **served_by(8000, instance_quota=quota))
    assert backend.quota_busy(first) is None
    handle = backend.deploy(first, tmp_path)
    busy = backend.quota_busy(second)
    assert busy == f"1 of 1 g6.xlarge instance(s) in use ({handle['instance_id']})"
    assert backend.quota_busy(bigger) is None  # another type, no quota of its own
    assert backend.quota_busy(ec2_target(tmp_path, "free", **served_by(8000))) is None  # no quota set
    backend.teardown(handle)
    assert backend.quota_busy(second) is None


def test_rerun_replaces_a_group_an_earlier_attempt_left(aws, tmp_path):  # noqa: F811
    """Group names derive from run key and target: a worker killed after creating its group (no
    handle written) would block the re-run. An unused leftover of ours is deleted and made anew."""
    t = ec2_target(tmp_path, **served_by(8000))
    backend = Ec2Backend(aws)
    killed = backend.deploy(t, tmp_path)
    backend._terminate(aws.client("ec2", region_name=REGION), [killed["instance_id"]])  # the group stays
    handle = backend.deploy(t, tmp_path)
    assert set(our_groups(aws)) == {handle["security_group_id"]} != {killed["security_group_id"]}
    # ... but one still in use (the earlier instance alive) is not touched: the deploy says why.
    with pytest.raises(DeployError, match="failed at create security group: .*Duplicate"):
        backend.deploy(t, tmp_path)
    assert set(live_instances(aws)) == {handle["instance_id"]}
    backend.teardown(handle)
    assert live_instances(aws) == {} and our_groups(aws) == {}
