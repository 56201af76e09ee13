"""The EC2 user data: the container command vLLM / Neuron get, the expiry guard, and quoting (no
config value can run a command of its own). Checked by parsing the script as bash would."""

import shlex
import subprocess

import pytest

from llmbench.backends.base import DeployError
from llmbench.backends.ec2.userdata import neuron_devices, user_data
from llmbench.schemas.targets import ContainerImage, LmiServing, NeuronServing, VllmServing
from tests.integration.ec2_fixtures import ec2_target


def docker_run(script: str) -> list[str]:
    """The words of the script's `docker run` line, as bash splits them."""
    (line,) = [ln for ln in script.splitlines() if ln.startswith("docker run")]
    return shlex.split(line)


def value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_vllm_command_carries_every_knob():
    serving = VllmServing(
        kind="vllm",
        name="eagle",
        tensor_parallel_size=2,
        dtype="bfloat16",
        quantization="fp8",
        max_model_len=8192,
        max_num_seqs=32,
        gpu_memory_utilization=0.85,
        enable_prefix_caching=True,
        enable_chunked_prefill=True,
        speculative_config={"method": "eagle3", "model": "x/y", "num_speculative_tokens": 3},
        extra_args=["--enable-auto-tool-choice", "--tool-call-parser", "hermes"],
        extra_env={"VLLM_USE_V1": "1"},
    )
    argv = docker_run(user_data(ec2_target(serving=serving, server_port=8080)))
    assert argv[:4] == ["docker", "run", "-d", "--name"]
    assert "--gpus" in argv and value(argv, "--gpus") == "all" and "--ipc=host" in argv
    assert value(argv, "-p") == "8080:8000" and value(argv, "-e") == "VLLM_USE_V1=1"
    image_at = argv.index("vllm/vllm-openai:v0.15.1")
    assert "--model" not in argv[:image_at]  # docker options before the image, server flags after
    server = argv[image_at + 1 :]
    assert value(server, "--model") == "Qwen/Qwen3-8B" and value(server, "--served-model-name") == "qwen3-8b"
    assert value(server, "--tensor-parallel-size") == "2" and value(server, "--dtype") == "bfloat16"
    assert value(server, "--max-model-len") == "8192" and value(server, "--max-num-seqs") == "32"
    assert value(server, "--gpu-memory-utilization") == "0.85" and value(server, "--quantization") == "fp8"
    assert "--enable-prefix-caching" in server and "--enable-chunked-prefill" in server
    assert '"method":"eagle3"' in value(server, "--speculative-config")
    assert server[-3:] == ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]


def test_vllm_defaults_leave_optional_flags_out():
    argv = docker_run(user_data(ec2_target()))
    for flag in (
        "--quantization",
        "--enable-prefix-caching",
        "--enable-chunked-prefill",
        "--speculative-config",
        "-e",
        "--device",
    ):
        assert flag not in argv
    assert value(argv, "-p") == "8000:8000"


@pytest.mark.parametrize(
    ("instance_type", "tp", "devices"),
    [("inf2.xlarge", 2, 1), ("inf2.48xlarge", 24, 12), ("trn1.32xlarge", 3, 2), ("trn2.48xlarge", 8, 2)],
)
def test_neuron_command_maps_one_device_per_two_cores(instance_type, tp, devices):
    assert neuron_devices(instance_type, tp) == devices
    serving = NeuronServing(
        kind="neuron",
        name="nx",
        tensor_parallel_size=tp,
        max_model_len=2048,
        max_num_seqs=4,
        extra_args=["--block-size", "32"],
    )
    image = ContainerImage(
        kind="neuron",
        image="763104351884.dkr.ecr.{region}.amazonaws.com/vllm-neuronx:0.9",
        cuda="none",
        gpu_archs=[],
        platform="ec2",
    )
    script = user_data(ec2_target(serving=serving, instance_type=instance_type, container=image))
    argv = docker_run(script)
    assert [value(argv[i:], "--device") for i, w in enumerate(argv) if w == "--device"] == [
        f"/dev/neuron{i}" for i in range(devices)
    ]
    assert "--gpus" not in argv and value(argv, "--entrypoint") == "vllm"
    server = argv[argv.index("763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm-neuronx:0.9") + 1 :]
    assert server[0] == "serve" and value(server, "--tensor-parallel-size") == str(tp)
    assert value(server, "--max-model-len") == "2048" and value(server, "--max-num-seqs") == "4"
    assert server[-2:] == ["--block-size", "32"]
    # An ECR image needs a login first, to that registry, in the image's region.
    login = [ln for ln in script.splitlines() if "docker login" in ln]
    assert (
        login and "--region us-east-1" in login[0] and login[0].endswith("763104351884.dkr.ecr.us-east-1.amazonaws.com")
    )
    assert script.index("docker login") < script.index("docker run")


def test_public_image_needs_no_registry_login():
    assert "docker login" not in user_data(ec2_target())


def test_expiry_guard_comes_first_and_matches_expiry():
    script = user_data(ec2_target(expiry_hours=1.5))
    lines = script.splitlines()
    assert lines[0] == "#!/bin/bash" and "set -euo pipefail" in lines
    guard = [ln for ln in lines if ln.startswith("shutdown ")]
    assert guard == ["shutdown -h +90"]
    assert lines.index(guard[0]) < next(i for i, ln in enumerate(lines) if ln.startswith("docker"))
    assert "shutdown -h +7" in user_data(ec2_target(), expiry_minutes=7)


