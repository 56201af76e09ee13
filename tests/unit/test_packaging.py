"""The wheel carries what the library reads at run time, and the locks split runtime from tools
(issue 44). The wheel itself is built and installed beside Airflow 3.2.1 by `make airflow-range`
(scripts/airflow_range.sh), part of `make test`."""

import fnmatch
import re
import tomllib
from pathlib import Path

from llmbench import paths

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_data_file_of_the_package_is_in_the_wheel():
    globs = PYPROJECT["tool"]["setuptools"]["package-data"]["llmbench"]
    package = ROOT / "include" / "llmbench"
    data = [p.relative_to(package).as_posix() for p in package.rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts]
    assert data, "no data file found: the package moved?"
    missing = [f for f in data if not any(fnmatch.fnmatchcase(f, g) for g in globs)]
    assert not missing, f"not in [tool.setuptools.package-data]: {missing}"
    # the shipped configs are read from inside the package, where the wheel puts them
    assert paths.CONFIG_DIR == package / "config" and (paths.CONFIG_DIR / "local.yaml").is_file()


def test_the_runtime_lock_holds_no_test_or_lint_tool_and_the_dev_lock_does():
    runtime = (ROOT / "requirements.txt").read_text()
    dev = (ROOT / "requirements-dev.txt").read_text()
    tools = r"^(pytest|pytest-timeout|pytest-xdist|ruff|mypy|moto|types-[a-z0-9-]+)=="
    assert not re.findall(tools, runtime, re.M | re.I)
    assert {m.split("==")[0] for m in re.findall(tools, dev, re.M | re.I)} >= {"pytest", "ruff", "mypy", "moto"}
    # one version of each package across the two locks: the dev lock is constrained to the runtime's
    pins = lambda text: dict(re.findall(r"^([A-Za-z0-9_.\-]+)==(\S+)", text, re.M))  # noqa: E731
    shared = pins(runtime).keys() & pins(dev).keys()
    assert {k: pins(dev)[k] for k in shared} == {k: pins(runtime)[k] for k in shared}


def test_dependencies_are_ranges_and_airflow_is_an_extra_from_3_1():
    deps = PYPROJECT["project"]["dependencies"]
    assert deps and not [d for d in deps if "==" in d], deps
    assert not [d for d in deps if d.startswith("apache-airflow")]  # the library imports no Airflow
    assert "apache-airflow>=3.1,<4" in PYPROJECT["project"]["optional-dependencies"]["airflow"]
