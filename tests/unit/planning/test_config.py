"""Config loading and planning: good configs resolve, bad ones are refused in one line."""

import json
from pathlib import Path

import pytest
import yaml

from llmbench.planning.config import ConfigError, load_config, make_run_key
from llmbench.planning.plan import plan


def test_local_default_plans_two_targets_differing_in_slots(tmp_path):
    run = plan("local", "2026-11-30", runs_root=tmp_path)
    assert run.run_key == "local-2026-11-30"
    ids = [t.target_id for t in run.targets]
    assert len(ids) >= 2
    slots = {t.serving.parallel for t in run.targets}
    assert len(slots) >= 2
    t = run.targets[0]
    assert t.workload.concurrency == [1, 2, 4, 8]
    assert t.price.usd_per_hour > 0 and t.price.source
    assert json.loads((tmp_path / "local-2026-11-30").glob("*/plan.json").__next__().read_text())["run_key"] == run.run_key


def test_run_key_is_per_config_and_date():
    assert make_run_key("local", "2026-11-30T00:00:00+00:00") == "local-2026-11-30"
    from datetime import datetime, timezone

    assert make_run_key("local", datetime(2026, 11, 30, 23, 59, tzinfo=timezone.utc)) == "local-2026-11-30"


def test_params_override_and_filter(tmp_path):
    run = plan("local", "2026-11-30", {"targets": ["smollm2-q4_1-4slots"], "concurrency": [4, 1],
                                        "requests_per_level": 3}, runs_root=tmp_path)
    assert [t.target_id for t in run.targets] == ["smollm2-q4_1-4slots"]
    assert run.targets[0].workload.concurrency == [1, 4]
    assert run.targets[0].workload.requests_per_level == 3


def _write(tmp_path, mutate):
    cfg = yaml.safe_load(open(__import__("llmbench.paths").paths.CONFIG_DIR / "local.yaml"))
    mutate(cfg)
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return str(p)


BAD_CONFIGS = [
    ("unknown instance", lambda c: c["targets"][0].update(instance_type="ml.z9.huge"), "instance_type"),
    ("unknown model", lambda c: c["targets"][0].update(model="gpt-9"), "model"),
    ("zero concurrency", lambda c: c["workload"].update(concurrency=[0, 1]), "concurrency"),
    ("negative concurrency", lambda c: c["workload"].update(concurrency=[-4]), "concurrency"),
    ("requests < 1", lambda c: c["workload"].update(requests_per_level=0), "requests_per_level"),
    ("output beyond context", lambda c: c["workload"].update(output_tokens=5000), "ctx_per_slot"),
    ("unknown precision", lambda c: c["targets"][0].update(precision="fp3"), "precision"),
    ("duplicate ids", lambda c: c["targets"].append(dict(c["targets"][0])), "duplicate target ids"),
    ("unknown key", lambda c: c.update(colour="blue"), "colour"),
    ("unknown backend", lambda c: c.update(backend="tpu-farm"), "backend"),
    ("bad target id", lambda c: c["targets"][0].update(id="has space"), "id"),
    ("zero slots", lambda c: c["targets"][0]["serving"].update(parallel=0), "parallel"),
    ("slots as a string", lambda c: c["targets"][0]["serving"].update(parallel="4"), "parallel"),
    ("threads as a float", lambda c: c["targets"][0]["serving"].update(threads=2.0), "threads"),
    ("threads beyond any machine", lambda c: c["targets"][0]["serving"].update(threads=100000), "threads"),
    ("normal without sd", lambda c: c["workload"].update(input_tokens={"dist": "normal", "mean": 100}), "sd"),
    ("uniform min > max", lambda c: c["workload"].update(output_tokens={"dist": "uniform", "min": 9, "max": 2}),
     "min 9 > max 2"),
    ("unknown distribution", lambda c: c["workload"].update(input_tokens={"dist": "zipf"}), "'empirical'"),
    ("missing lengths file", lambda c: c["workload"].update(input_tokens={"dist": "empirical", "file": "no.txt"}),
     "no.txt"),
    ("longest draw beyond context", lambda c: c["workload"].update(
        output_tokens={"dist": "uniform", "min": 10, "max": 5000}), "ctx_per_slot"),
    ("unknown preset", lambda c: c["workload"].update(preset="seed-999"), "seed-000"),
    # issue 18 #6: extra_args may not move the server off loopback or override what the backend sets
    ("extra_args --host", lambda c: c["targets"][0]["serving"].update(extra_args=["--host", "127.0.0.2"]),
     "--host is set by the local backend"),
    ("extra_args --host=", lambda c: c["targets"][0]["serving"].update(extra_args=["--host=0.0.0.0"]), "--host"),
    ("extra_args --port", lambda c: c["targets"][0]["serving"].update(extra_args=["--port", "80"]), "--port"),
    ("extra_args -m", lambda c: c["targets"][0]["serving"].update(extra_args=["-m", "/x.gguf"]), "-m"),
    # issue 18 #8: upper bounds, and strict integers where a count is meant
    ("bool and float levels", lambda c: c["workload"].update(concurrency=[True, 2.0]), "concurrency.0"),
    ("huge concurrency", lambda c: c["workload"].update(concurrency=[10**20]), "less than or equal to 10000"),
    ("5000 levels", lambda c: c["workload"].update(concurrency=list(range(1, 5001))), "at most 64"),
    ("huge requests_per_level", lambda c: c["workload"].update(requests_per_level=10**8), "requests_per_level"),
    ("float requests_per_level", lambda c: c["workload"].update(requests_per_level=8.0), "requests_per_level"),
    ("nan timeout", lambda c: c["workload"].update(request_timeout_s=float("nan")), "request_timeout_s"),
    ("inf arrival rate", lambda c: c["workload"].update(arrival_rates_rps=[float("inf")]), "arrival_rates_rps"),
]


