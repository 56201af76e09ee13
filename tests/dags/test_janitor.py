"""The janitor DAG: where it looks by default, and what it removes there (EC2 and SageMaker); and that
the janitor and prices DAGs run whichever kinds have the capability, a throwaway one too."""

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
    # the DAG's AirflowPlatform builds each kind's session from this connection (moto answers it)
    monkeypatch.setenv("AIRFLOW_CONN_AWS_DEFAULT", '{"conn_type": "aws"}')

    removed = module.sweep_expired.function(region)
    assert {(r["kind"], r["name"], r["run_key"]) for r in removed} == {
        ("instance", leaked, "old-run"), ("model", "llmbench-old", "old-run")}
    states = {i["InstanceId"]: i["State"]["Name"]
              for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]}
    assert states[leaked] == "terminated"
    assert states[live] == "running" and states[stranger["InstanceId"]] == "running"
    assert sm.list_models()["Models"] == []


def _dag_module(name: str, file: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "dags" / file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_janitor_and_prices_dags_run_any_kind_with_the_capability(dagbag, monkeypatch):
    """A throwaway kind that is no cloud of ours: its Janitor and PriceList get a generic Platform
    (here reading an http connection's extra) and the two DAGs run them with no change to either."""
    from llmbench.backends import registry
    from llmbench.backends.registry import BackendSpec, Janitor, PriceList

    calls = []

    def sweep(platform, conn_id, region):
        calls.append(("sweep", conn_id, region))
        return [{"kind": "widget", "name": platform.extra(conn_id)["account"] + "-w1", "tags": {}}]

    def refresh(platform, conn_id, region, catalog_types):
        calls.append(("refresh", conn_id, region))
        return {catalog_types[0]: 1.25}

    toy = BackendSpec(kind="toycloud", backend="x:Y", target=object, serving=(), plan=lambda ctx: None,  # type: ignore[arg-type]
                      janitor=Janitor(sweep), prices=PriceList(lambda region, t: None, refresh))
    registry.specs()  # the built-in kinds registered first, then only the toy kind stays
    monkeypatch.setattr(registry, "_SPECS", {"toycloud": toy})
    monkeypatch.setenv("AIRFLOW_CONN_TOYCONN", '{"conn_type": "http", "extra": {"account": "acme"}}')
    janitor = _dag_module("janitor_dag_toy", "llmbench_janitor.py")
    prices = _dag_module("prices_dag_toy", "llmbench_prices.py")
    for m in (janitor, prices):
        monkeypatch.setattr(m, "get_current_context", lambda: {"params": {"aws_conn_id": "toyconn"}})

    assert janitor.sweep_expired.function("eu-north-9") == [{"kind": "widget", "name": "acme-w1", "run_key": None}]
    refreshed = prices.refresh.function("eu-north-9")
    assert list(refreshed) == ["toycloud"] and list(refreshed["toycloud"].values()) == [1.25]
    assert calls == [("sweep", "toyconn", "eu-north-9"), ("refresh", "toyconn", "eu-north-9")]
