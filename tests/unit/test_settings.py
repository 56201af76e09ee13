"""issue 25 #4: every LLMBENCH_* environment variable is declared once (llmbench.settings), read
when it is used, listed by `llmbench settings` and tabulated in docs/operations.md; no other
module reads one from the environment."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import llmbench
from llmbench import cli, paths
from llmbench.errors import SettingsError
from llmbench.settings import ENV_VARS, Settings, markdown_table, settings

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(llmbench.__file__).parent
NAME = re.compile(r"^LLMBENCH_[A-Z0-9_]+$")


def _reads_llmbench_env(path: Path) -> bool:
    """The module touches the environment (os.environ, os.getenv, environ) and names an
    LLMBENCH_* variable: it reads the variable itself."""
    tree = ast.parse(path.read_text())
    env = any(
        (isinstance(n, ast.Attribute) and n.attr in ("environ", "getenv"))
        or (isinstance(n, ast.Name) and n.id in ("environ", "getenv"))
        or (isinstance(n, ast.alias) and n.name in ("environ", "getenv"))
        for n in ast.walk(tree)
    )
    names = any(isinstance(n, ast.Constant) and isinstance(n.value, str) and NAME.match(n.value) for n in ast.walk(tree))
    return env and names


def test_no_module_but_settings_reads_an_llmbench_variable():
    files = [p for p in PACKAGE.rglob("*.py") if "testing" not in p.relative_to(PACKAGE).parts]
    files += sorted((ROOT / "dags").glob("*.py")) + sorted((ROOT / "plugins").glob("*.py"))
    readers = [str(p.relative_to(ROOT)) for p in files if _reads_llmbench_env(p) and p.name != "settings.py"]
    assert readers == []
    assert "os.environ" in (PACKAGE / "settings.py").read_text()  # where they are read


@pytest.mark.parametrize(
    "source",
    [
        'LOCK_WAIT_S = float(__import__("os").environ.get("LLMBENCH_WAREHOUSE_LOCK_WAIT_S", "120"))',
        'import os\nHOME = os.getenv("LLMBENCH_HOME")',
        'from os import environ\nCHAOS = environ["LLMBENCH_CHAOS"]',
    ],
)
def test_the_check_catches_a_module_reading_one(tmp_path, source):
    p = tmp_path / "m.py"
    p.write_text(source)
    assert _reads_llmbench_env(p)


def test_every_llmbench_variable_the_project_names_is_a_setting():
    """The scripts, the DAGs, the library, the compose file and the Makefile: each LLMBENCH_*
    name they use is declared (tests have their own, LLMBENCH_TEST_PG)."""
    sources = [*PACKAGE.rglob("*.py"), *(ROOT / "dags").glob("*.py"), *(ROOT / "plugins").glob("*.py"),
               *(ROOT / "scripts").glob("*.sh"), ROOT / "Makefile", ROOT / "docker-compose.yaml", ROOT / "Dockerfile"]
    used = {m for p in sources if p.exists() for m in re.findall(r"\bLLMBENCH_[A-Z0-9_]+\b", p.read_text())}
    assert used - {"LLMBENCH_"} <= set(ENV_VARS.values()), sorted(used - set(ENV_VARS.values()))


def test_values_are_read_when_used_not_at_import(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path / "a"))
    assert paths.data_home() == (tmp_path / "a").resolve()
    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path / "b"))
    assert paths.default_warehouse_path() == (tmp_path / "b").resolve() / "warehouse.duckdb"
    monkeypatch.setenv("LLMBENCH_HOME", "")  # empty: unset
    assert paths.data_home() == paths.PROJECT_ROOT / ".llmbench"


def test_types_defaults_and_one_line_refusals():
    assert Settings.from_env({}) == Settings()
    s = Settings.from_env({"LLMBENCH_RAW_RESULTS_WEEKS": "12", "LLMBENCH_WAREHOUSE_LOCK_WAIT_S": "2.5",
                           "LLMBENCH_CHAOS": '[{"target": "x", "stage": "sweep", "action": "raise"}]'})
    assert (s.raw_results_weeks, s.warehouse_lock_wait_s, s.chaos[0]["stage"]) == (12, 2.5, "sweep")
    assert Settings.from_env({"LLMBENCH_RAW_RESULTS_WEEKS": "all"}).raw_results_weeks is None
    for var, bad, says in [
        ("LLMBENCH_RAW_RESULTS_WEEKS", "soon", "'soon' is not a whole number of weeks from 1 to 52000, or 'all'"),
        ("LLMBENCH_WAREHOUSE_LOCK_WAIT_S", "abc", "valid number"),
        ("LLMBENCH_WAREHOUSE_LOCK_WAIT_S", "nan", "finite number"),
        ("LLMBENCH_CHAOS", "[{", "Invalid JSON"),
    ]:
        with pytest.raises(SettingsError) as e:
            Settings.from_env({var: bad})
        assert str(e.value).startswith(f"{var}: ") and says in str(e.value) and "\n" not in str(e.value)
        assert isinstance(e.value, ValueError) and e.value.exit_code == 2
    # one unusable variable fails where it is read, not everywhere
    assert Settings.from_env({"LLMBENCH_CHAOS": "[{", "LLMBENCH_HOME": "/x"}, fields=["home"]).home == Path("/x")


def test_llmbench_settings_lists_every_variable_with_its_value(monkeypatch, capsys):
    monkeypatch.setenv("LLMBENCH_RAW_RESULTS_WEEKS", "7")
    assert cli.main(["settings"]) == 0
    out = capsys.readouterr().out
    listed = {line.split()[0]: line.split(None, 1)[1] for line in out.splitlines() if line.startswith("LLMBENCH_")}
    assert list(listed) == list(ENV_VARS.values())
    assert listed["LLMBENCH_RAW_RESULTS_WEEKS"] == "7"
    assert listed["LLMBENCH_SCHEDULE"] == "@weekly (default)"
    for info in Settings.model_fields.values():
        assert info.description and info.description in out
    monkeypatch.setenv("LLMBENCH_WAREHOUSE_LOCK_WAIT_S", "soon")
    assert cli.main(["settings"]) == 2
    assert capsys.readouterr().err.startswith("llmbench settings: LLMBENCH_WAREHOUSE_LOCK_WAIT_S: ")


def test_help_points_at_the_settings(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "llmbench settings" in capsys.readouterr().out


def test_a_variable_read_at_import_is_refused_in_one_line_by_the_command_that_reads_it(tmp_path):
    db = tmp_path / "w.duckdb"
    env = {**os.environ, "LLMBENCH_WAREHOUSE_LOCK_WAIT_S": "soon", "PYTHONPATH": str(PACKAGE.parent)}
    r = subprocess.run([sys.executable, "-m", "llmbench.cli.main", "show", "--warehouse", str(db)],
                       capture_output=True, text=True, env=env, timeout=120)
    err = [line for line in r.stderr.splitlines() if "RuntimeWarning" not in line]
    assert r.returncode == 2 and err == ["llmbench show: LLMBENCH_WAREHOUSE_LOCK_WAIT_S: Input should be a valid "
                                         "number, unable to parse string as a number"], r.stderr


def test_docs_tabulate_the_settings():
    assert markdown_table() in (ROOT / "docs" / "operations.md").read_text()


def test_settings_reads_the_environment_each_call(monkeypatch):
    monkeypatch.setenv("LLMBENCH_SCHEDULE", "none")
    assert settings("schedule").schedule == "none"
    monkeypatch.delenv("LLMBENCH_SCHEDULE")
    assert settings().schedule == "@weekly"
