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


# ---- container images: resolved per region through the SageMaker SDK's tables ----------------


def _seed002_in(region: str | None = None, **section) -> dict:
    """Seed 002's config, moved to another region with a price set on each target (the catalog
    prices it in us-west-2 only)."""
    cfg = yaml.safe_load((paths.CONFIG_DIR / "sagemaker-seed-002.yaml").read_text())
    if region:
        cfg["sagemaker"]["region"] = region
        for t in cfg["targets"]:
            t["usd_per_hour"] = 10.0
    cfg["sagemaker"].update(section)
    return cfg


def test_cli_plan_of_seed_002_prints_each_targets_image_and_how_it_was_resolved(capsys):
    assert main(["plan", "--config", "sagemaker-seed-002", "--date", DATE]) == 0
    out = capsys.readouterr().out
    blocks = {b.split(" (", 1)[0].strip(): b for b in out.split("\n\n") if b.startswith("  ") and " (sagemaker, " in b}
    assert len(blocks) == 6
    registry = "763104351884.dkr.ecr.us-west-2.amazonaws.com"
    for tid, block in blocks.items():
        if tid.startswith("g5-"):  # DJL 0.36.0: the SDK maps it to LMI 27 / CUDA 13.0; the seed ran LMI 20 / 12.8
            assert f"image djl-lmi-v20 in us-west-2: {registry}/djl-inference:0.36.0-lmi20.0.0-cu128: PINNED" in block
            assert "image_uris.retrieve('djl-lmi', 'us-west-2', '0.36.0') answers " \
                   "djl-inference:0.36.0-lmi27.0.0-cu130 (warning)" in block
        else:  # vLLM 0.15.1: the SDK lists 0.23 on; the seed's tag is kept on the SDK's registry
            assert f"image vllm-0.15.1 in us-west-2: {registry}/vllm:0.15.1-gpu-py312-cu129-ubuntu22.04-sagemaker: " \
                   "PINNED, catalog pin on the SDK's vllm registry for us-west-2; the SDK lists no vllm 0.15.1" in block
    assert out.count("WARNING targets[") == 6 and "(it lists 0.23.0..0.30.0)" in out


@pytest.mark.parametrize(("region", "account"), [("me-south-1", "217643126080"), ("ap-east-1", "871362719292"),
                                                 ("eu-south-1", "692866216735"), ("us-east-1", "763104351884")])
def test_seed_002_moved_to_another_region_deploys_from_that_regions_registry(tmp_path, region, account):
    run = plan(_write(tmp_path, _seed002_in(region)), DATE, runs_root=tmp_path / "r")
    uris = {t.target_id: t.backend.container.uri for t in run.targets}
    assert all(u.startswith(f"{account}.dkr.ecr.{region}.amazonaws.com/") for u in uris.values()), uris
    assert uris["g7e-vllm-eagle3"].endswith("/vllm:0.15.1-gpu-py312-cu129-ubuntu22.04-sagemaker")
    assert all("image_uris.retrieve" in t.backend.container.resolved_by or "lists no vllm" in
               t.backend.container.resolved_by for t in run.targets)


