"""EC2 targets built directly (no config.py: plan() is not what these tests are about), and moto
for the EC2 and SSM control planes."""

import pytest

from llmbench.backends.ec2.models import Ec2Settings, Ec2Target
from llmbench.schemas.slo import Slo
from llmbench.schemas.targets import (
    ContainerImage,
    Price,
    ResolvedTarget,
    ValidationSettings,
    VllmServing,
)
from llmbench.schemas.workload import Workload

REGION = "us-east-1"
AMI_PARAMETER = "/llmbench-test/dlami/ami-id"  # moto reserves /aws/ for AWS's own parameters
VLLM_IMAGE = ContainerImage(
    kind="vllm", image="vllm/vllm-openai:v0.15.1", cuda="12.9", gpu_archs=["ada"], platform="ec2"
)


def ec2_target(
    tmp_path=None,
    target_id="g6-vllm",
    run_key="ec2-test-2026-12-01",
    serving=None,
    instance_type="g6.xlarge",
    container=VLLM_IMAGE,
    **settings,
) -> ResolvedTarget:
    """A resolved EC2 target: g6.xlarge (1 x L4), vLLM, a tiny workload; `settings` override Ec2Settings."""
    run_dir = str(tmp_path or "/tmp/llmbench-ec2-unit")
    return ResolvedTarget(
        run_key=run_key,
        run_dir=run_dir,
        target_id=target_id,
        label=f"{target_id} (test)",
        instance_type=instance_type,
        model="qwen3-8b",
        hf_id="Qwen/Qwen3-8B",
        precision="bf16",
        serving=serving or VllmServing(kind="vllm", name="vllm-tp1", max_model_len=4096),
        workload=Workload(
            input_tokens=32, output_tokens=8, concurrency=[1, 2], requests_per_level=3, warmup_requests=1
        ),
        validation=ValidationSettings(),
        slo=Slo(),
        price=Price.hourly(0.8048, "test"),
        backend=Ec2Target(settings=Ec2Settings(**{"region": REGION, **settings}), container=container),
        region=REGION,
        estimated_endpoint_hours=0.5,
        estimated_usd=0.4,
    )


def register_dlami(session, endpoint_url=None) -> str:
    """A stand-in for the Deep Learning AMI, published under AMI_PARAMETER as AWS publishes the
    real one. Its root device is not the fallback /dev/sda1: the backend must read it off the AMI."""
    ec2 = session.client("ec2", region_name=REGION, endpoint_url=endpoint_url)
    ami = ec2.register_image(
        Name="llmbench-test-dlami",
        Architecture="x86_64",
        RootDeviceName="/dev/xvda",
        BlockDeviceMappings=[{"DeviceName": "/dev/xvda", "Ebs": {"VolumeSize": 75}}],
    )["ImageId"]
    session.client("ssm", region_name=REGION, endpoint_url=endpoint_url).put_parameter(
        Name=AMI_PARAMETER, Value=ami, Type="String"
    )
    return ami


@pytest.fixture
def aws(monkeypatch):
    """An in-process moto account with fake credentials and one AMI, named by an SSM parameter."""
    from moto import mock_aws

    for k, v in {
        "AWS_ACCESS_KEY_ID": "AKIDLLMBENCHTEST",
        "AWS_SECRET_ACCESS_KEY": "llmbench-test-secret",
        "AWS_DEFAULT_REGION": REGION,
        # moto's ~1,300 default AMIs cost seconds per test on a 2-core machine; we need one.
        "MOTO_EC2_LOAD_DEFAULT_AMIS": "false",
    }.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        import boto3

        session = boto3.Session(region_name=REGION)
        register_dlami(session)
        yield session


def live_instances(session, endpoint_url=None):
    """Every instance not terminated, ours or not: {id: tags}."""
    ec2 = session.client("ec2", region_name=REGION, endpoint_url=endpoint_url)
    out = {}
    for r in ec2.describe_instances()["Reservations"]:
        for i in r["Instances"]:
            if i["State"]["Name"] != "terminated":
                out[i["InstanceId"]] = {t["Key"]: t["Value"] for t in i.get("Tags", [])}
    return out


def our_groups(session, endpoint_url=None):
    """Security groups tagged managed-by=llmbench: {id: group}."""
    ec2 = session.client("ec2", region_name=REGION, endpoint_url=endpoint_url)
    groups = ec2.describe_security_groups(Filters=[{"Name": "tag:managed-by", "Values": ["llmbench"]}])
    return {g["GroupId"]: g for g in groups["SecurityGroups"]}
