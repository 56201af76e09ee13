"""EC2 instances we launch, serve from, and terminate: vLLM (or a Neuron container) started with
docker by the instance's user data on a Deep Learning AMI, reached over the OpenAI wire.

The library takes a boto3 Session (the DAG builds it from an Airflow AWS connection through the
amazon provider's EC2Hook); nothing here imports Airflow. Every resource this backend creates (the
instance, its root volume, a security group it made) carries managed-by=llmbench, the run key,
the target id and an expiry time, so the janitor can find what a killed worker left behind. The
instance also guards itself: its user data schedules a power-off at expiry, and a power-off
terminates it (InstanceInitiatedShutdownBehavior), so it outlives its expiry by at most its boot
time even when every janitor fails.
"""

from __future__ import annotations

import hashlib
import logging
import re
import socket
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

from llmbench.backends import servermetrics
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
    poll_until_ready,
    torn_down,
)
from llmbench.backends.ec2.userdata import target_settings as _settings
from llmbench.backends.ec2.userdata import user_data
from llmbench.schemas.targets import ResolvedTarget

log = logging.getLogger("llmbench")

LIVE_STATES = ["pending", "running"]  # what counts against an instance quota
NOT_TERMINATED = ["pending", "running", "stopping", "stopped"]  # what the janitor may still terminate


# ---- helpers ----------------------------------------------------------------------------------


def resource_name(run_key: str, target_id: str) -> str:
    """A security group / Name tag unique per run key and target: letters, digits and dashes; a
    hash of the full key keeps truncated names distinct."""
    digest = hashlib.sha256(f"{run_key}\0{target_id}".encode()).hexdigest()[:8]
    base = re.sub(r"[^a-zA-Z0-9]+", "-", f"llmb-{target_id}-{run_key}").strip("-")
    return f"{base[:100].rstrip('-')}-{digest}"


def _tags(target: ResolvedTarget, expires_at: datetime, name: str) -> list[dict[str, str]]:
    return [
        {"Key": MANAGED_BY[0], "Value": MANAGED_BY[1]},
        {"Key": TAG_RUN_KEY, "Value": target.run_key[:256]},
        {"Key": TAG_TARGET, "Value": target.target_id[:256]},
        {"Key": TAG_EXPIRES, "Value": expires_at.isoformat(timespec="seconds")},
        {"Key": TAG_INSTANCE, "Value": target.instance_type},
        {"Key": "Name", "Value": name},
    ]


def _code(err: Exception) -> str:
    return str(getattr(err, "response", {}).get("Error", {}).get("Code", ""))


def _gone(err: Exception) -> bool:
    """An EC2 error that means the resource does not exist (already deleted)."""
    return _code(err) in ("InvalidInstanceID.NotFound", "InvalidGroup.NotFound", "InvalidGroupId.NotFound")


