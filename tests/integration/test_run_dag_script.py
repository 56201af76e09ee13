"""issue 18 #7: `make run CONFIG=<path>` (scripts/run_dag.sh) looks up the run key of the
config's `name`, not of its path, and names its log after it. Airflow is a stand-in here: the
script's own steps (naming, the final `llmbench show`) are what is tested."""

import os
import subprocess
import sys

import yaml

from llmbench import paths, warehouse
from tests.unit.warehouse.test_warehouse import frames

from .conftest import ROOT


def _bin(tmp_path):
    """Stand-ins for .venv/bin: the real python and llmbench (this work tree's), a no-op airflow."""
    b = tmp_path / "bin"
    b.mkdir()
    (b / "python").symlink_to(sys.executable)
    (b / "llmbench").write_text(f"#!/bin/sh\nexec {sys.executable} -m llmbench.cli.main \"$@\"\n")
    (b / "airflow").write_text("#!/bin/sh\necho '[DAG TEST] starting stand-in'\nexit 0\n")
    for f in ("llmbench", "airflow"):
        (b / f).chmod(0o755)
    return b


def test_a_config_path_runs_under_its_name(tmp_path):
    cfg = yaml.safe_load((paths.CONFIG_DIR / "local.yaml").read_text())
    cfg["name"] = "mine"
    config = tmp_path / "configs" / "mine.yaml"
    config.parent.mkdir()
    config.write_text(yaml.safe_dump(cfg))
    home = tmp_path / "home"
    f = frames("mine-2026-08-31")
    warehouse.publish(f, home / "warehouse.duckdb")  # what the DAG would have published
    env = {**os.environ, "LLMBENCH_HOME": str(home), "LLMBENCH_BIN": str(_bin(tmp_path)),
           "PYTHONPATH": str(ROOT / "include") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run(["scripts/run_dag.sh", "2026-08-31", str(config)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "llmbench run mine-2026-08-31: succeeded" in r.stdout
    logs = list((home / "logs").rglob("*.log"))
    assert [p.relative_to(home / "logs").as_posix() for p in logs] == ["llm_benchmark-mine-2026-08-31.log"]


def test_an_unknown_config_is_refused_in_one_line(tmp_path):
    env = {**os.environ, "LLMBENCH_HOME": str(tmp_path), "LLMBENCH_BIN": str(_bin(tmp_path)),
           "PYTHONPATH": str(ROOT / "include") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run(["scripts/run_dag.sh", "2026-08-31", "no/such.yaml"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "unknown config" in r.stderr
