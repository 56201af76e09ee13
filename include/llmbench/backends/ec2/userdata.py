"""What an EC2 instance runs at first boot (user_data): the expiry guard, the ECR login when the
image lives there, and the `docker run` that serves the target (serve_command: vLLM on GPUs, or a
Neuron container on Inferentia/Trainium with its devices, neuron_devices). Every word that comes
from a config is shell-quoted."""

from __future__ import annotations

import json
import math
import re
import shlex

from llmbench.backends.base import DeployError
from llmbench.backends.ec2.models import Ec2Target
from llmbench.schemas.targets import NeuronServing, ResolvedTarget, VllmServing

CONTAINER_PORT = 8000  # where vLLM listens inside the container (its default)
CONTAINER_NAME = "llmbench-server"
HF_CACHE_DIR = "/var/lib/llmbench/hf-cache"  # on the root volume: weights survive a container restart
USER_DATA_LOG = "/var/log/llmbench-user-data.log"
# NeuronCores per Neuron device (what one /dev/neuronN exposes to the container): Inferentia2 and
# Trainium1 have 2; Trainium2 has 8 physical, 4 logical at the default logical-core size of 2.
NEURON_CORES_PER_DEVICE = {"inf2": 2, "trn1": 2, "trn1n": 2, "trn2": 4}
_ECR_HOST = re.compile(r"^(\d{12})\.dkr\.ecr\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$")


def neuron_devices(instance_type: str, tensor_parallel_size: int) -> int:
    """How many /dev/neuronN a tensor-parallel degree needs on this instance family."""
    family = instance_type.split(".", 1)[0]
    return math.ceil(tensor_parallel_size / NEURON_CORES_PER_DEVICE.get(family, 2))


def serve_command(target: ResolvedTarget, image: str, host_port: int) -> list[str]:
    """The `docker run` argv that serves the target (unquoted; user_data quotes each word)."""
    s = target.serving
    hf_id = target.hf_id or target.model
    common = ["-p", f"{host_port}:{CONTAINER_PORT}", "-v", f"{HF_CACHE_DIR}:/root/.cache/huggingface"]
    if not isinstance(s, VllmServing | NeuronServing):
        raise DeployError(f"serving.kind {s.kind!r} does not run on EC2 (vllm or neuron)")
    env = [w for k, v in sorted(s.extra_env.items()) for w in ("-e", f"{k}={v}")]
    if isinstance(s, VllmServing):
        argv = ["docker", "run", "-d", "--name", CONTAINER_NAME, "--gpus", "all", "--ipc=host", *common, *env, image]
        argv += ["--model", hf_id, "--served-model-name", target.model]
        if target.model_revision:  # the revision targets.model_revision records
            argv += ["--revision", target.model_revision]
        argv += ["--tensor-parallel-size", str(s.tensor_parallel_size), "--dtype", s.dtype]
        argv += ["--max-model-len", str(s.max_model_len), "--max-num-seqs", str(s.max_num_seqs)]
        argv += ["--gpu-memory-utilization", str(s.gpu_memory_utilization)]
        if s.quantization:
            argv += ["--quantization", s.quantization]
        if s.enable_prefix_caching:
            argv.append("--enable-prefix-caching")
        if s.enable_chunked_prefill:
            argv.append("--enable-chunked-prefill")
        if s.speculative_config:
            argv += ["--speculative-config", json.dumps(s.speculative_config, separators=(",", ":"))]
        return argv + list(s.extra_args)
    devices = [w for i in range(neuron_devices(target.instance_type, s.tensor_parallel_size))
               for w in ("--device", f"/dev/neuron{i}")]  # fmt: skip
    # The Neuron DLC's default entrypoint is not the server: name `vllm serve` explicitly.
    argv = ["docker", "run", "-d", "--name", CONTAINER_NAME, *devices, *common, *env, "--entrypoint", "vllm"]
    argv += [image, "serve", "--model", hf_id, "--served-model-name", target.model]
    argv += ["--tensor-parallel-size", str(s.tensor_parallel_size), "--port", str(CONTAINER_PORT)]
    argv += ["--max-model-len", str(s.max_model_len), "--max-num-seqs", str(s.max_num_seqs)]
    return argv + list(s.extra_args)


def user_data(target: ResolvedTarget, expiry_minutes: int | None = None) -> str:
    """The bash script the instance runs at first boot: schedule the expiry guard, log in to ECR
    if the image lives there, start the serving container. Every word that comes from a config is
    shell-quoted (shlex.quote), so no value can run a command of its own."""
    backend = target_settings(target)
    settings = backend.settings
    if expiry_minutes is None:
        expiry_minutes = math.ceil(settings.expiry_hours * 60)
    image = backend.container.image_uri(settings.region, settings.account_id or "")  # as plan resolved it
    lines = [
        "#!/bin/bash",
        "# llmbench (llmbench.backends.ec2.userdata.user_data): serve one model, then power off at expiry.",
        "set -euo pipefail",
        f"exec >>{USER_DATA_LOG} 2>&1",
        # First, before anything that can fail: the instance powers off at expiry, and
        # InstanceInitiatedShutdownBehavior=terminate turns that into a termination.
        f"shutdown -h +{int(expiry_minutes)}",
        f"mkdir -p {HF_CACHE_DIR}",
    ]
    registry = image.split("/", 1)[0]
    ecr = _ECR_HOST.match(registry)
    if ecr:  # DLC images: pulling needs a token (the instance profile needs ecr:GetAuthorizationToken)
        lines.append(
            f"aws ecr get-login-password --region {shlex.quote(ecr.group(2))} "
            f"| docker login --username AWS --password-stdin {shlex.quote(registry)}"
        )
    lines.append(shlex.join(serve_command(target, image, settings.server_port)))
    return "\n".join(lines) + "\n"


def target_settings(target: ResolvedTarget) -> Ec2Target:
    if not isinstance(target.backend, Ec2Target):
        raise DeployError(f"target {target.target_id} is not an ec2 target ({target.backend.kind})")
    return target.backend
