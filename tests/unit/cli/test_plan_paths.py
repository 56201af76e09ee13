"""Serving paths in one plan: seed 001's six (Bedrock, SageMaker, EC2 g6 / g5g / inf2 / trn1),
each check's outcome, and the one-line refusals of the plan-time checks per backend."""

import copy

import pytest
import yaml

from llmbench import paths
from llmbench.cli.main import main
from llmbench.planning.config import ConfigError
from llmbench.planning.plan import plan, plan_checked

DATE = "2026-11-30"


@pytest.fixture(autouse=True)
def _no_price_cache(tmp_path, monkeypatch):
    # A refreshed AWS Pricing API cache under .llmbench/ would take precedence over the catalog.
    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path / "home"))


def _seed001() -> dict:
    return yaml.safe_load((paths.CONFIG_DIR / "aws-seed-001.yaml").read_text())


def _target(cfg: dict, target_id: str) -> dict:
    return next(t for t in cfg["targets"] if t["id"] == target_id)


def _write(tmp_path, cfg: dict) -> str:
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return str(p)


def test_seed_001_plans_six_paths_with_their_prices_and_warnings(tmp_path):
    run, checks = plan_checked("aws-seed-001", DATE, runs_root=tmp_path)
    by_id = {t.target_id: t for t in run.targets}
    assert {t: by_id[t].backend_kind for t in by_id} == {
        "bedrock-nova-micro": "bedrock",
        "sagemaker-g6-vllm-int4": "sagemaker",
        "ec2-g6-vllm-int4": "ec2",
        "ec2-g5g-vllm-fp16": "ec2",
        "ec2-inf2-neuron-bf16": "ec2",
        "ec2-trn1-neuron-bf16": "ec2",
    }
    assert run.backends == ["bedrock", "ec2", "sagemaker"]
    hourly = {t: by_id[t].price.usd_per_hour for t in by_id if by_id[t].price.basis == "per_hour"}
    assert hourly == {
        "sagemaker-g6-vllm-int4": 1.1267,
        "ec2-g6-vllm-int4": 0.8048,
        "ec2-g5g-vllm-fp16": 0.556,
        "ec2-inf2-neuron-bf16": 0.7582,
        "ec2-trn1-neuron-bf16": 1.3438,
    }
    nova = by_id["bedrock-nova-micro"]
    assert nova.price.basis == "per_token" and nova.region == "us-east-1"
    assert (nova.price.usd_per_m_input_tokens, nova.price.usd_per_m_output_tokens) == (0.035, 0.14)
    assert nova.estimated_usd == pytest.approx(98 * (435 * 0.035 + 87 * 0.14) / 1e6)  # 2 warm-up + 2 x 48
    assert by_id["ec2-g5g-vllm-fp16"].price.source == "config"  # us-east-1's figure, set on the target
    assert {t.region for t in run.targets if t.backend_kind != "bedrock"} == {"us-east-2"}
    assert all(t.estimated_usd and t.estimated_usd > 0 for t in run.targets)
    assert run.estimated_usd == pytest.approx(sum(t.estimated_usd for t in run.targets))

    # int4 is widened on the L4 (ada): a warning on both L4 targets, travelling on the target.
    for tid in ("sagemaker-g6-vllm-int4", "ec2-g6-vllm-int4"):
        assert any("int4 is not native on ada" in w for w in by_id[tid].warnings)
        assert "precision int4 native on ada: WIDENED (warning)" in checks[tid]
    assert not any("precision" in w for w in by_id["ec2-g5g-vllm-fp16"].warnings)  # fp16 is native on turing
    # Each EC2 target boots the catalog's AMI for its host CPU and driver: no AMI warning.
    amis = {tid: by_id[tid].backend.ami_ssm_parameter for tid in by_id if by_id[tid].backend_kind == "ec2"}
    assert "/arm64/" in amis["ec2-g5g-vllm-fp16"] and "nvidia" in amis["ec2-g5g-vllm-fp16"]
    assert "/x86_64/" in amis["ec2-g6-vllm-int4"] and "nvidia" in amis["ec2-g6-vllm-int4"]
    assert "neuron" in amis["ec2-inf2-neuron-bf16"] and "neuron" in amis["ec2-trn1-neuron-bf16"]
    assert not any("AMI" in w for t in run.targets for w in t.warnings)
    assert not by_id["ec2-g6-vllm-int4"].warnings[1:]  # only the precision warning
    assert set(run.warnings) == {w for t in run.targets for w in t.warnings}

    g5g = checks["ec2-g5g-vllm-fp16"]
    for line in (
        "instance g5g.2xlarge offered on ec2: ok",
        "image vllm-sm75-arm64 built for arm64: ok",
        "CUDA 12.4 >= 10.0: ok",
        "kernels for turing: ok",
        "precision fp16 native on turing: ok",
        "fits: 6.8 GB weights, 6.8 GB per GPU of 13.0 GB usable: ok",
        "price in us-east-2: $0.5560/h (config)",
    ):
        assert line in g5g
    assert "fits: 6.8 GB weights, 6.8 GB per NeuronCore of 14.4 GB usable: ok" in checks["ec2-inf2-neuron-bf16"]
    assert checks["bedrock-nova-micro"][-1].startswith("price in us-east-1: $0.035 / $0.14 per M")