@pytest.mark.parametrize("name,mutate,field", BAD_CONFIGS, ids=[b[0] for b in BAD_CONFIGS])
def test_bad_config_refused_naming_the_field(tmp_path, name, mutate, field):
    with pytest.raises(ConfigError) as e:
        plan(_write(tmp_path, mutate), "2026-11-30", runs_root=tmp_path / "runs")
    msg = str(e.value)
    assert field in msg and "\n" not in msg
    assert not (tmp_path / "runs").exists()  # refused before anything was created


def test_malformed_yaml_and_unknown_config(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("name: [unclosed\n")
    with pytest.raises(ConfigError, match="malformed YAML"):
        load_config(str(p))
    with pytest.raises(ConfigError, match="allowed: .*local"):
        load_config("no-such-config")


@pytest.mark.parametrize(
    "params,match",
    [
        ({"targets": ["nope"]}, "params.targets: unknown target ids"),
        ({"concurrency": [0]}, "concurrency"),
        ({"requests_per_level": 0}, "requests_per_level"),
        ({"colour": 1}, "unknown params"),
        ({"concurrency": [10**20]}, "concurrency"),
        ({"concurrency": [True]}, "concurrency"),
        ({"requests_per_level": 10**8}, "requests_per_level"),
    ],
)
def test_params_that_contradict_the_config(tmp_path, params, match):
    with pytest.raises(ConfigError, match=match):
        plan("local", "2026-11-30", params, runs_root=tmp_path)


def test_prompts_are_deterministic_and_share_only_the_prefix():
    from llmbench.loadgen.prompts import chat_request_body, make_prompt

    a, b = make_prompt(7, 1, 200, 10, shared_prefix_tokens=50), make_prompt(7, 2, 200, 10, shared_prefix_tokens=50)
    assert a == make_prompt(7, 1, 200, 10, shared_prefix_tokens=50)
    assert a.system == b.system and len(a.system.split()) == 50 and a.text != b.text
    body = chat_request_body(a)
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["stream_options"] == {"include_usage": True, "continuous_usage_stats": True} and body["ignore_eos"]
    assert make_prompt(7, 1, 200, 10).system is None


def _sm(tmp_path, mutate, base="sagemaker-seed-002"):
    cfg = yaml.safe_load(open(__import__("llmbench.paths").paths.CONFIG_DIR / f"{base}.yaml"))
    mutate(cfg)
    p = tmp_path / "sm.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return str(p)


def _g7e(c):
    return next(t for t in c["targets"] if t["instance_type"] == "ml.g7e.2xlarge")


SM_BAD = [
    ("LMI CUDA 12.8 on Blackwell", lambda c: _g7e(c).update(serving={"kind": "lmi", "name": "x"}), "needs CUDA 12.9"),
    ("vLLM native on Ampere", lambda c: c["targets"][0].update(
        serving={"kind": "vllm", "name": "x", "tensor_parallel_size": 4}), "has no kernels for ampere"),
    ("TP beyond GPUs", lambda c: _g7e(c)["serving"].update(tensor_parallel_size=2), "exceeds the 1 GPU"),
    ("too large for GPU memory", lambda c: c["targets"][0]["serving"].update(tensor_parallel_degree=1),
     "per GPU at tensor parallel 1"),
    ("fp8 on Ampere refused", lambda c: c["targets"][0].update(precision="fp8"), "not native on ampere"),
    ("unknown region", lambda c: c["sagemaker"].update(region="mars-1"), "sagemaker.region"),
    ("no sagemaker section", lambda c: c.pop("sagemaker"), "needs a `sagemaker:` section"),
    ("llama-server on sagemaker", lambda c: c["targets"][0].update(
        serving={"kind": "llama-server", "name": "x"}), "does not run on backend"),
    ("output beyond max_model_len", lambda c: c["workload"].update(output_tokens=4000), "max_model_len"),
    ("no price", lambda c: c["sagemaker"].update(region="eu-west-1"), "no catalog price"),
    ("unknown container", lambda c: _g7e(c)["serving"].update(container="vllm-9"), "serving.container"),
]


@pytest.mark.parametrize("name,mutate,match", SM_BAD, ids=[b[0] for b in SM_BAD])
def test_sagemaker_targets_refused_at_plan(tmp_path, name, mutate, match):
    with pytest.raises(ConfigError) as e:
        plan(_sm(tmp_path, mutate), "2026-11-30", runs_root=tmp_path / "runs")
    assert match in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "runs").exists()