def runner_address(host: str, port: int = 443) -> str:
    """This machine's address on the route toward `host`: a UDP socket's connect() makes the kernel
    pick the source address without sending a packet. It is the address an instance sees when
    nothing translates it (the runner in the same VPC, or with its public address on its own
    interface); behind NAT the instance sees the NAT's address instead, and runner_cidr must say so."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((host, port))
        return str(s.getsockname()[0])


def _tag_dict(tags: list[dict[str, str]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in tags or []}


def _instances(client: Any, filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for page in client.get_paginator("describe_instances").paginate(Filters=filters):
        for reservation in page["Reservations"]:
            out.extend(reservation["Instances"])
    return out


def _ours(extra: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    return [{"Name": f"tag:{MANAGED_BY[0]}", "Values": [MANAGED_BY[1]]}, *(extra or [])]


def _expired(tags: dict[str, str], now: datetime) -> bool:
    expires = tags.get(TAG_EXPIRES)
    return bool(expires) and datetime.fromisoformat(str(expires)) <= now


def _group_users(ec2: Any, group_id: str) -> list[str]:
    """Instances not yet terminated that use this security group."""
    filters = [
        {"Name": "instance.group-id", "Values": [group_id]},
        {"Name": "instance-state-name", "Values": [*NOT_TERMINATED, "shutting-down"]},
    ]
    return [i["InstanceId"] for i in _instances(ec2, filters)]


def _fill(template: str, instance: dict[str, Any], port: int) -> str:
    values = {
        "public_ip": instance.get("PublicIpAddress") or "",
        "private_ip": instance.get("PrivateIpAddress") or "",
        "public_dns": instance.get("PublicDnsName") or "",
        "port": port,
    }
    missing = sorted(k for k, v in values.items() if v == "" and "{" + k + "}" in template)
    if missing:
        raise LookupError(f"instance {instance['InstanceId']} has no {', '.join(missing)} for server_url {template}")
    return template.format(**values).rstrip("/")


# ---- the backend ------------------------------------------------------------------------------


class Ec2Backend:
    kind = "ec2"
    cost_basis: Literal["per_hour", "per_token"] = "per_hour"  # instance $/hour x instance-seconds
    creates_endpoint = True
    TERMINATE_WAIT_S = 600  # a GPU instance takes a minute or two to terminate
    SG_DELETE_WAIT_S = 120  # the instance's network interface lingers a little after termination

    def __init__(self, session: Any = None, endpoint_url: str | None = None, network: dict[str, str] | None = None):
        self.session = session  # boto3.Session; default: the standard credential chain
        self.endpoint_url = endpoint_url  # control-plane override for ec2 and ssm (VPC endpoints, moto)
        self.network = dict(network or {})  # subnet_id / security_group_id from the connection extra

    def _client(self, service: str, region: str) -> Any:
        if self.session is None:
            import boto3

            self.session = boto3.Session(region_name=region)
        return self.session.client(service, region_name=region, endpoint_url=self.endpoint_url)

    # -- capacity / timeouts --

    def quota_busy(self, target: ResolvedTarget) -> str | None:
        """None while fewer than ec2.instance_quota[type] of our instances of this type are pending
        or running; else who holds the quota."""
        settings = _settings(target).settings
        quota = settings.instance_quota.get(target.instance_type)
        if not quota:
            return None
        live = self.live_instances(settings.region, target.instance_type)
        if len(live) < quota:
            return None
        return f"{len(live)} of {quota} {target.instance_type} instance(s) in use ({', '.join(live)})"

    def live_instances(self, region: str, instance_type: str) -> list[str]:
        client = self._client("ec2", region)
        filters = _ours(
            [
                {"Name": f"tag:{TAG_INSTANCE}", "Values": [instance_type]},
                {"Name": "instance-state-name", "Values": LIVE_STATES},
            ]
        )
        return [i["InstanceId"] for i in _instances(client, filters)]

    def ready_timeout_s(self, target: ResolvedTarget) -> float:
        return float(_settings(target).settings.ready_timeout_s)

    # -- deploy --

    def deploy(self, target: ResolvedTarget, work_dir: Path | None = None) -> Handle:
        backend = _settings(target)
        settings = backend.settings
        region = settings.region
        ec2 = self._client("ec2", region)
        name = resource_name(target.run_key, target.target_id)
        deployed_at = datetime.now(UTC)
        expires_at = deployed_at + timedelta(hours=settings.expiry_hours)
        tags = _tags(target, expires_at, name)
        script = user_data(target)  # before anything is created: a bad serving kind costs nothing
        handle: Handle = {
            "backend": self.kind,
            "region": region,
            "instance_id": None,
            "security_group_id": settings.security_group_id or self.network.get("security_group_id"),
            "created_security_group": False,
            "deployed_at": deployed_at.isoformat(),
            "expires_at": expires_at.isoformat(timespec="seconds"),
            "server_port": settings.server_port,
            "server_url": settings.server_url,
            "model": target.model,
            # What the user data runs (targets.container_image records it).
            "container_image": backend.container.image_uri(region, settings.account_id or ""),
        }
        step = "resolve AMI"
        try:
            parameter = backend.ami_ssm_parameter or settings.ami_ssm_parameter
            if not settings.ami_id and not parameter:
                raise DeployError("no AMI: set ec2.ami_id or ec2.ami_ssm_parameter")
            ami = settings.ami_id or self._client("ssm", region).get_parameter(Name=parameter)["Parameter"]["Value"]
            subnet = settings.subnet_id or self.network.get("subnet_id")
            if not handle["security_group_id"]:
                step = "find runner address"
                cidr = settings.runner_cidr or f"{runner_address(urlparse(ec2.meta.endpoint_url).hostname or '')}/32"
                step = "create security group"
                handle["security_group_id"] = self._create_security_group(ec2, name, subnet, tags, settings, cidr)
                handle["created_security_group"] = True
            step = "run instances"
            launch = self._launch_request(ec2, target, ami, script, handle, name, deployed_at, tags, subnet)
            handle["instance_id"] = ec2.run_instances(**launch)["Instances"][0]["InstanceId"]
        except Exception as e:
            # Airflow skips the teardown of a failed setup: remove what this call created, now.
            removed = self._remove(ec2, handle)
            raise DeployError(
                f"ec2 deploy of {target.target_id} failed at {step}: {e}; removed {removed or 'nothing'}"
            ) from e
        log.info(
            "launched EC2 instance %s (%s) in %s for %s", handle["instance_id"], target.instance_type, region, name
        )
        return handle

    def _launch_request(
        self,
        ec2: Any,
        target: ResolvedTarget,
        ami: str,
        script: str,
        handle: Handle,
        name: str,
        deployed_at: datetime,
        tags: list[dict[str, str]],
        subnet: str | None,
    ) -> dict[str, Any]:
        """The RunInstances request: one instance of the target's type running `script`, which
        terminates when it powers off, with a gp3 root volume and the tags on both."""
        settings = _settings(target).settings
        launch: dict[str, Any] = {
            "ImageId": ami,
            "InstanceType": target.instance_type,
            "MinCount": 1,
            "MaxCount": 1,
            "UserData": script,
            "InstanceInitiatedShutdownBehavior": "terminate",  # the user data's expiry guard
            "SecurityGroupIds": [handle["security_group_id"]],
            # Idempotent: botocore's own retry of a launch whose response was lost starts no second instance.
            "ClientToken": hashlib.sha256(f"{name}\0{deployed_at.isoformat()}".encode()).hexdigest()[:64],
            "BlockDeviceMappings": [
                {
                    "DeviceName": self._root_device(ec2, ami),
                    "Ebs": {
                        "VolumeSize": settings.root_volume_gb,
                        "VolumeType": "gp3",
                        "DeleteOnTermination": True,
                    },
                }
            ],
            "TagSpecifications": [
                {"ResourceType": "instance", "Tags": tags},
                {"ResourceType": "volume", "Tags": tags},
            ],
        }
        if subnet:
            launch["SubnetId"] = subnet
        if settings.key_name:
            launch["KeyName"] = settings.key_name
        if settings.iam_instance_profile:
            key = "Arn" if settings.iam_instance_profile.startswith("arn:") else "Name"
            launch["IamInstanceProfile"] = {key: settings.iam_instance_profile}
        return launch

    @staticmethod
    def _root_device(ec2: Any, ami: str) -> str:
        """The AMI's root device name (Ubuntu DLAMIs: /dev/sda1), so the size applies to the root volume."""
        try:
            images = ec2.describe_images(ImageIds=[ami])["Images"]
        except Exception as e:  # noqa: BLE001 (run_instances reports a bad AMI with its own error)
            log.debug("describe_images %s: %s", ami, e)
            images = []
        return str((images[0].get("RootDeviceName") if images else None) or "/dev/sda1")

    def _create_security_group(
        self, ec2: Any, name: str, subnet: str | None, tags: list[dict[str, str]], settings: Any, cidr: str
    ) -> str:
        create: dict[str, Any] = {
            "GroupName": name,
            "Description": "llmbench: the benchmark runner reaches its model server",
            "TagSpecifications": [{"ResourceType": "security-group", "Tags": tags}],
        }
        if subnet:  # a group belongs to a VPC: the subnet's (else the default VPC)
            create["VpcId"] = ec2.describe_subnets(SubnetIds=[subnet])["Subnets"][0]["VpcId"]
        try:
            group_id = str(ec2.create_security_group(**create)["GroupId"])
        except Exception as e:
            if _code(e) != "InvalidGroup.Duplicate" or not self._reap_leftover_group(ec2, name, tags):
                raise
            group_id = str(ec2.create_security_group(**create)["GroupId"])
        try:
            ec2.authorize_security_group_ingress(
                GroupId=group_id,
                IpPermissions=[
                    {
                        "IpProtocol": "tcp",
                        "FromPort": settings.server_port,
                        "ToPort": settings.server_port,
                        "IpRanges": [{"CidrIp": cidr, "Description": "llmbench runner"}],
                    }
                ],
            )
        except Exception:
            ec2.delete_security_group(GroupId=group_id)
            raise
        return group_id

    def _reap_leftover_group(self, ec2: Any, name: str, tags: list[dict[str, str]]) -> bool:
        """A group of this name exists: an earlier attempt of the same run key and target died
        between creating it and writing its handle. Delete it if it is ours (same tags) and no
        instance uses it; True if it was."""
        want = {t["Key"]: t["Value"] for t in tags if t["Key"] in (MANAGED_BY[0], TAG_RUN_KEY, TAG_TARGET)}
        groups = ec2.describe_security_groups(Filters=[{"Name": "group-name", "Values": [name]}])["SecurityGroups"]
        for group in groups:
            have = _tag_dict(group.get("Tags"))
            if any(have.get(k) != v for k, v in want.items()) or _group_users(ec2, group["GroupId"]):
                return False
            log.warning("deleting security group %s left by an earlier attempt", group["GroupId"])
            self._delete_security_group(ec2, group["GroupId"], wait_s=0)
        return bool(groups)

    # -- readiness --

    def _describe(self, ec2: Any, instance_id: str) -> dict[str, Any] | None:
        try:
            reservations = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
        except Exception as e:
            if _gone(e):
                return None
            raise
        return reservations[0]["Instances"][0] if reservations else None

    def server_url(self, handle: Handle, instance: dict[str, Any] | None = None) -> str:
        """The handle's server_url template filled from the instance (describes it if not given)."""
        if instance is None:
            instance = self._describe(self._client("ec2", handle["region"]), handle["instance_id"])
            if instance is None:
                raise DeployError(f"instance {handle['instance_id']} does not exist")
        return _fill(handle["server_url"], instance, handle["server_port"])

    def status(self, handle: Handle, http_timeout_s: float = 5.0) -> Readiness:
        """One look: the instance's state, then (running) GET {server_url}/models."""
        instance_id = handle["instance_id"]
        instance = self._describe(self._client("ec2", handle["region"]), instance_id)
        if instance is None:
            return Readiness("failed", f"instance {instance_id} does not exist")
        state = instance["State"]["Name"]
        if state == "pending":
            return Readiness("pending", f"instance {instance_id} pending")
        if state != "running":  # shutting-down, terminated, stopping, stopped: it will not serve
            reason = (instance.get("StateReason") or {}).get("Message") or instance.get("StateTransitionReason")
            return Readiness("failed", f"instance {instance_id} {state}: {reason or 'no reason given'}")
        try:
            url = self.server_url(handle, instance)
        except LookupError as e:  # e.g. {public_ip} in a subnet that gives none: it will never have one
            return Readiness("failed", str(e))
        try:
            # http_timeout_s in all, however slowly it answers (a wall-clock deadline)
            servermetrics.fetch(url + "/models", timeout_s=http_timeout_s)
            return Readiness("ready")
        except urllib.error.HTTPError as e:
            return Readiness("pending", f"{url}/models answered HTTP {e.code} (the server is still loading)")
        except OSError as e:  # refused, timed out, unreachable: the container is still starting
            return Readiness("pending", f"instance running; {url}/models: {e}")

    def wait_ready(self, handle: Handle, timeout_s: float) -> None:
        poll_until_ready(
            lambda remaining_s: self.status(handle, http_timeout_s=max(0.1, min(5.0, remaining_s))),
            timeout_s,
            10.0 if timeout_s >= 300 else 1.0,
            lambda last: f"instance {handle['instance_id']} not serving within {timeout_s:g}s: {last}",
        )

    def endpoint(self, handle: Handle) -> Endpoint:
        # The OpenAI wire, as vLLM serves it; a fresh connection per request, as for openai targets.
        url = self.server_url(handle)
        return Endpoint(
            url=url + "/chat/completions",
            model=handle["model"],
            wire="sse",
            keep_alive=True,  # vLLM keeps connections; a fresh one per request costs the closed loop's waves
            metrics_url=servermetrics.server_root(url) + "/metrics",  # vLLM's Prometheus page
            tokenize_api="vllm",  # the vLLM and Neuron containers both serve vLLM's API
        )

    def engine_version(self, handle: Handle) -> EngineVersion:
        """vLLM's GET /version (the vLLM and Neuron containers both serve vLLM's API)."""
        try:
            root = servermetrics.server_root(self.server_url(handle))
        except Exception as e:  # noqa: BLE001 (best effort: an instance gone or unaddressable)
            return EngineVersion(None, f"no server address: {e}")
        return EngineVersion(*servermetrics.vllm_version(root))

    # -- teardown / janitor --

    def _terminate(self, ec2: Any, instance_ids: list[str]) -> list[str]:
        """Terminate and wait until terminated; the ones that existed."""
        existing = []
        for instance_id in instance_ids:
            try:
                ec2.terminate_instances(InstanceIds=[instance_id])
                existing.append(instance_id)
            except Exception as e:
                if not _gone(e):
                    raise
        if existing:
            delay_s = 5
            ec2.get_waiter("instance_terminated").wait(
                InstanceIds=existing,
                WaiterConfig={"Delay": delay_s, "MaxAttempts": self.TERMINATE_WAIT_S // delay_s},
            )
        return existing

    def _delete_security_group(self, ec2: Any, group_id: str, wait_s: float | None = None) -> bool:
        """Delete; True if it existed. DependencyViolation (a network interface not yet released
        after termination) is retried for wait_s (default SG_DELETE_WAIT_S), then raised."""
        deadline = time.monotonic() + (self.SG_DELETE_WAIT_S if wait_s is None else wait_s)
        while True:
            try:
                ec2.delete_security_group(GroupId=group_id)
                return True
            except Exception as e:
                if _gone(e):
                    return False
                if _code(e) != "DependencyViolation" or time.monotonic() > deadline:
                    raise
                time.sleep(5)

    def _remove(self, ec2: Any, handle: Handle) -> list[str]:
        """Terminate the handle's instance and delete the security group if deploy created it; each
        tolerant of 'already gone'. What existed and was removed."""
        removed = []
        if handle.get("instance_id"):
            removed += [f"instance {i}" for i in self._terminate(ec2, [handle["instance_id"]])]
        if handle.get("created_security_group") and handle.get("security_group_id"):
            if self._delete_security_group(ec2, handle["security_group_id"]):
                removed.append(f"security group {handle['security_group_id']}")
        return removed

    def teardown(self, handle: Handle) -> Teardown:
        ec2 = self._client("ec2", handle["region"])
        attempts = 0
        while True:  # one retry on a transient API error; "already gone" is never an error
            attempts += 1
            try:
                removed = self._remove(ec2, handle)
                break
            except Exception as e:
                if attempts >= 2:
                    raise RuntimeError(f"teardown of {handle.get('instance_id')} incomplete: {e}") from e
                log.warning("teardown of %s: %s; trying once more", handle.get("instance_id"), e)
                time.sleep(5)
        log.info("torn down %s", ", ".join(removed) or f"{handle.get('instance_id')} (already gone)")
        return torn_down(handle["deployed_at"])

    def janitor(self, region: str, now: datetime | None = None) -> list[dict[str, Any]]:
        self._client("ec2", region)  # sets up the default session if none was given
        return janitor(self.session, region, now=now, endpoint_url=self.endpoint_url)


def find_managed(session: Any, region: str, endpoint_url: str | None = None) -> list[dict[str, Any]]:
    """Every instance not yet terminated and every security group tagged managed-by=llmbench."""
    ec2 = session.client("ec2", region_name=region, endpoint_url=endpoint_url)
    found = [
        {"kind": "instance", "id": i["InstanceId"], "state": i["State"]["Name"], "tags": _tag_dict(i.get("Tags"))}
        for i in _instances(ec2, _ours([{"Name": "instance-state-name", "Values": [*NOT_TERMINATED, "shutting-down"]}]))
    ]
    for page in ec2.get_paginator("describe_security_groups").paginate(Filters=_ours()):
        found += [
            {"kind": "security_group", "id": g["GroupId"], "tags": _tag_dict(g.get("Tags"))}
            for g in page["SecurityGroups"]
        ]
    return found


def janitor(
    session: Any, region: str, now: datetime | None = None, endpoint_url: str | None = None
) -> list[dict[str, Any]]:
    """Terminate every llmbench-tagged instance whose expiry has passed, then delete every expired
    llmbench-tagged security group no instance uses any more. Safe to run at any time: unexpired
    resources and resources without our tag are never touched. Returns what was removed
    ({kind, id, name, tags}; name: the Name tag, as the janitor DAG reports it)."""
    now = now or datetime.now(UTC)
    backend = Ec2Backend(session, endpoint_url=endpoint_url)
    ec2 = backend._client("ec2", region)
    removed: list[dict[str, Any]] = []
    expired = [
        i
        for i in _instances(ec2, _ours([{"Name": "instance-state-name", "Values": NOT_TERMINATED}]))
        if _expired(_tag_dict(i.get("Tags")), now)
    ]
    if expired:
        backend._terminate(ec2, [i["InstanceId"] for i in expired])
    for i in expired:
        tags = _tag_dict(i.get("Tags"))
        log.info("janitor: terminated expired instance %s (run %s)", i["InstanceId"], tags.get(TAG_RUN_KEY))
        removed.append(
            {"kind": "instance", "id": i["InstanceId"], "name": tags.get("Name", i["InstanceId"]), "tags": tags}
        )
    for page in ec2.get_paginator("describe_security_groups").paginate(Filters=_ours()):
        for group in page["SecurityGroups"]:
            tags = _tag_dict(group.get("Tags"))
            if not _expired(tags, now):
                continue
            if _group_users(ec2, group["GroupId"]):  # an unexpired (or untagged) instance uses it
                continue
            try:  # one try: the next run tries again (a network interface may linger a while)
                deleted = backend._delete_security_group(ec2, group["GroupId"], wait_s=0)
            except Exception as e:  # noqa: BLE001 (still in use)
                log.warning("janitor: security group %s not deleted yet: %s", group["GroupId"], e)
                continue
            if deleted:
                log.info("janitor: deleted expired security group %s (run %s)", group["GroupId"], tags.get(TAG_RUN_KEY))
                removed.append(
                    {"kind": "security_group", "id": group["GroupId"], "name": group.get("GroupName"), "tags": tags}
                )
    return removed
