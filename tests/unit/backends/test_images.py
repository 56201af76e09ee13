"""AWS deep learning container images from the SageMaker SDK's own tables (backends/sagemaker/
images.py): the registry account of each region, unknown regions and versions, catalog pins, the
region list, and that resolving never reaches the network nor loads the SDK outside plan."""

import json
import subprocess
import sys
import textwrap

import pytest

from llmbench.backends.sagemaker import images
from llmbench.planning.config import load_catalogs
from llmbench.backends.registry import ConfigError
from llmbench.schemas.targets import KNOWN_REGIONS, ContainerImage

VLLM_030 = "vllm:0.30.0-gpu-py312-cu130-ubuntu24.04-sagemaker"
SEED_002_VLLM = "vllm:0.15.1-gpu-py312-cu129-ubuntu22.04-sagemaker"


@pytest.mark.parametrize(
    ("region", "account", "host"),
    [
        ("us-east-1", "763104351884", "amazonaws.com"),
        ("ap-east-1", "871362719292", "amazonaws.com"),
        ("me-south-1", "217643126080", "amazonaws.com"),
        ("eu-south-1", "692866216735", "amazonaws.com"),
        ("ca-west-1", "204538143572", "amazonaws.com"),
    ],
)
def test_the_vllm_dlc_comes_from_each_regions_own_registry(region, account, host):
    got = images.resolve("vllm", "0.30.0", region)
    assert got.uri == f"{account}.dkr.ecr.{region}.{host}/{VLLM_030}"
    assert got.sdk_uri == got.uri and got.warning is None
    assert f"image_uris.retrieve('vllm', '{region}', '0.30.0')" in got.how


def test_a_region_the_sdk_does_not_serve_is_refused_naming_the_ones_it_does():
    for region in ("cn-north-1", "us-gov-west-1"):
        with pytest.raises(ConfigError, match=rf"region {region}: .* serves no vllm 0.30.0 image there") as e:
            images.resolve("vllm", "0.30.0", region)
        assert "me-south-1" in str(e.value) and "\n" not in str(e.value)
    # DJL LMI is served in China (its own registry and host), vLLM is not
    assert images.resolve("djl-lmi", "0.36.0", "cn-north-1").uri.startswith(
        "727897471807.dkr.ecr.cn-north-1.amazonaws.com.cn/djl-inference:"
    )


def test_a_version_the_sdk_does_not_list_is_refused_without_a_pin_and_warned_with_one():
    with pytest.raises(ConfigError, match=r"vllm 0\.15\.1: .* lists no such version \(it lists 0\.23\.0\.\.0\.30\.0\)"):
        images.resolve("vllm", "0.15.1", "us-west-2")
    got = images.resolve("vllm", "0.15.1", "me-south-1", pin=SEED_002_VLLM, pin_reason="seed 002's")
    assert got.uri == f"217643126080.dkr.ecr.me-south-1.amazonaws.com/{SEED_002_VLLM}"  # the SDK's registry
    assert got.sdk_uri is None
    assert "lists no vllm 0.15.1" in got.warning and SEED_002_VLLM in got.warning and "(seed 002's)" in got.warning
    with pytest.raises(ConfigError, match="framework 'no-such-dlc'"):
        images.resolve("no-such-dlc", "1.0", "us-east-1")


def test_a_pin_that_disagrees_with_the_sdk_is_kept_with_both_values():
    pin = "djl-inference:0.36.0-lmi20.0.0-cu128"
    got = images.resolve("djl-lmi", "0.36.0", "eu-south-1", pin=pin)
    assert got.uri == f"692866216735.dkr.ecr.eu-south-1.amazonaws.com/{pin}"
    assert got.sdk_uri == "692866216735.dkr.ecr.eu-south-1.amazonaws.com/djl-inference:0.36.0-lmi27.0.0-cu130"
    assert pin in got.warning and "djl-inference:0.36.0-lmi27.0.0-cu130" in got.warning
    # a pin equal to the SDK's answer is no pin at all
    same = images.resolve("djl-lmi", "0.36.0", "eu-south-1", pin="djl-inference:0.36.0-lmi27.0.0-cu130")
    assert same.warning is None and same.uri == got.sdk_uri