def test_seed_configs_plan_with_costs(tmp_path):
    for name, n in (("sagemaker-seed-000", 8), ("sagemaker-seed-002", 6)):
        run = plan(name, "2026-11-30", runs_root=tmp_path)
        assert len(run.targets) == n
        priced = [t for t in run.targets if t.price.basis == "per_hour"]
        assert all(t.price.usd_per_hour > 0 and t.estimated_usd > 0 for t in priced)
        assert all(t.price.source != "config" for t in run.targets)  # prices come from sources
        assert run.estimated_usd == pytest.approx(sum(t.estimated_usd for t in priced))
        # no source prices ml.g6.12xlarge or ml.g7e.12xlarge: measured without $ figures, saying why
        unpriced = {t.instance_type for t in run.targets if t.price.basis == "none"}
        assert unpriced == ({"ml.g6.12xlarge", "ml.g7e.12xlarge"} if name == "sagemaker-seed-000" else set())
        assert all(t.estimated_usd is None and "reference" in t.price.note for t in run.targets
                   if t.price.basis == "none")
    seed0 = plan("sagemaker-seed-000", "2026-11-30", runs_root=tmp_path)
    precision = [w for w in seed0.warnings if "image pin" not in w]
    assert len(precision) == 2 and all("ampere" in w for w in precision)  # fp8 on A10G, warned
    # the rest: every target's container is a catalog pin the SDK maps otherwise or does not list
    assert len(seed0.warnings) - 2 == len(seed0.targets)


def test_roofline_matches_seed_001_arithmetic():
    from llmbench.analysis.metrics import roofline_tokens_per_s

    # L4 300 GB/s reading 2 GB of active weights per token -> 150 tok/s ceiling
    inst = {"memory_bandwidth_gb_s": 300}
    model = {"active_params_b": 2.0, "bytes_per_param": {"int8": 1.0}}
    assert roofline_tokens_per_s(inst, model, "int8", 1) == 150


def test_length_distributions_and_seed_presets(tmp_path):
    from llmbench.schemas.workload import length_mean, length_range, sample_length

    lengths = tmp_path / "lengths.txt"
    lengths.write_text("12\n40\n40\n100\n")
    cfg = _write(tmp_path, lambda c: (c["workload"].update(
        input_tokens={"dist": "empirical", "file": str(lengths)},
        output_tokens={"dist": "normal", "mean": 50, "sd": 10, "min": 30, "max": 70}),
        c["targets"][0]["serving"].update(ctx_per_slot=1024)))
    w = plan(cfg, "2026-11-30", runs_root=tmp_path / "runs").targets[0].workload
    assert w.input_tokens.values == [12, 40, 40, 100]  # read once, carried in the target
    draws = [sample_length(w.output_tokens, 7, i, "output") for i in range(500)]
    assert draws == [sample_length(w.output_tokens, 7, i, "output") for i in range(500)]  # seeded
    assert min(draws) >= 30 and max(draws) <= 70 and abs(sum(draws) / 500 - 50) < 2
    assert {sample_length(w.input_tokens, 7, i, "input") for i in range(200)} == {12, 40, 100}
    assert length_range(w.input_tokens) == (12, 100) and length_mean(w.input_tokens) == 48

    from llmbench.schemas.workload import Workload

    seed000 = Workload.model_validate({"preset": "seed-000"})
    assert (seed000.input_tokens, seed000.output_tokens, seed000.concurrency) == (2048, 512, [1, 16, 64])
    seed002 = Workload.model_validate({"preset": "seed-002", "concurrency": [1, 2]})  # the config wins
    assert seed002.shared_prefix_tokens == 478 and seed002.concurrency == [1, 2]
    assert seed002.input_tokens.mean + seed002.shared_prefix_tokens == 1000 and seed002.output_tokens.mean == 560


