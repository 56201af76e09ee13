"""The SageMaker control plane against moto: create, tag, wait, delete, clean up on failure."""

import json
from datetime import datetime, timedelta, timezone

import pytest

from llmbench.backends.base import DeployError
from llmbench.backends.sagemaker.backend import SageMakerBackend, container_environment, janitor, resource_name

from .sagemaker_fixtures import aws, remaining, seed_target  # noqa: F401 (fixture)


def test_deploy_tags_waits_and_teardown_leaves_nothing(aws, tmp_path):  # noqa: F811
    t = seed_target(tmp_path)
    backend = SageMakerBackend(aws)
    handle = backend.deploy(t, tmp_path)
    try:
        backend.wait_ready(handle, 30)
        client = aws.client("sagemaker")
        desc = client.describe_endpoint(EndpointName=handle["endpoint_name"])
        assert desc["EndpointStatus"] == "InService"
        cfg = client.describe_endpoint_config(EndpointConfigName=handle["endpoint_config_name"])
        assert cfg["ProductionVariants"][0]["InstanceType"] == "ml.g7e.2xlarge"
        model = client.describe_model(ModelName=handle["model_name"])
        env = model["PrimaryContainer"]["Environment"]
        assert env["SM_VLLM_MODEL"] == "Qwen/Qwen3-32B" and env["SM_VLLM_ENABLE_PREFIX_CACHING"] == ""
        assert json.loads(env["SM_VLLM_SPECULATIVE_CONFIG"])["method"] == "eagle3"
        assert "us-west-2" in model["PrimaryContainer"]["Image"]
        found = remaining(aws)
        assert {r["kind"] for r in found} == {"endpoint", "endpoint_config", "model"}
        tags = found[0]["tags"]
        assert tags["llmbench:run-key"] == "sagemaker-seed-002-2026-11-30" and "llmbench:expires-at" in tags
        ep = backend.endpoint(handle)
        assert ep.url.endswith(f"/endpoints/{handle['endpoint_name']}/invocations-response-stream")
        assert ep.wire == "sagemaker" and ep.signer is not None
    finally:
        out = backend.teardown(handle)
    assert remaining(aws) == []
    assert out.endpoint_seconds >= 0
    backend.teardown(handle)  # already gone: tolerated


@pytest.mark.parametrize("fail_at", ["create_model", "create_endpoint_config", "create_endpoint"])
def test_deploy_failing_part_way_removes_what_it_created(aws, tmp_path, monkeypatch, fail_at):  # noqa: F811
    from botocore.exceptions import ClientError

    import llmbench.backends.sagemaker.backend as smb

    real_client = SageMakerBackend._client

    def failing_client(self, region):
        client = real_client(self, region)
        def boom(**kwargs):
            raise ClientError({"Error": {"Code": "ResourceLimitExceeded", "Message": "quota"}}, fail_at)
        setattr(client, fail_at, boom)
        return client

    monkeypatch.setattr(smb.SageMakerBackend, "_client", failing_client)
    with pytest.raises(DeployError, match=f"{fail_at.removeprefix('create_')} failed"):
        SageMakerBackend(aws).deploy(seed_target(tmp_path), tmp_path)
    assert remaining(aws) == []


def test_no_role_refused_before_anything_is_created(aws, tmp_path):  # noqa: F811
    t = seed_target(tmp_path, role_arn=None)
    with pytest.raises(DeployError, match="execution role"):
        SageMakerBackend(aws).deploy(t, tmp_path)
    assert remaining(aws) == []


def test_janitor_deletes_only_what_expired(aws, tmp_path):  # noqa: F811
    old = seed_target(tmp_path / "a", "g7e-vllm-eagle3", expiry_hours=1)
    new = seed_target(tmp_path / "b", "g6e-vllm-eagle3", expiry_hours=48)
    backend = SageMakerBackend(aws)
    h_old, h_new = backend.deploy(old, tmp_path), backend.deploy(new, tmp_path)
    removed = janitor(aws, "us-west-2", now=datetime.now(timezone.utc) + timedelta(hours=2))
    assert {r["name"] for r in removed} == {h_old["endpoint_name"]}
    assert {r["kind"] for r in removed} == {"endpoint", "endpoint_config", "model"}
    assert {r["name"] for r in remaining(aws)} == {h_new["endpoint_name"]}
    assert janitor(aws, "us-west-2") == []  # nothing else expired: safe to run again
    backend.teardown(h_new)
    assert remaining(aws) == []


def test_resource_names_are_valid_unique_and_sanitised():
    import re

    a = resource_name("sagemaker-seed-002-2026-11-30", "g7e'; DROP TABLE x;--" + "y" * 80)
    b = resource_name("sagemaker-seed-002-2026-11-30", "g7e'; DROP TABLE x;--" + "y" * 81)
    for n in (a, b):
        assert re.fullmatch(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}", n), n
    assert a != b


def test_lmi_environment(tmp_path):
    from llmbench.schemas.targets import LmiServing

    serving = LmiServing(kind="lmi", name="lmi", tensor_parallel_degree=4, max_model_len=4096, dtype="bf16",
                         max_rolling_batch_size=64, gpu_memory_utilization=0.9, enable_prefix_caching=True)
    t = seed_target(tmp_path).model_copy(update={"hf_id": "Qwen/Qwen3-32B", "serving": serving})
    env = container_environment(t)
    assert env["HF_MODEL_ID"] == "Qwen/Qwen3-32B" and env["OPTION_TENSOR_PARALLEL_DEGREE"] == "4"
    assert env["OPTION_ASYNC_MODE"] == "true" and env["OPTION_ENABLE_PREFIX_CACHING"] == "true"


