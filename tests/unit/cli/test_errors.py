"""issue 25 #3: one exception root (llmbench.errors.LlmbenchError) and one place, cli.main, that
turns an error raised inside any command into its exit status and one line, without a traceback."""

import importlib

import pytest

from llmbench import cli
from llmbench.cli import commands
from llmbench.cli.commands import rebuild
from llmbench.errors import EXIT_STATUSES, InputError, LlmbenchError, SettingsError, SomeRequestsFailed, exit_status_help

# The modules that declare user-facing errors (importing them registers the subclasses).
DECLARING = ["llmbench.backends.base", "llmbench.backends.local.smoke", "llmbench.chaos", "llmbench.pipeline",
             "llmbench.planning.config", "llmbench.results.reprocess", "llmbench.warehouse.schema",
             "llmbench.warehouse.store"]
for _m in DECLARING:
    importlib.import_module(_m)


def _subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


ERRORS = sorted({LlmbenchError, *_subclasses(LlmbenchError)}, key=lambda c: f"{c.__module__}.{c.__name__}")
EXPECTED = {  # each user-facing error: its exit status, and the old base code still catches it by
    "llmbench.schemas.kinds.ConfigError": (2, ValueError),
    "llmbench.errors.SettingsError": (2, ValueError),
    "llmbench.errors.InputError": (2, Exception),
    "llmbench.backends.base.DeployError": (1, RuntimeError),
    "llmbench.warehouse.store.WarehouseBusy": (1, RuntimeError),
    "llmbench.warehouse.schema.MigrationError": (1, RuntimeError),
    "llmbench.results.reprocess.RawResultsMissing": (1, RuntimeError),
    "llmbench.pipeline.TargetFailed": (1, RuntimeError),
    "llmbench.chaos.InjectedFault": (1, RuntimeError),
    "llmbench.backends.local.smoke.SmokeFailed": (1, Exception),
    "llmbench.errors.SomeRequestsFailed": (3, Exception),
    "llmbench.errors.LlmbenchError": (1, Exception),
}


def test_every_user_facing_error_has_the_one_root_its_status_and_its_old_base():
    got = {f"{c.__module__}.{c.__name__}": c for c in ERRORS}
    assert set(EXPECTED) <= set(got), sorted(set(EXPECTED) - set(got))
    for name, (code, base) in EXPECTED.items():
        assert got[name].exit_code == code and issubclass(got[name], base), name


@pytest.mark.parametrize("error", ERRORS, ids=lambda c: c.__name__)
def test_an_error_raised_inside_a_command_is_its_status_and_one_line(error, tmp_path, monkeypatch, capsys):
    def fails(a):
        raise error("what went wrong\n  and the detail below it")

    monkeypatch.setattr(rebuild, "run", fails)
    rc = cli.main(["rebuild", str(tmp_path)])
    captured = capsys.readouterr()
    assert rc == error.exit_code
    assert captured.err == "llmbench rebuild: what went wrong\n" and "Traceback" not in captured.err


def test_an_error_without_a_message_says_its_kind(monkeypatch, capsys):
    def fails(a):
        raise SettingsError()

    monkeypatch.setattr(rebuild, "run", fails)
    assert cli.main(["rebuild", "x"]) == 2 and capsys.readouterr().err == "llmbench rebuild: SettingsError\n"


def test_an_error_that_is_not_llmbenchs_is_not_swallowed(monkeypatch):
    """Only the tree's errors are the contract's; a bug still shows its traceback."""

    def fails(a):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(rebuild, "run", fails)
    with pytest.raises(ZeroDivisionError):
        cli.main(["rebuild", "x"])


def test_every_command_raises_through_the_one_handler(tmp_path, monkeypatch, capsys):
    """Each command module's run is what the parser calls: the handler sees whatever any raises."""
    argv = {"sweep": ["--out", str(tmp_path / "o")], "publish": ["d"], "rebuild": ["o"],
            "reprocess": ["--from", "2026-01-01", "--to", "2026-01-02"]}
    for command in commands.COMMANDS:
        name = command.__name__.rsplit(".", 1)[1]

        def fails(a, name=name):
            raise InputError(f"refused by {name}")

        monkeypatch.setattr(command, "run", fails)
        assert cli.main([name, *argv.get(name, [])]) == 2
        assert capsys.readouterr().err == f"llmbench {name}: refused by {name}\n"


def test_help_prints_the_statuses_the_error_classes_declare(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert exit_status_help() in out
    codes = [code for code, _ in EXIT_STATUSES]
    assert codes == ["0", "1", "2", "3", "130"]
    assert (LlmbenchError.exit_code, InputError.exit_code, SomeRequestsFailed.exit_code) == (1, 2, 3)