def test_seed_configs_set_no_price_and_carry_references(tmp_path):
    import glob

    from llmbench.planning.config import load_catalogs

    instances = load_catalogs()["instances"]
    for path in glob.glob(str(Path(__file__).resolve().parents[3] / "include" / "llmbench" / "config" / "*seed*.yaml")):
        cfg = yaml.safe_load(Path(path).read_text())
        for t in cfg["targets"]:
            # a price set on a seed target is one a source states for that type (seed 001's g5g:
            # us-east-1's Pricing API figure), never one back-solved from an article's result
            if "usd_per_hour" in t:
                assert t["usd_per_hour"] in instances[t["instance_type"]]["usd_per_hour"].values(), (path, t["id"])
    seed0 = plan("sagemaker-seed-000", "2026-11-30", runs_root=tmp_path)
    implied = {r.target: r.value for r in seed0.reference if r.unit == "usd_per_hour"}
    assert implied == {"g7e-qwen3coder-fp4": 13.97, "g6-qwen3coder-fp8": 4.49, "g6e-qwen3coder-fp8": 9.31}
    assert all(r.implied for r in seed0.reference if r.unit == "usd_per_hour")
    assert seed0.price_basis == "output"
    seed2 = plan("sagemaker-seed-002", "2026-11-30", runs_root=tmp_path)
    assert seed2.price_basis == "total" and len(seed2.reference) >= 6
    assert all(r.seed == "002" for r in seed2.reference)


def test_reference_must_name_a_target_of_the_config(tmp_path):
    cfg = _write(tmp_path, lambda c: c.update(reference=[{"seed": "000", "says": "x", "value": 1, "unit": "pct",
                                                          "target": "nope"}]))
    with pytest.raises(ConfigError, match="reference.0.target|reference\\[0\\].target"):
        plan(cfg, "2026-11-30", runs_root=tmp_path / "runs")


# Identifiers that become folders (issue 18 #1): refused in one line naming the field, before
# anything is written anywhere.
UNSAFE_NAMES = ["../../../../tmp/x/escaped", "", "a/b", "..", ".hidden", "has\nnewline", "x" * 64, "sp ace"]


@pytest.mark.parametrize("bad", UNSAFE_NAMES, ids=repr)
def test_config_name_that_would_leave_the_data_folder_is_refused(tmp_path, bad):
    escaped = tmp_path / "tmp"
    with pytest.raises(ConfigError) as e:
        plan(_write(tmp_path, lambda c: c.update(name=bad)), "2026-11-30", runs_root=tmp_path / "data" / "runs")
    msg = str(e.value)
    assert "name" in msg and "\n" not in msg
    assert not (tmp_path / "data").exists() and not escaped.exists()


@pytest.mark.parametrize("bad", ["../up", "a/b", "", "x" * 64])
def test_target_id_and_run_key_are_safe(tmp_path, bad):
    with pytest.raises(ConfigError, match="id"):
        plan(_write(tmp_path, lambda c: c["targets"][0].update(id=bad)), "2026-11-30", runs_root=tmp_path / "r")
    with pytest.raises(ConfigError, match="name"):
        make_run_key(bad, "2026-11-30")
    with pytest.raises(ConfigError, match="date"):
        make_run_key("local", "notadate")


def test_paths_under_refuses_an_escape(tmp_path):
    from llmbench.paths import under

    assert under(tmp_path, "a", "b") == tmp_path / "a" / "b"
    for parts in (("..", "x"), ("/etc",), ("a", "../../x")):
        with pytest.raises(ValueError, match="would leave"):
            under(tmp_path, *parts)


def test_selecting_targets_keeps_only_their_reference_figures(tmp_path):
    # seed 000's reference block names several targets; a run of one of them plans, holding only
    # its own figures (and those about no target in particular)
    run = plan("sagemaker-seed-000", "2026-11-30", {"targets": ["g7e-qwen3coder-fp4"]}, runs_root=tmp_path)
    assert [t.target_id for t in run.targets] == ["g7e-qwen3coder-fp4"]
    assert run.reference and {r.target for r in run.reference} <= {"g7e-qwen3coder-fp4", None}