def test_endpoint_that_fails_reports_its_failure_reason(aws, tmp_path):  # noqa: F811
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.sagemaker.models import sagemaker_backends

    backend = SageMakerBackend(aws)
    handle = backend.deploy(seed_target(tmp_path), tmp_path)
    fake = sagemaker_backends[DEFAULT_ACCOUNT_ID]["us-west-2"].endpoints[handle["endpoint_name"]]
    fake.endpoint_status, fake.failure_reason = "Failed", "CUDA driver version is insufficient for CUDA runtime"
    try:
        with pytest.raises(DeployError, match="CUDA driver version is insufficient"):
            backend.wait_ready(handle, 5)
    finally:
        backend.teardown(handle)  # the DAG's teardown runs after a failed wait_ready
    assert remaining(aws) == []


def test_deploy_waits_for_quota_per_instance_type(aws, tmp_path):  # noqa: F811
    """sagemaker.instance_quota (seed 002: ml.g7e.2xlarge 2): a third endpoint of that type is
    'not now' (None) until one of ours is deleted; other instance types are not counted."""
    from llmbench import pipeline

    targets = [seed_target(tmp_path, instance_quota={"ml.g7e.2xlarge": 2}).model_copy(update={"target_id": f"quota-{i}"})
               for i in range(3)]
    first = pipeline.deploy_within_quota(targets[0], session=aws)
    second = pipeline.deploy_within_quota(targets[1], session=aws)
    assert first and second
    assert pipeline.deploy_within_quota(targets[2], session=aws) is None
    assert len([r for r in remaining(aws) if r["kind"] == "endpoint"]) == 2
    pipeline.teardown(targets[0], first, session=aws)
    third = pipeline.deploy_within_quota(targets[2], session=aws)
    assert third
    for t, h in ((targets[1], second), (targets[2], third)):
        pipeline.teardown(t, h, session=aws)
    assert remaining(aws) == []


def test_rerun_after_a_killed_attempt_reaps_its_endpoint_then_deploys(aws, tmp_path):  # noqa: F811
    """Resource names derive from the run key: a re-run would collide with what a killed worker
    left. deploy tears the earlier attempt's resources down first, and says so in its events."""
    from llmbench import pipeline
    from llmbench.results.events import read_events

    killed = seed_target(tmp_path)
    pipeline.deploy(killed, session=aws)  # ... and then the worker died: no teardown
    from pathlib import Path

    rerun = killed.model_copy(update={"run_dir": str(Path(killed.run_dir).parent / "rerun-attempt")})
    handle = pipeline.deploy(rerun, session=aws)
    names = {r["name"] for r in remaining(aws)}
    assert names == {handle["endpoint_name"]} and len(remaining(aws)) == 3
    assert any(e["status"] == "reaped" for e in read_events(rerun))
    assert (killed.dir / "teardown.json").exists()
    pipeline.teardown(rerun, handle, session=aws)
    assert remaining(aws) == []


@pytest.mark.parametrize(("region", "container", "uri"), [
    ("me-south-1", None,
     "217643126080.dkr.ecr.me-south-1.amazonaws.com/vllm:0.15.1-gpu-py312-cu129-ubuntu22.04-sagemaker"),
    ("ap-east-1", "vllm-0.30.0",
     "871362719292.dkr.ecr.ap-east-1.amazonaws.com/vllm:0.30.0-gpu-py312-cu130-ubuntu24.04-sagemaker"),
])
def test_the_model_runs_the_image_plan_resolved_for_its_region(aws, tmp_path, region, container, uri):  # noqa: F811
    """Seed 002's g7e target moved to another region (priced on the target): the SDK's registry for
    that region is what CreateModel receives, and the handle records it for targets.container_image."""
    import yaml

    from llmbench import paths
    from llmbench.planning.plan import plan

    cfg = yaml.safe_load((paths.CONFIG_DIR / "sagemaker-seed-002.yaml").read_text())
    cfg["sagemaker"].update(region=region, role_arn="arn:aws:iam::123456789012:role/llmbench-sagemaker")
    cfg["targets"] = [dict(t, usd_per_hour=5.0) for t in cfg["targets"] if t["id"] == "g7e-vllm-eagle3"]
    cfg["reference"] = []
    cfg.pop("quality", None)  # its baseline is a target this one-target config drops
    if container:
        cfg["targets"][0]["serving"]["container"] = container
    (tmp_path / "moved.yaml").write_text(yaml.safe_dump(cfg))
    t = plan(str(tmp_path / "moved.yaml"), "2026-11-30", runs_root=tmp_path / "runs").targets[0]
    assert t.region == region and t.backend.container.uri == uri
    backend = SageMakerBackend(aws)
    handle = backend.deploy(t, tmp_path)
    try:
        model = aws.client("sagemaker", region_name=region).describe_model(ModelName=handle["model_name"])
        assert model["PrimaryContainer"]["Image"] == uri
        assert handle["container_image"] == uri and handle["region"] == region
    finally:
        backend.teardown(handle)
    assert remaining(aws, region) == []