def test_a_region_the_sdk_serves_no_vllm_in_is_refused_for_the_vllm_target(tmp_path, capsys):
    # DJL LMI is served in cn-north-1 (the g5 targets pass); no vLLM DLC is: the first vLLM target stops the plan
    assert main(["plan", "--config", _write(tmp_path, _seed002_in("cn-north-1")), "--date", DATE]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("llmbench plan: targets[g6e-vllm-prefix-cache].serving.container: vllm-0.15.1: region "
                          "cn-north-1: ") and "serves no vllm 0.30.0 image there" in err and "\n" not in err


def test_a_region_nobody_serves_is_refused_by_the_config(tmp_path):
    with pytest.raises(ConfigError, match=r"sagemaker.region: unknown region 'xx-east-9'"):
        plan(_write(tmp_path, _seed002_in("xx-east-9")), DATE, runs_root=tmp_path / "r")


def test_image_pins_refuse_refuses_a_pin_printing_both_values(tmp_path):
    cfg = _seed002_in(image_pins="refuse")
    with pytest.raises(ConfigError) as e:
        plan(_write(tmp_path, cfg), DATE, runs_root=tmp_path / "r")
    msg = str(e.value)
    assert msg.startswith("targets[g5-lmi-baseline].serving.container: djl-lmi-v20: ")
    assert "djl-inference:0.36.0-lmi27.0.0-cu130" in msg and "djl-inference:0.36.0-lmi20.0.0-cu128" in msg
    assert "sagemaker.image_pins: refuse" in msg


def _with_container(monkeypatch, name: str, **container) -> None:
    """The real catalog plus one container (plan reads the catalog through load_catalogs)."""
    import llmbench.planning.plan as planning

    real = planning.load_catalogs

    def catalogs():
        cat = copy.deepcopy(real())
        cat["containers"][name] = {"kind": "vllm", "platform": "sagemaker", "gpu_archs": ["ada", "blackwell"],
                                   **container}
        return cat

    monkeypatch.setattr(planning, "load_catalogs", catalogs)


def _g7e_on(cfg: dict, container: str) -> dict:
    cfg["targets"] = [t for t in cfg["targets"] if t["id"] == "g7e-vllm-eagle3"]
    cfg["targets"][0]["serving"]["container"] = container
    cfg["reference"] = []
    cfg.pop("quality", None)  # its baseline is a target this one-target config drops
    return cfg


def test_an_sdk_container_without_a_pin_plans_with_no_warning(tmp_path):
    cfg = _g7e_on(_seed002_in(), "vllm-0.30.0")
    run, checks = plan_checked(_write(tmp_path, cfg), DATE, runs_root=tmp_path / "r")
    uri = "763104351884.dkr.ecr.us-west-2.amazonaws.com/vllm:0.30.0-gpu-py312-cu130-ubuntu24.04-sagemaker"
    assert run.targets[0].backend.container.uri == uri and run.warnings == []
    assert any(c.startswith(f"image vllm-0.30.0 in us-west-2: {uri}: resolved by ") for c in checks["g7e-vllm-eagle3"])
    assert "CUDA 13.0 >= 12.9: ok" in checks["g7e-vllm-eagle3"]


def test_a_version_the_sdk_does_not_list_and_no_pin_is_refused(tmp_path, monkeypatch):
    _with_container(monkeypatch, "vllm-0.11", framework="vllm", version="0.11.0", cuda="12.8")
    with pytest.raises(ConfigError, match=r"^targets\[g7e-vllm-eagle3\]\.serving\.container: vllm-0\.11: vllm 0\.11\.0: "
                                          r".* lists no such version \(it lists 0\.23\.0\.\.0\.30\.0\)$"):
        plan(_write(tmp_path, _g7e_on(_seed002_in(), "vllm-0.11")), DATE, runs_root=tmp_path / "r")


def test_a_catalog_cuda_the_image_tag_contradicts_is_refused(tmp_path, monkeypatch):
    _with_container(monkeypatch, "vllm-0.30-wrong", framework="vllm", version="0.30.0", cuda="12.9")
    with pytest.raises(ConfigError, match=r"the catalog says CUDA 12\.9, the image's tag says 13\.0"):
        plan(_write(tmp_path, _g7e_on(_seed002_in(), "vllm-0.30-wrong")), DATE, runs_root=tmp_path / "r")


def test_ec2_neuron_dlc_comes_from_the_same_resolution(tmp_path):
    cfg = _seed001()
    cfg["ec2"]["region"] = "eu-west-3"  # the Neuron tables serve it; set prices, the catalog has none there
    for t in cfg["targets"]:
        if t.get("backend") == "ec2":
            t["usd_per_hour"] = 1.0
    run = plan(_write(tmp_path, cfg), DATE, runs_root=tmp_path / "r")
    inf2 = next(t for t in run.targets if t.target_id == "ec2-inf2-neuron-bf16")
    assert inf2.backend.container.uri == ("763104351884.dkr.ecr.eu-west-3.amazonaws.com/"
                                          "pytorch-inference-vllm-neuronx:0.9.1-neuronx-py310-sdk2.25.0-ubuntu22.04")
    assert any("huggingface-vllm-inference-neuronx" in w for w in inf2.warnings)  # both values: ours and the SDK's
    cfg["ec2"]["region"] = "eu-north-1"  # the SDK's vLLM-on-Neuron tables do not serve it
    with pytest.raises(ConfigError, match=r"targets\[ec2-inf2-neuron-bf16\]\.serving\.container: neuron-vllm-0\.9: "
                                          r"region eu-north-1: "):
        plan(_write(tmp_path, cfg), DATE, runs_root=tmp_path / "r")