def test_int4_on_turing_is_widened_too(tmp_path):
    cfg = _seed001()
    g5g = _target(cfg, "ec2-g5g-vllm-fp16")
    g5g.update(precision="int4")
    g5g["serving"].update(dtype="auto", quantization="bitsandbytes")
    t = next(t for t in plan(_write(tmp_path, cfg), DATE, runs_root=tmp_path / "r").targets if t.target_id == g5g["id"])
    assert any("int4 is not native on turing" in w for w in t.warnings)


def _neuron(cfg: dict) -> dict:
    return _target(cfg, "ec2-inf2-neuron-bf16")


# (what, mutate the seed-001 config, the field the one-line refusal names, words it says)
REFUSALS = [
    (
        "ml type on ec2",
        lambda c: _target(c, "ec2-g6-vllm-int4").update(instance_type="ml.g6.xlarge"),
        "targets[ec2-g6-vllm-int4].instance_type",
        "is a sagemaker instance type, not ec2",
    ),
    (
        "ec2 type on sagemaker",
        lambda c: _target(c, "sagemaker-g6-vllm-int4").update(instance_type="g6.xlarge"),
        "targets[sagemaker-g6-vllm-int4].instance_type",
        "is a ec2 instance type, not sagemaker",
    ),
    (
        "x86-only image on g5g",
        lambda c: _target(c, "ec2-g5g-vllm-fp16")["serving"].update(container="vllm-dlc-0.15.1-ec2"),
        "targets[ec2-g5g-vllm-fp16].serving.container",
        "g5g.2xlarge is arm64",
    ),
    (
        "published vLLM image on turing",
        lambda c: _target(c, "ec2-g5g-vllm-fp16")["serving"].update(container="vllm-openai-0.15.1"),
        "targets[ec2-g5g-vllm-fp16].serving.container",
        "no kernels for turing",
    ),
    (
        "model beyond one NeuronCore at tp 1",
        lambda c: _neuron(c).update(model="qwen3-coder-30b-a3b", precision="fp4"),
        "targets[ec2-inf2-neuron-bf16]:",
        "15.2 GB per NeuronCore at tensor parallel 1",
    ),
    (
        "model beyond two NeuronCores",
        lambda c: (_neuron(c).update(model="qwen3-32b"), _neuron(c)["serving"].update(tensor_parallel_size=2)),
        "targets[ec2-inf2-neuron-bf16]:",
        "32.8 GB per NeuronCore at tensor parallel 2",
    ),
    (
        "tensor parallel beyond the NeuronCores",
        lambda c: _neuron(c)["serving"].update(tensor_parallel_size=4),
        "targets[ec2-inf2-neuron-bf16].serving",
        "exceeds the 2 NeuronCore(s) of inf2.xlarge",
    ),
    (
        "neuron serving on a GPU type",
        lambda c: _neuron(c).update(instance_type="g6.xlarge"),
        "targets[ec2-inf2-neuron-bf16].serving.kind",
        "neuron does not run on g6.xlarge",
    ),
    (
        "vllm serving on a Neuron type",
        lambda c: _target(c, "ec2-g6-vllm-int4").update(instance_type="trn1.2xlarge"),
        "targets[ec2-g6-vllm-int4].serving.kind",
        "vllm does not run on trn1.2xlarge",
    ),
    (
        "bedrock: unknown api",
        lambda c: _target(c, "bedrock-nova-micro")["serving"].update(api="bedrock-nova-giga"),
        "targets[bedrock-nova-micro].serving.api",
        "allowed: ['bedrock-nova-micro']",
    ),
    (
        "bedrock: a model that is not the api's",
        lambda c: _target(c, "bedrock-nova-micro").update(model="gemma-4-e2b"),
        "targets[bedrock-nova-micro].model",
        "serves 'nova-micro'",
    ),
    (
        "bedrock: usd_per_hour",
        lambda c: _target(c, "bedrock-nova-micro").update(usd_per_hour=1.0),
        "targets[bedrock-nova-micro].usd_per_hour",
        "per-token API has no $/hour",
    ),
    (
        "bedrock: a region without a price",
        lambda c: c["bedrock"].update(region="eu-west-1"),
        "bedrock.region",
        "priced regions: ['us-east-1']",
    ),
    (
        "no price for g5g in the ec2 region",
        lambda c: _target(c, "ec2-g5g-vllm-fp16").pop("usd_per_hour"),
        "targets[ec2-g5g-vllm-fp16].usd_per_hour",
        "no catalog price for g5g.2xlarge in us-east-2",
    ),
]