def test_the_region_list_is_every_region_the_sdk_serves_the_catalogs_frameworks_in():
    frameworks = {c["framework"] for c in load_catalogs()["containers"].values() if c.get("framework")}
    assert frameworks == {"vllm", "djl-lmi", "huggingface-vllm-neuronx"}
    served = set().union(*(images.sdk_regions(f) for f in frameworks))
    assert served == KNOWN_REGIONS
    assert {"me-south-1", "ap-east-1", "eu-south-1", "ca-west-1", "mx-central-1"} <= KNOWN_REGIONS


def test_the_catalog_writes_no_aws_dlc_uri_by_hand():
    accounts = {a for f in ("vllm", "djl-lmi") for a in _accounts(f)}
    for name, c in load_catalogs()["containers"].items():
        ctr = ContainerImage.model_validate(c)
        if ctr.image is not None:
            assert not any(a in ctr.image for a in accounts), f"{name}: an AWS DLC by URI ({ctr.image})"
        if ctr.pin is not None:
            assert ctr.pin_reason, f"{name}: a pin says why"


def _accounts(framework):
    return {a for t in images._subtrees(framework) for v in t["versions"].values() for a in v["registries"].values()}


def test_a_container_is_either_an_image_or_a_framework_and_version():
    ok = {"kind": "vllm", "cuda": "12.9", "gpu_archs": ["ada"]}
    for bad in ({}, {"image": "x", "framework": "vllm", "version": "1"}, {"framework": "vllm"}, {"version": "1"},
                {"framework": "vllm", "version": "0.30.0", "pin": "no-tag"}):
        with pytest.raises(ValueError):
            ContainerImage.model_validate({**ok, **bad})
    unresolved = ContainerImage.model_validate({**ok, "framework": "vllm", "version": "0.30.0"})
    with pytest.raises(ValueError, match="not resolved"):
        unresolved.image_uri("us-east-1")
    # a plan.json from before resolution: the explicit image, filled per region
    assert ContainerImage.model_validate({**ok, "image": "{account}.dkr.ecr.{region}.amazonaws.com/r:t"}).image_uri(
        "us-east-2", "111122223333") == "111122223333.dkr.ecr.us-east-2.amazonaws.com/r:t"


NO_NETWORK = textwrap.dedent("""
    import json, sys, time
    attempts = []
    def hook(event, args):
        if event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "urllib.Request"):
            attempts.append(event)
    sys.addaudithook(hook)
    import llmbench.backends, llmbench.pipeline, llmbench.loadgen.sweep, llmbench.results.tables
    loaded_early = "sagemaker.core.image_uris" in sys.modules
    from llmbench.backends.sagemaker import images
    t0 = time.perf_counter()
    import sagemaker.core.image_uris
    import_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    uris = [images.resolve("vllm", "0.30.0", r).uri for r in ("me-south-1", "ap-east-1", "eu-south-1", "us-west-2")]
    resolve_s = (time.perf_counter() - t0) / 4
    print(json.dumps({"attempts": attempts, "loaded_early": loaded_early, "import_s": import_s,
                      "resolve_s": resolve_s, "uris": uris}))
""")


def test_resolving_is_offline_and_the_sdk_loads_only_when_asked():
    r = subprocess.run([sys.executable, "-c", NO_NETWORK], capture_output=True, text=True, timeout=120,
                       env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path),
                            "AWS_EC2_METADATA_DISABLED": "true"})
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["attempts"] == []  # no socket, no DNS, no HTTP: the SDK answers from its JSON tables
    assert not out["loaded_early"]  # backends, pipeline, load generator and tables never import the SDK
    assert [u.split(".", 1)[0] for u in out["uris"]] == ["217643126080", "871362719292", "692866216735",
                                                          "763104351884"]
