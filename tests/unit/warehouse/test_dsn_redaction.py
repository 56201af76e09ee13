"""issue 26 #11: a PostgreSQL DSN's password is never printed, however the connection fails:
libpq quotes what it could not take ("invalid percent-encoded token: ..."), the password
included; warehouse.connect passes the error on redacted, and publish/show/reprocess print that.
Against the real PostgreSQL at 127.0.0.1:5432 (and a port where nothing listens)."""

import psycopg
import pytest

from llmbench import cli, warehouse

PASSWORD = "h26a%zzSecret"  # "%zz" is no percent-encoding: libpq quotes the token it refused
DSNS = [
    f"postgresql://llmbench:{PASSWORD}@127.0.0.1:5432/llmbench",
    f"postgres://llmbench:{PASSWORD}@127.0.0.1:9/llmbench",
    "postgresql://127.0.0.1:5432/llmbench?password=h26aSecret&sslmode=bogus",
]


@pytest.mark.parametrize("dsn", DSNS)
def test_a_failed_connection_never_says_the_password(dsn):
    with pytest.raises(psycopg.Error) as e:
        warehouse.connect(dsn)
    assert "h26a" not in str(e.value) and "127.0.0.1" in str(e.value)  # says where, not how to get in
    assert e.value.__cause__ is None and e.value.__suppress_context__  # the original text is not chained


@pytest.mark.parametrize("command", [["show", "--warehouse"], ["reprocess", "--from", "2026-01-01", "--to",
                                                               "2026-01-02", "--warehouse"]])
def test_show_and_reprocess_print_no_password(command, capsys):
    rc = cli.main([*command, DSNS[0]])
    out = capsys.readouterr()
    assert rc == 1 and "percent-encoded" in out.err  # before: ... token: "h26a%zzSecret"
    assert "h26a" not in out.out + out.err


def test_publish_prints_no_password(tmp_path, monkeypatch, capsys):
    from llmbench import pipeline
    from llmbench.results.tables import build_tables

    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path))
    run_dir = pipeline.run_dir_of(pipeline.plan("openai-example", "2026-12-04", {}))
    build_tables(run_dir)  # a planned run's tables (its target never ran): publish gets as far as connecting
    rc = cli.main(["publish", run_dir, "--warehouse", DSNS[0]])
    out = capsys.readouterr()
    assert rc == 1 and "percent-encoded" in out.err and "h26a" not in out.out + out.err


def test_a_printed_dsn_has_no_password_parameter():
    assert warehouse.redact("postgresql://u:pw@h:5432/db?password=h26aX&sslmode=require") == (
        "postgresql://h:5432/db?password=***&sslmode=require")
