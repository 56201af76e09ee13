"""SageMaker real-time endpoints: CreateModel / CreateEndpointConfig / CreateEndpoint, tagged with
the run key and an expiry time, waited for with botocore's waiters, and deleted again.

The library takes a boto3 Session (the DAG builds it from an Airflow AWS connection through the
amazon provider's hook); nothing here imports Airflow. Every resource this backend creates carries
the tag managed-by=llmbench, so the janitor can find what a killed worker left behind.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from llmbench.backends.awsstream import SigV4Signer
from llmbench.backends.base import (
    MANAGED_BY,
    TAG_EXPIRES,
    TAG_INSTANCE,
    TAG_RUN_KEY,
    TAG_TARGET,
    DeployError,
    Endpoint,
    EngineVersion,
    Handle,
    Readiness,
    Teardown,
    torn_down,
)
from llmbench.backends.sagemaker.models import SageMakerTarget
from llmbench.backends.sagemaker.wire import SIGNING_SERVICE, runtime_url, sagemaker_headers
from llmbench.schemas.targets import LmiServing, ResolvedTarget, VllmServing

log = logging.getLogger("llmbench")


def resource_name(run_key: str, target_id: str) -> str:
    """A SageMaker name unique per run key and target: ^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$.
    User input is reduced to letters, digits and single dashes; a hash of the full key keeps
    truncated names distinct."""
    digest = hashlib.sha256(f"{run_key}\0{target_id}".encode()).hexdigest()[:8]
    base = re.sub(r"[^a-zA-Z0-9]+", "-", f"llmb-{target_id}-{run_key}").strip("-")
    return f"{base[: 63 - 9].rstrip('-')}-{digest}"


def container_environment(target: ResolvedTarget) -> dict[str, str]:
    """SM_VLLM_* for the native vLLM container, OPTION_* for DJL LMI; booleans as the containers
    expect them (vLLM: a present-but-empty variable is a flag)."""
    s = target.serving
    hf_id = target.hf_id or target.model
    if isinstance(s, VllmServing):
        env = {
            "SM_VLLM_MODEL": hf_id,
            "SM_VLLM_TENSOR_PARALLEL_SIZE": str(s.tensor_parallel_size),
            "SM_VLLM_DTYPE": s.dtype,
            "SM_VLLM_MAX_MODEL_LEN": str(s.max_model_len),
            "SM_VLLM_MAX_NUM_SEQS": str(s.max_num_seqs),
            "SM_VLLM_GPU_MEMORY_UTILIZATION": str(s.gpu_memory_utilization),
        }
        if target.model_revision:  # the revision targets.model_revision records
            env["SM_VLLM_REVISION"] = target.model_revision
        if s.quantization:
            env["SM_VLLM_QUANTIZATION"] = s.quantization
        if s.enable_prefix_caching:
            env["SM_VLLM_ENABLE_PREFIX_CACHING"] = ""
        if s.enable_chunked_prefill:
            env["SM_VLLM_ENABLE_CHUNKED_PREFILL"] = ""
        if s.speculative_config:
            env["SM_VLLM_SPECULATIVE_CONFIG"] = json.dumps(s.speculative_config)
    elif isinstance(s, LmiServing):
        env = {
            "HF_MODEL_ID": hf_id,
            "OPTION_ASYNC_MODE": "true",
            "OPTION_ROLLING_BATCH": "disable",
            "OPTION_ENTRYPOINT": "djl_python.lmi_vllm.vllm_async_service",
            "OPTION_TENSOR_PARALLEL_DEGREE": str(s.tensor_parallel_degree),
            "OPTION_MAX_MODEL_LEN": str(s.max_model_len),
            "OPTION_DTYPE": s.dtype,
            "OPTION_MAX_ROLLING_BATCH_SIZE": str(s.max_rolling_batch_size),
            "OPTION_GPU_MEMORY_UTILIZATION": str(s.gpu_memory_utilization),
        }
        if s.enable_prefix_caching:
            env["OPTION_ENABLE_PREFIX_CACHING"] = "true"
    else:
        raise ValueError(f"serving.kind {s.kind!r} does not run on SageMaker")
    env.update(s.extra_env)
    return env


def _settings(target: ResolvedTarget) -> SageMakerTarget:
    if not isinstance(target.backend, SageMakerTarget):
        raise DeployError(f"target {target.target_id} is not a sagemaker target ({target.backend.kind})")
    return target.backend


def _tags(target: ResolvedTarget, expires_at: datetime) -> list[dict[str, str]]:
    return [
        {"Key": MANAGED_BY[0], "Value": MANAGED_BY[1]},
        {"Key": TAG_RUN_KEY, "Value": target.run_key[:256]},
        {"Key": TAG_TARGET, "Value": target.target_id[:256]},
        {"Key": TAG_EXPIRES, "Value": expires_at.isoformat(timespec="seconds")},
        {"Key": TAG_INSTANCE, "Value": target.instance_type},
    ]


def _gone(err: Exception) -> bool:
    """A delete/describe error that means the resource does not exist (already deleted)."""
    code = getattr(err, "response", {}).get("Error", {}).get("Code", "")
    msg = str(err)
    return code in ("ValidationException", "ResourceNotFound") and (
        "Could not find" in msg or "not found" in msg.lower()
    )


# The runtime invokes the container's /invocations only: its /metrics and /version are out of reach.
NO_SERVER_PATHS = "SageMaker's runtime reaches only the container's /invocations (no /metrics, no /version)"


class SageMakerBackend:
    kind = "sagemaker"
    cost_basis: Literal["per_hour", "per_token"] = "per_hour"  # instance $/hour x endpoint-seconds
    creates_endpoint = True

    def __init__(self, session: Any = None, role_arn: str | None = None, endpoint_url: str | None = None):
        self.session = session  # boto3.Session; default: the standard credential chain
        self.role_arn = role_arn  # execution role; else the config's sagemaker.role_arn
        self.endpoint_url = endpoint_url  # control-plane endpoint override (VPC endpoints, moto)

    def _client(self, region: str):
        if self.session is None:
            import boto3

            self.session = boto3.Session(region_name=region)
        return self.session.client("sagemaker", region_name=region, endpoint_url=self.endpoint_url)

    def quota_busy(self, target: ResolvedTarget) -> str | None:
        """None when fewer than sagemaker.instance_quota endpoints of ours of this instance type
        are alive (the account's service quota); else who holds it."""
        sm = _settings(target).settings
        quota = sm.instance_quota.get(target.instance_type)
        if not quota:
            return None
        live = self.live_endpoints(sm.region, target.instance_type)
        if len(live) < quota:
            return None
        return f"{len(live)} of {quota} {target.instance_type} endpoint(s) in use ({', '.join(live)})"

    def ready_timeout_s(self, target: ResolvedTarget) -> float:
        return float(_settings(target).settings.endpoint_timeout_s)

    def deploy(self, target: ResolvedTarget, work_dir: Any = None) -> Handle:
        backend = _settings(target)
        sm_cfg = backend.settings
        region = sm_cfg.region
        role = self.role_arn or sm_cfg.role_arn
        if not role:
            raise DeployError(
                "no SageMaker execution role: set sagemaker.role_arn in the config or "
                f"`execution_role_arn` in the extra of connection {sm_cfg.aws_conn_id!r}"
            )
        client = self._client(region)
        name = resource_name(target.run_key, target.target_id)
        deployed_at = datetime.now(UTC)
        tags = _tags(target, deployed_at + timedelta(hours=sm_cfg.expiry_hours))
        image = backend.container.image_uri(region)  # as plan resolved it (backends.dlc)
        variant = {
            "VariantName": "AllTraffic",
            "ModelName": name,
            "InitialInstanceCount": 1,
            "InstanceType": target.instance_type,
            "ContainerStartupHealthCheckTimeoutInSeconds": 1800,
            "ModelDataDownloadTimeoutInSeconds": 1800,
        }
        if backend.container.inference_ami_version:
            variant["InferenceAmiVersion"] = backend.container.inference_ami_version
        created: list[str] = []
        handle = {
            "backend": self.kind,
            "region": region,
            "endpoint_name": name,
            "endpoint_config_name": name,
            "model_name": name,
            "deployed_at": deployed_at.isoformat(),
            "runtime_url": sm_cfg.runtime_url,
            "container_image": image,  # what the model's PrimaryContainer runs (targets.container_image)
        }
        try:
            client.create_model(
                ModelName=name,
                ExecutionRoleArn=role,
                Tags=tags,
                PrimaryContainer={"Image": image, "Environment": container_environment(target)},
            )
            created.append("model")
            client.create_endpoint_config(EndpointConfigName=name, ProductionVariants=[variant], Tags=tags)
            created.append("endpoint_config")
            client.create_endpoint(EndpointName=name, EndpointConfigName=name, Tags=tags)
            created.append("endpoint")
        except Exception as e:
            # Airflow skips the teardown of a failed setup: remove what this call created, now.
            self._delete(client, handle, created)
            raise DeployError(
                f"create {['model', 'endpoint_config', 'endpoint'][len(created)]} failed for {name}: "
                f"{e}; removed {created or 'nothing'}"
            ) from e
        log.info("created SageMaker endpoint %s (%s) in %s", name, target.instance_type, region)
        return handle

    def wait_ready(self, handle: dict[str, Any], timeout_s: float) -> None:
        from botocore.exceptions import WaiterError

        client = self._client(handle["region"])
        delay = 15 if timeout_s >= 300 else 1
        try:
            client.get_waiter("endpoint_in_service").wait(
                EndpointName=handle["endpoint_name"],
                WaiterConfig={"Delay": delay, "MaxAttempts": max(1, int(timeout_s // delay))},
            )
        except WaiterError as e:
            desc = client.describe_endpoint(EndpointName=handle["endpoint_name"])
            reason = desc.get("FailureReason") or f"status {desc.get('EndpointStatus')} after {timeout_s:.0f}s"
            raise DeployError(f"endpoint {handle['endpoint_name']} not InService: {reason}") from e

    def status(self, handle: Handle) -> Readiness:
        """One look at the endpoint, for a waiting task that gives its worker slot back between
        looks: InService is ready; Failed, OutOfService and Deleting are failed (with the
        FailureReason); anything else (Creating, Updating, SystemUpdating) is pending."""
        desc = self._client(handle["region"]).describe_endpoint(EndpointName=handle["endpoint_name"])
        status = desc["EndpointStatus"]
        if status == "InService":
            return Readiness("ready")
        if status in ("Failed", "OutOfService", "Deleting"):
            return Readiness(
                "failed",
                f"endpoint {handle['endpoint_name']} not InService: {desc.get('FailureReason') or 'status ' + status}",
            )
        return Readiness("pending", f"status {status}")

    def live_endpoints(self, region: str, instance_type: str) -> list[str]:
        """llmbench's endpoints of this instance type that exist now (any status but deleted):
        what counts against the config's instance_quota."""
        self._client(region)  # sets up the default session if none was given
        return [
            r["name"]
            for r in find_managed(self.session, region, self.endpoint_url, kinds=("endpoint",))
            if r["tags"].get(TAG_INSTANCE) == instance_type
        ]

    def endpoint(self, handle: dict[str, Any]) -> Endpoint:
        region = handle["region"]
        if self.session is None:
            self._client(region)
        return Endpoint(
            url=runtime_url(region, handle["endpoint_name"], handle.get("runtime_url")),
            headers=sagemaker_headers(),
            wire="sagemaker",
            signer=SigV4Signer(self.session.get_credentials(), region, SIGNING_SERVICE),
            keep_alive=True,
            metrics_note=NO_SERVER_PATHS,
        )

    def engine_version(self, handle: dict[str, Any]) -> EngineVersion:
        return EngineVersion(None, NO_SERVER_PATHS)

    def _delete(self, client, handle: dict[str, Any], what: list[str]) -> list[str]:
        """Delete the named resources (endpoint first), each tolerant of 'already gone'."""
        deleted: list[str] = []
        calls = {
            "endpoint": lambda: client.delete_endpoint(EndpointName=handle["endpoint_name"]),
            "endpoint_config": lambda: client.delete_endpoint_config(EndpointConfigName=handle["endpoint_config_name"]),
            "model": lambda: client.delete_model(ModelName=handle["model_name"]),
        }
        errors = []
        for kind in ("endpoint", "endpoint_config", "model"):
            if kind not in what:
                continue
            try:
                calls[kind]()
                deleted.append(kind)
                if kind == "endpoint":
                    client.get_waiter("endpoint_deleted").wait(
                        EndpointName=handle["endpoint_name"], WaiterConfig={"Delay": 5, "MaxAttempts": 360}
                    )
            except Exception as e:  # noqa: BLE001 (each delete is tried, whatever the others do)
                if not _gone(e):
                    errors.append(f"delete {kind}: {e}")
        if errors:
            raise RuntimeError(f"teardown of {handle['endpoint_name']} incomplete: " + "; ".join(errors))
        return deleted

    def teardown(self, handle: Handle) -> Teardown:
        client = self._client(handle["region"])
        attempts = 0
        while True:  # one retry on a transient API error; "already gone" is never an error
            attempts += 1
            try:
                self._delete(client, handle, ["endpoint", "endpoint_config", "model"])
                break
            except RuntimeError:
                if attempts >= 2:
                    raise
                time.sleep(5)
        return torn_down(handle["deployed_at"])

    def janitor(self, region: str, now: datetime | None = None) -> list[dict[str, Any]]:
        self._client(region)  # sets up the default session if none was given
        return janitor(self.session, region, now=now, endpoint_url=self.endpoint_url)


def find_managed(
    session: Any,
    region: str,
    endpoint_url: str | None = None,
    kinds: tuple[str, ...] = ("endpoint", "endpoint_config", "model"),
) -> list[dict[str, Any]]:
    """Every endpoint, endpoint config and model tagged managed-by=llmbench, with its tags."""
    client = session.client("sagemaker", region_name=region, endpoint_url=endpoint_url)
    found = []
    for kind, pager, key, name_key, arn_key in (
        ("endpoint", "list_endpoints", "Endpoints", "EndpointName", "EndpointArn"),
        ("endpoint_config", "list_endpoint_configs", "EndpointConfigs", "EndpointConfigName", "EndpointConfigArn"),
        ("model", "list_models", "Models", "ModelName", "ModelArn"),
    ):
        if kind not in kinds:
            continue
        for page in client.get_paginator(pager).paginate():
            for item in page[key]:
                tags = {t["Key"]: t["Value"] for t in client.list_tags(ResourceArn=item[arn_key]).get("Tags", [])}
                if tags.get(MANAGED_BY[0]) == MANAGED_BY[1]:
                    found.append({"kind": kind, "name": item[name_key], "tags": tags})
    return found


def janitor(
    session: Any, region: str, now: datetime | None = None, endpoint_url: str | None = None
) -> list[dict[str, Any]]:
    """Delete every llmbench-tagged endpoint, endpoint config and model whose expiry has passed.
    Safe to run at any time: unexpired resources and resources of other owners are never touched."""
    now = now or datetime.now(UTC)
    backend = SageMakerBackend(session, endpoint_url=endpoint_url)
    client = backend._client(region)
    removed = []
    for res in find_managed(session, region, endpoint_url):
        expires = res["tags"].get(TAG_EXPIRES)
        if not expires or datetime.fromisoformat(expires) > now:
            continue
        handle = {"endpoint_name": res["name"], "endpoint_config_name": res["name"], "model_name": res["name"]}
        backend._delete(client, handle, [res["kind"]])
        log.info(
            "janitor: deleted expired %s %s (run %s, expired %s)",
            res["kind"],
            res["name"],
            res["tags"].get(TAG_RUN_KEY),
            expires,
        )
        removed.append(res)
    return removed
