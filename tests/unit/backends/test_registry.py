"""The backend registry: a kind is one package plus one registration, and nothing else names it.

A toy kind in a package of its own (under tmp_path, on sys.path) registers itself, and a config
using it plans, checks, estimates, writes and reloads its plan.json, and makes its backend object,
with no change to llmbench. The kinds llmbench ships are named only by their own package, the
registration list and the test servers."""

import importlib
import re
import sys
from pathlib import Path

import pytest
import yaml

import llmbench
from llmbench import backends
from llmbench.backends import get_backend
from llmbench.planning.config import ConfigError, load_config
from llmbench.planning.plan import plan_checked
from llmbench.backends import registry
from llmbench.schemas import kinds
from llmbench.schemas.targets import RunPlan

TOY_PACKAGE = '''
"""A toy backend kind: an endpoint priced per token, with a config section of its own."""

from typing import Literal

from pydantic import Field

from llmbench.backends import registry
from llmbench.backends.registry import (BackendSpec, BackendTargetBase, DagLimits, ConfigError, Resolved,
                                       ServingBase, Strict)
from llmbench.schemas.targets import Price


class ToyServing(ServingBase):
    kind: Literal["toy-serving"] = "toy-serving"
    flavour: str = "vanilla"


class ToySettings(Strict):
    url: str
    usd_per_m_output: float = Field(2.0, ge=0)


class ToyTarget(BackendTargetBase):
    kind: Literal["toy"] = "toy"
    settings: ToySettings
    flavour: str


class ToyBackend:
    kind = "toy"

    def __init__(self, token=None):
        self.token = token


def plan(ctx):
    if ctx.target.serving.flavour == "sour":
        raise ConfigError(f"{ctx.where}.serving.flavour: sour is not served")
    ctx.out.passed("flavour", ctx.target.serving.flavour)
    price = Price(basis="per_token", usd_per_m_input_tokens=0.0,
                  usd_per_m_output_tokens=ctx.settings.usd_per_m_output, source="toy list")
    return Resolved("toyland", ToyTarget(settings=ctx.settings, flavour=ctx.target.serving.flavour), price)


SPEC = registry.register(
    BackendSpec(
        kind="toy",
        backend="toybackend:ToyBackend",
        target=ToyTarget,
        serving=("toy-serving",),
        plan=plan,
        settings=ToySettings,
        section_needs="url",
        instance_label="toy-api",
        deploy_overhead_min=6.0,
        dag_limits=DagLimits(pool="toy_pool", deploy_poke_s=30),
        platform_kwargs=lambda target, platform: {"token": platform.password("toy_conn")},
    ),
    ToyServing,
)
'''


@pytest.fixture
def toy_kind(tmp_path, monkeypatch):
    """Registers the toy kind from a package in tmp_path; the registry is as it was afterwards."""
    tables = (registry._SPECS, registry._WIRES, kinds._TARGETS, kinds._SERVING)
    saved = tuple(dict(t) for t in tables)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "toybackend.py").write_text(TOY_PACKAGE)
    monkeypatch.syspath_prepend(str(tmp_path / "pkg"))
    yield importlib.import_module("toybackend")
    sys.modules.pop("toybackend", None)
    for live, old in zip(tables, saved, strict=True):
        live.clear()
        live.update(old)
    kinds._adapters.cache_clear()


def _toy_config(tmp_path: Path, flavour: str = "mint", section: bool = True) -> Path:
    cfg = {
        "name": "toy-run",
        "backend": "toy",
        "workload": {"concurrency": [1, 2], "requests_per_level": 4, "input_tokens": 32, "output_tokens": 16},
        "targets": [{"id": "t1", "model": "toy-model", "serving": {"kind": "toy-serving", "name": "toy",
                                                                  "flavour": flavour}}],
    }
    if section:
        cfg["toy"] = {"url": "http://127.0.0.1:9/v1", "usd_per_m_output": 3.0}
    path = tmp_path / "toy-run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_a_toy_kind_in_its_own_package_plans_estimates_and_reloads(toy_kind, tmp_path):
    run, checks = plan_checked(str(_toy_config(tmp_path)), "2026-12-01", runs_root=tmp_path / "runs")
    (t,) = run.targets
    assert run.backends == ["toy"] and t.backend_kind == "toy" and t.region == "toyland"
    assert isinstance(t.backend, toy_kind.ToyTarget) and t.backend.settings.url == "http://127.0.0.1:9/v1"
    assert isinstance(t.serving, toy_kind.ToyServing) and t.serving.flavour == "mint"
    assert t.instance_type == "toy-api" and t.price.usd_per_m_output_tokens == 3.0
    assert checks["t1"] == ["flavour: mint"]
    # The estimate is the kind's deploy overhead (per-token: no hours billed, tokens at list price).
    assert t.estimated_endpoint_hours == 0.0 and t.estimated_usd and t.estimated_usd > 0
    # plan.json round-trips through the registry: the toy's own models come back.
    again = RunPlan.load(run.run_dir).targets[0]
    assert again == t and isinstance(again.backend, toy_kind.ToyTarget)
    assert isinstance(get_backend("toy", token="s3cret"), toy_kind.ToyBackend)
    assert registry.get("toy").dag_limits.pool == "toy_pool"