def test_config_regions_are_the_union_of_every_configs_aws_sections(tmp_path):
    from llmbench.paths import config_regions
    from llmbench.planning.config import available_configs

    (tmp_path / "a.yaml").write_text(yaml.safe_dump({"name": "a", "sagemaker": {"region": "eu-west-1"},
                                                     "ec2": {"region": "us-east-2"}}))
    (tmp_path / "b.yaml").write_text(yaml.safe_dump({"name": "b", "bedrock": {"region": "ap-south-1"},
                                                     "ec2": {"region": "us-east-2"}}))
    (tmp_path / "local.yaml").write_text(yaml.safe_dump({"name": "local", "backend": "local"}))
    (tmp_path / "broken.yaml").write_text("name: [unclosed\n")
    (tmp_path / "notes.txt").write_text("sagemaker: {region: sa-east-1}\n")
    assert config_regions(tmp_path) == ["ap-south-1", "eu-west-1", "us-east-2"]
    # The shipped configs, each validated by plan's own loader: the same union.
    validated = set()
    for name in available_configs():
        cfg = load_config(name)
        validated |= {s.region for s in cfg.sections.values() if getattr(s, "region", None)}
    assert config_regions() == sorted(validated) and "us-east-2" in validated


CONFIGS = Path(__file__).resolve().parents[3] / "include" / "llmbench" / "config"
SPEC = "speculative_config: {method: eagle3, model: RedHatAI/Qwen3-32B-speculator.eagle3, num_speculative_tokens: 4}"


def _bomb(levels: int) -> str:
    """Nested aliases, nine per level: a few hundred bytes that expand to 9**levels strings."""
    rows = ["x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    rows += [f"x{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return ", ".join(rows)


def test_an_alias_bomb_is_refused_in_one_line_before_it_expands(tmp_path):
    """Issue 26 defect 9: 7 KB of nested aliases in speculative_config took 1 GB and 11.6 s."""
    import time

    text = (CONFIGS / "sagemaker-seed-002.yaml").read_text()
    assert SPEC in text
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(text.replace(SPEC, SPEC[:-1] + ", " + _bomb(7) + "}", 1))  # 9**7: 4.8 M nodes
    assert len(bomb.read_bytes()) - len(text) < 1000
    t0 = time.monotonic()
    with pytest.raises(ConfigError, match=r"^bomb.yaml: its aliases expand to \d+ YAML nodes \(at most 100000\)$"):
        load_config(str(bomb))
    assert time.monotonic() - t0 < 2
    few = tmp_path / "few.yaml"  # anchors a config uses sensibly still load
    few.write_text(text.replace(SPEC, "speculative_config: &spec {method: eagle3, num_speculative_tokens: 4}", 1)
                   .replace(SPEC, "speculative_config: *spec", 1))
    assert load_config(str(few)).name == load_config("sagemaker-seed-002").name


def test_a_key_given_twice_is_refused_naming_it_and_its_line(tmp_path):
    """Issue 26 defect 9: a config with two `targets:` keys silently kept the last."""
    text = (CONFIGS / "local.yaml").read_text()
    twice = tmp_path / "twice.yaml"
    twice.write_text(text + "targets: []\n")
    line = len(text.splitlines()) + 1
    with pytest.raises(ConfigError, match=rf"^twice.yaml: duplicate key 'targets' at line {line} \(first at line \d+\)$"):
        load_config(str(twice))
    nested = tmp_path / "nested.yaml"  # inside a mapping too, not only at the top
    nested.write_text(text.replace("workload:\n", "workload:\n  seed: 1\n  seed: 2\n", 1))
    with pytest.raises(ConfigError, match=r"duplicate key 'seed' at line"):
        load_config(str(nested))


def test_a_run_of_some_targets_drops_a_quality_baseline_it_leaves_out(tmp_path):
    """params.targets without the baseline target: the rest plan, graded against their own minimum
    (a baseline that is not in the run cannot be compared on the same items)."""
    run = plan("sagemaker-seed-002", "2026-11-30", {"targets": ["g7e-vllm-eagle3"]}, runs_root=tmp_path)
    (t,) = run.targets
    assert t.quality is not None and t.quality.baseline is None and t.quality.max_drop_vs_baseline is None
    both = plan("sagemaker-seed-002", "2026-11-30", {"targets": ["g7e-vllm-eagle3", "g5-lmi-baseline"]},
                runs_root=tmp_path / "both")
    assert {x.quality.baseline for x in both.targets} == {"g5-lmi-baseline"}
