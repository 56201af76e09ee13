"""The janitor DAG: where it looks by default, and what it removes there (EC2 and SageMaker)."""

import importlib.util
from datetime import UTC, datetime, timedelta

import pytest

from llmbench.paths import config_regions

from .conftest import ROOT


def test_default_regions_are_every_region_a_shipped_config_uses(dagbag):
    regions = dagbag.dags["llmbench_janitor"].params["regions"]
    # aws-seed-001 runs SageMaker and EC2 in us-east-2 and Bedrock in us-east-1; the seed-000/002
    # SageMaker configs run in us-west-2.
    assert regions == config_regions() == ["us-east-1", "us-east-2", "us-west-2"]


@pytest.fixture
def aws(monkeypatch):
    from moto import mock_aws

    for k, v in {"AWS_ACCESS_KEY_ID": "AKIDLLMBENCHTEST", "AWS_SECRET_ACCESS_KEY": "llmbench-test-secret",
                 "AWS_DEFAULT_REGION": "us-east-2"}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        yield


def _tags(run_key: str, expires: datetime) -> list[dict]:
    return [{"Key": "managed-by", "Value": "llmbench"}, {"Key": "llmbench:run-key", "Value": run_key},
            {"Key": "llmbench:expires-at", "Value": expires.isoformat(timespec="seconds")}]


def test_the_sweep_terminates_expired_ec2_instances_and_deletes_expired_sagemaker_models(dagbag, aws, monkeypatch):
    # dagbag: Airflow puts plugins/ (llmbench_airflow) on the path as it does for the scheduler
    import boto3

    import llmbench_airflow

    region = "us-east-2"
    session = boto3.Session(region_name=region)
    ec2, sm = session.client("ec2"), session.client("sagemaker")
    ami = ec2.describe_images()["Images"][0]["ImageId"]
    past, future = datetime.now(UTC) - timedelta(hours=1), datetime.now(UTC) + timedelta(hours=5)

    def launch(run_key, expires):
        spec = [{"ResourceType": "instance", "Tags": _tags(run_key, expires)}]
        return ec2.run_instances(ImageId=ami, MinCount=1, MaxCount=1, InstanceType="g6.xlarge",
                                 TagSpecifications=spec)["Instances"][0]["InstanceId"]

    leaked, live = launch("old-run", past), launch("new-run", future)
    stranger = ec2.run_instances(ImageId=ami, MinCount=1, MaxCount=1, InstanceType="g6.xlarge")["Instances"][0]
    sm.create_model(ModelName="llmbench-old", ExecutionRoleArn="arn:aws:iam::123456789012:role/x",
                    PrimaryContainer={"Image": "123456789012.dkr.ecr.us-east-2.amazonaws.com/x:1"},
                    Tags=_tags("old-run", past))

    spec = importlib.util.spec_from_file_location("janitor_dag_under_test", ROOT / "dags" / "llmbench_janitor.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "get_current_context", lambda: {"params": {"aws_conn_id": "aws_default"}})
    monkeypatch.setattr(llmbench_airflow, "aws_session_for", lambda conn_id, r, service="sagemaker": (session, None))

    removed = module.sweep_expired.function(region)
    assert {(r["kind"], r["name"], r["run_key"]) for r in removed} == {
        ("instance", leaked, "old-run"), ("model", "llmbench-old", "old-run")}
    states = {i["InstanceId"]: i["State"]["Name"]
              for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]}
    assert states[leaked] == "terminated"
    assert states[live] == "running" and states[stranger["InstanceId"]] == "running"
    assert sm.list_models()["Models"] == []