HOSTILE = ["$(touch /tmp/pwned)", "`id`", "a; rm -rf /", "x' || true '", "line\nbreak", "--x=$HOME", "*"]


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_values_stay_single_words(hostile, tmp_path):
    """Every config value reaches docker as exactly the word it was, and bash -n accepts the
    script: no value can end a word, start a command or expand."""
    serving = VllmServing(
        kind="vllm",
        name="v",
        dtype=hostile,
        quantization=hostile,
        extra_args=[hostile, "--y"],
        extra_env={"K": hostile},
        speculative_config={"model": hostile},
    )
    t = ec2_target(serving=serving).model_copy(update={"hf_id": hostile, "model": hostile})
    script = user_data(t)
    (tmp_path / "ud.sh").write_text(script)
    assert subprocess.run(["bash", "-n", str(tmp_path / "ud.sh")], capture_output=True).returncode == 0
    argv = docker_run(script) if "\n" not in hostile else shlex.split(script[script.index("docker run") :])
    server = argv[argv.index("vllm/vllm-openai:v0.15.1") + 1 :]
    for flag in ("--model", "--served-model-name", "--dtype", "--quantization"):
        assert value(server, flag) == hostile
    assert server[-2:] == [hostile, "--y"] and value(argv, "-e") == f"K={hostile}"


def test_hostile_value_is_inert_when_bash_runs_it(tmp_path):
    """Run the script's docker line for real with a stub `docker` that records its argv: the
    substitution never runs."""
    marker = tmp_path / "pwned"
    t = ec2_target(serving=VllmServing(kind="vllm", name="v", dtype=f"$(touch {marker})"))
    (tmp_path / "bin").mkdir()
    stub = tmp_path / "bin" / "docker"
    stub.write_text('#!/bin/bash\nprintf "%s\\n" "$@" > "$ARGV_OUT"\n')
    stub.chmod(0o755)
    line = next(ln for ln in user_data(t).splitlines() if ln.startswith("docker run"))
    out = tmp_path / "argv"
    subprocess.run(
        ["bash", "-c", line], env={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "ARGV_OUT": str(out)}, check=True
    )
    assert not marker.exists()
    assert f"$(touch {marker})" in out.read_text().splitlines()


def test_image_region_placeholder_is_filled():
    image = ContainerImage(
        kind="vllm",
        image="123456789012.dkr.ecr.{region}.amazonaws.com/vllm:1",
        cuda="12.9",
        gpu_archs=["ada"],
        platform="ec2",
    )
    script = user_data(ec2_target(container=image, region="eu-west-1").model_copy())
    assert "123456789012.dkr.ecr.eu-west-1.amazonaws.com/vllm:1" in script and "{region}" not in script


def test_serving_that_does_not_run_on_ec2_is_refused():
    lmi = LmiServing(kind="lmi", name="lmi")
    with pytest.raises(DeployError, match="does not run on EC2"):
        user_data(ec2_target(serving=lmi))


def test_a_pinned_model_revision_is_what_vllm_loads():
    """targets.model_revision records only a revision the server was told to load."""
    from llmbench.backends.sagemaker.backend import container_environment
    from llmbench.planning.plan import _pinned_revision

    pinned = ec2_target().model_copy(update={"model_revision": "0a1b2c3"})
    server = docker_run(user_data(pinned))
    assert value(server, "--revision") == "0a1b2c3"
    assert "--revision" not in docker_run(user_data(ec2_target()))
    assert container_environment(pinned)["SM_VLLM_REVISION"] == "0a1b2c3"
    vllm, model = VllmServing(kind="vllm", name="v"), {"hf_id": "Qwen/Qwen3-8B", "hf_revision": "0a1b2c3"}
    assert _pinned_revision(vllm, "ec2", model) == _pinned_revision(vllm, "sagemaker", model) == "0a1b2c3"
    assert _pinned_revision(vllm, "ec2", {"hf_id": "Qwen/Qwen3-8B"}) is None  # the hub's default branch: unknown
    neuron = NeuronServing(kind="neuron", name="n")
    assert _pinned_revision(neuron, "ec2", model) is None  # not passed to the Neuron container: not claimed


def test_a_planned_neuron_target_runs_the_dlc_plan_resolved_for_its_region(tmp_path):
    """The Neuron DLC's URI comes from the same resolution as SageMaker's (the SDK's registry for
    the region); the user data runs that URI and logs in to that registry."""
    import yaml

    from llmbench import paths
    from llmbench.planning.plan import plan

    cfg = yaml.safe_load((paths.CONFIG_DIR / "aws-seed-001.yaml").read_text())
    cfg["ec2"]["region"] = "eu-west-3"
    cfg["targets"] = [dict(t, usd_per_hour=1.0) for t in cfg["targets"] if t["id"] == "ec2-inf2-neuron-bf16"]
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    (target,) = plan(str(tmp_path / "c.yaml"), "2026-11-30", runs_root=tmp_path / "runs").targets
    uri = target.backend.container.uri
    assert uri.startswith("763104351884.dkr.ecr.eu-west-3.amazonaws.com/pytorch-inference-vllm-neuronx:")
    script = user_data(target)
    assert uri in docker_run(script)
    (login,) = [ln for ln in script.splitlines() if "docker login" in ln]
    assert "--region eu-west-3" in login and login.endswith("763104351884.dkr.ecr.eu-west-3.amazonaws.com")