@pytest.mark.parametrize("what,mutate,field,words", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refused_in_one_line_naming_the_field(tmp_path, what, mutate, field, words):
    cfg = _seed001()
    mutate(cfg)
    with pytest.raises(ConfigError) as e:
        plan(_write(tmp_path, cfg), DATE, runs_root=tmp_path / "runs")
    msg = str(e.value)
    assert msg.startswith(field) and words in msg and "\n" not in msg, msg
    assert not (tmp_path / "runs").exists()  # refused before anything was created


def test_a_model_beyond_one_neuroncore_plans_at_tensor_parallel_2(tmp_path):
    # qwen3-coder-30b-a3b at fp4: 15.25 GB of weights, over one core's 14.4 GB usable, half that at 2.
    cfg = _seed001()
    _neuron(cfg).update(model="qwen3-coder-30b-a3b", precision="fp4")
    _neuron(cfg)["serving"].update(tensor_parallel_size=2)
    run, checks = plan_checked(_write(tmp_path, cfg), DATE, runs_root=tmp_path / "r")
    t = next(t for t in run.targets if t.target_id == "ec2-inf2-neuron-bf16")
    assert t.tensor_parallel == 2
    assert "fits: 15.2 GB weights, 7.6 GB per NeuronCore of 14.4 GB usable: ok" in checks[t.target_id]
    assert any("fp4 is not native on neuron" in w for w in t.warnings)  # widened: warned, not refused (ec2 policy)


MIXED = {
    "name": "mixed-paths",
    "backend": "local",  # the default of targets that name none
    "sagemaker": {"region": "us-east-2", "precision_policy": "warn"},
    "ec2": {"region": "us-east-2"},
    "bedrock": {"region": "us-east-1"},
    "workload": {"input_tokens": 64, "output_tokens": 16, "concurrency": [1, 2], "requests_per_level": 4},
    "targets": [
        {
            "id": "local-cpu",
            "instance_type": "local-cpu-2c",
            "model": "smollm2-135m-instruct",
            "precision": "q4_1",
            "serving": {"kind": "llama-server", "name": "ls-1slot"},
        },
        {
            "id": "mine-unpriced",
            "backend": "openai",
            "model": "qwen3-32b",
            "serving": {"kind": "openai", "name": "vllm-mine", "base_url": "http://127.0.0.1:8000/v1"},
        },
        {
            "id": "mine-priced",
            "backend": "openai",
            "model": "qwen3-32b",
            "usd_per_hour": 1.5,
            "serving": {"kind": "openai", "name": "vllm-mine", "base_url": "http://127.0.0.1:8001/v1"},
        },
        {
            "id": "nova",
            "backend": "bedrock",
            "model": "nova-micro",
            "serving": {"kind": "bedrock", "name": "nova", "api": "bedrock-nova-micro"},
        },
        {
            "id": "g6",
            "backend": "ec2",
            "instance_type": "g6.xlarge",
            "model": "gemma-4-e2b",
            "precision": "bf16",
            "serving": {"kind": "vllm", "name": "vllm-bf16"},
        },
        {
            "id": "ml-g6",
            "backend": "sagemaker",
            "instance_type": "ml.g6.xlarge",
            "model": "gemma-4-e2b",
            "precision": "bf16",
            "serving": {"kind": "vllm", "name": "vllm-bf16"},
        },
    ],
}


def test_a_config_mixing_five_backends_plans(tmp_path):
    run, checks = plan_checked(_write(tmp_path, copy.deepcopy(MIXED)), DATE, runs_root=tmp_path / "r")
    by_id = {t.target_id: t for t in run.targets}
    assert run.backends == ["bedrock", "ec2", "local", "openai", "sagemaker"]
    bases = [by_id[i].price.basis for i in by_id]
    assert bases == ["per_hour", "none", "per_hour", "per_token", "per_hour", "per_hour"]
    unpriced = by_id["mine-unpriced"]
    assert unpriced.price.usd_per_hour is None and unpriced.estimated_usd is None
    assert "no usd_per_hour" in (unpriced.price.note or "")
    note = unpriced.price.note
    assert checks["mine-unpriced"] == ["hardware (an endpoint you run): not checked", f"price: none ({note})"]
    assert by_id["mine-priced"].price.usd_per_hour == 1.5 and by_id["mine-priced"].price.source == "config"
    assert run.estimated_usd == pytest.approx(sum(t.estimated_usd or 0 for t in run.targets))
    # bf16 is native on ada; the default AMI fits g6; the one warning: the default SageMaker
    # container is seed 002's vLLM 0.15.1, a pin the SDK does not list
    assert run.warnings == [by_id["ml-g6"].warnings[0]] and "lists no vllm 0.15.1" in run.warnings[0]
    assert all(checks[i] for i in by_id)


def test_unpriced_target_prints_a_dash(tmp_path, capsys):
    cfg = copy.deepcopy(MIXED)
    cfg["targets"] = [t for t in cfg["targets"] if t["id"] in ("local-cpu", "mine-unpriced")]
    assert main(["plan", "--config", _write(tmp_path, cfg), "--date", DATE]) == 0
    out = capsys.readouterr().out
    assert "estimated cost: - (no price)" in out
    assert "without mine-unpriced (no price)" in out


def test_cli_plan_of_seed_001_prints_every_target_check_and_total(capsys):
    assert main(["plan", "--config", "aws-seed-001", "--date", DATE]) == 0
    out = capsys.readouterr().out
    for tid in (t["id"] for t in _seed001()["targets"]):
        assert f"\n  {tid} (" in out
    assert "precision int4 native on ada: WIDENED (warning)" in out
    assert "kernels for turing: ok" in out
    assert "estimated total:" in out and "WARNING targets[ec2-g6-vllm-int4].precision" in out


def test_cli_plan_refusal_is_one_line(tmp_path, capsys):
    cfg = _seed001()
    _neuron(cfg)["serving"].update(tensor_parallel_size=4)
    assert main(["plan", "--config", _write(tmp_path, cfg), "--date", DATE]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("llmbench plan: targets[ec2-inf2-neuron-bf16].serving:") and "\n" not in err
