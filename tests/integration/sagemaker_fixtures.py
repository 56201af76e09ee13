"""moto for the SageMaker control plane. Its instance-type list predates g5/g6/g6e/g7e: widen it
to our catalog's types (and only those)."""

import contextlib

import pytest

from llmbench.planning.config import load_catalogs
from llmbench.planning.plan import plan

ROLE = "arn:aws:iam::123456789012:role/llmbench-sagemaker"


@contextlib.contextmanager
def widened_instance_types():
    from moto.sagemaker import models

    ours = set(load_catalogs()["instances"])
    original = models.FakeEndpointConfig.validate_instance_type

    def validate(self, instance_type):
        if instance_type not in ours:
            original(self, instance_type)

    models.FakeEndpointConfig.validate_instance_type = validate
    try:
        yield
    finally:
        models.FakeEndpointConfig.validate_instance_type = original


@pytest.fixture
def aws(monkeypatch):
    """An in-process moto account with fake credentials."""
    from moto import mock_aws

    for k, v in {"AWS_ACCESS_KEY_ID": "AKIDLLMBENCHTEST", "AWS_SECRET_ACCESS_KEY": "llmbench-test-secret",
                 "AWS_DEFAULT_REGION": "us-west-2"}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws(), widened_instance_types():
        import boto3

        yield boto3.Session(region_name="us-west-2")


def remaining(session, region="us-west-2"):
    """Everything carrying our managed-by tag."""
    from llmbench.backends.sagemaker.backend import find_managed

    return find_managed(session, region)


def seed_target(tmp_path, target_id="g7e-vllm-eagle3", **overrides):
    run = plan("sagemaker-seed-002", "2026-11-30", {"targets": [target_id]}, runs_root=tmp_path)
    t = run.targets[0]
    settings = t.backend.settings.model_copy(update={"role_arn": ROLE, **overrides})
    return t.model_copy(update={"backend": t.backend.model_copy(update={"settings": settings})})