def test_the_toy_kinds_own_checks_and_section_refuse_in_one_line(toy_kind, tmp_path):
    with pytest.raises(ConfigError, match=r"targets\[t1\]\.serving\.flavour: sour is not served"):
        plan_checked(str(_toy_config(tmp_path, flavour="sour")), "2026-12-01", write=False)
    with pytest.raises(ConfigError, match=r"backend toy needs a `toy:` section \(url\)"):
        load_config(str(_toy_config(tmp_path, section=False)))
    bad = yaml.safe_load(_toy_config(tmp_path).read_text())
    bad["toy"]["usd_per_m_output"] = -1
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad))
    with pytest.raises(ConfigError, match=r"^bad\.yaml: toy\.usd_per_m_output: Input should be greater than"):
        load_config(str(tmp_path / "bad.yaml"))


def test_without_the_toy_package_its_kind_is_unknown(tmp_path):
    with pytest.raises(ConfigError, match=r"backend: Value error, unknown backend 'toy'; allowed: \['local'"):
        load_config(str(_toy_config(tmp_path)))
    with pytest.raises(ValueError, match="backend: unknown 'toy'"):
        registry.get("toy")


def test_a_second_package_cannot_claim_a_registered_kind():
    spec = registry.get("local")
    with pytest.raises(ValueError, match="'local' is registered already"):
        registry.register(type(spec)(**{**spec.__dict__, "deploy_overhead_min": 99.0}))
    assert registry.get("local").deploy_overhead_min == spec.deploy_overhead_min


PACKAGE = Path(llmbench.__file__).parent
# Kinds whose names mean nothing else in the code ("local" and "openai" are also ordinary words
# there: this machine, the OpenAI wire format every server speaks).
NAMED_KINDS = ("bedrock", "sagemaker", "ec2")


def _naming(kind: str, root: Path) -> list[str]:
    """The modules under root that name a kind, outside its package, the registration list and
    the test servers."""
    allowed = (root / "backends" / kind, root / "testing")
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if not any(p.is_relative_to(a) for a in allowed)
        and p != root / "backends" / "__init__.py"
        and re.search(kind, p.read_text(), re.I)
    )


@pytest.mark.parametrize("kind", NAMED_KINDS)
def test_a_kind_is_named_only_by_its_own_package_and_the_registration(kind):
    """Generic code asks the registry; only the kind's package, the list of built-in kinds
    (llmbench/backends/__init__.py) and the test servers (llmbench/testing) may name it."""
    assert kind in backends.BUILTIN_KINDS
    named = _naming(kind, PACKAGE)
    assert not named, f"{kind} is named outside its package: {named}; ask llmbench.backends.registry instead"
    registration = (PACKAGE / "backends" / "__init__.py").read_text()
    assert len(re.findall(kind, registration, re.I)) == 1  # its one line in BUILTIN_KINDS


def test_the_naming_check_catches_a_generic_module_that_names_a_kind(tmp_path):
    for rel, text in {
        "planning/checks.py": 'if kind == "SageMaker": pass\n',  # caught
        "backends/sagemaker/spec.py": 'KIND = "sagemaker"\n',  # its own package
        "testing/sagemaker_runtime.py": "# a SageMaker test server\n",  # test servers
        "backends/__init__.py": 'BUILTIN_KINDS = ("sagemaker",)\n',  # the registration
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert _naming("sagemaker", tmp_path) == ["planning/checks.py"]
