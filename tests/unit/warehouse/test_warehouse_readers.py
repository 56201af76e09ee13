"""issue 18 #5: a BI tool holding the DuckDB warehouse open (even read-only) must not break
`llmbench show` (read-only, no migration) nor fail a publish outright (it waits with backoff for
a bounded time, then says in one line who holds the file)."""

import subprocess
import sys
import time

import pytest

from llmbench import cli, warehouse
from tests.unit.warehouse.test_warehouse import frames

HOLD = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1], read_only=sys.argv[2] == "ro")
print("holding", flush=True)
time.sleep(float(sys.argv[3]))
"""


class Reader:
    """Another process holding the file open (a dashboard), for hold_s seconds or until stopped."""

    def __init__(self, path, mode="ro", hold_s=120.0):
        self.proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path), mode, str(hold_s)],
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "holding"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def published(tmp_path):
    db = tmp_path / "w.duckdb"
    warehouse.publish(frames("k1"), db)
    return db


def test_show_reads_while_a_bi_tool_holds_the_file_read_only(published, capsys):
    with Reader(published, "ro"):
        rc = cli.main(["show", "--warehouse", str(published), "--run-key", "k1"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "llmbench run k1: succeeded" in out


def test_show_does_not_migrate(tmp_path, capsys):
    """An old or foreign DuckDB file is read as it is: show never writes to it."""
    import duckdb

    db = tmp_path / "empty.duckdb"
    duckdb.connect(str(db)).close()
    before = db.read_bytes()
    rc = cli.main(["show", "--warehouse", str(db)])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert db.read_bytes() == before


def test_show_of_a_file_that_is_no_warehouse_is_one_line(tmp_path, capsys):
    db = tmp_path / "junk.duckdb"
    db.write_text("not a database\n" * 10)
    assert cli.main(["show", "--warehouse", str(db)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("llmbench show: cannot read the warehouse") and err.count("\n") == 1


def test_publish_waits_for_a_reader_then_names_the_holder(published, monkeypatch):
    monkeypatch.setattr(warehouse.store, "LOCK_WAIT_S", 1.0)
    with Reader(published, "ro") as reader:
        t0 = time.monotonic()
        with pytest.raises(warehouse.WarehouseBusy) as e:
            warehouse.publish(frames("k2"), published)
        waited = time.monotonic() - t0
    msg = str(e.value)
    assert "\n" not in msg and f"(PID {reader.proc.pid})" in msg and str(published) in msg
    assert 0.5 <= waited < 10


def test_publish_succeeds_once_the_reader_lets_go(published, monkeypatch):
    monkeypatch.setattr(warehouse.store, "LOCK_WAIT_S", 30.0)
    with Reader(published, "ro", hold_s=1.5):
        written = warehouse.publish(frames("k2", n_levels=3), published)
    assert written["levels"] == 3
    assert warehouse.query("SELECT count(*) AS n FROM llmbench.levels WHERE run_key='k2'", target=published)["n"][0] == 3
