"""`llmbench history`: the page from a warehouse, to the data folder by default; a missing
warehouse is one line and exit status 1, not a traceback."""

from llmbench import cli, warehouse

from tests.unit.warehouse.test_warehouse import _pp_run


def test_history_writes_the_page_of_the_warehouse_to_the_data_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path))
    db = tmp_path / "warehouse.duckdb"
    for key, date in (("w1", "2026-11-23"), ("w2", "2026-11-30")):
        warehouse.publish(_pp_run(key, date, [("g7e", "qwen", "ml.g7e.2xlarge", 16, 500.0, 4.20, True)]), db)
    assert cli.main(["history"]) == 0
    page = tmp_path / "history.html"
    assert capsys.readouterr().out.strip() == f"history page written to {page}"
    assert "2 week(s), 1 path(s)" in page.read_text()
    out = tmp_path / "elsewhere" / "h.html"
    assert cli.main(["history", "--warehouse", str(db), "--out", str(out)]) == 0 and out.exists()


def test_history_without_a_warehouse_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path))
    assert cli.main(["history"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"llmbench history: no warehouse at {tmp_path / 'warehouse.duckdb'}" and not (tmp_path / "history.html").exists()
