"""The warehouse a BI tool queries, frozen: every table's and view's columns and types on a fresh
DuckDB file, against schema_snapshot.json. Written by the layout before the package was split into
subpackages (commit 7918dce, migrations then in include/sql with eight files numbered 015), so the
renumbered migrations are shown to build the same warehouse. A migration that means to change it
regenerates the snapshot (LLMBENCH_TEST_WRITE_SNAPSHOT=1) in the same commit."""

import json
import os
from pathlib import Path

from llmbench import warehouse

SNAPSHOT = Path(__file__).with_name("schema_snapshot.json")


def test_a_fresh_warehouse_has_the_snapshots_tables_views_and_columns(tmp_path):
    con = warehouse.connect(tmp_path / "w.duckdb")
    try:
        rows = con.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = "
            "'llmbench' AND table_name <> 'schema_migrations' ORDER BY table_name, ordinal_position").fetchall()
    finally:
        con.close()
    got: dict[str, list[list[str]]] = {}
    for table, column, data_type in rows:
        got.setdefault(table, []).append([column, data_type])
    if os.environ.get("LLMBENCH_TEST_WRITE_SNAPSHOT") == "1":
        SNAPSHOT.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    want = json.loads(SNAPSHOT.read_text())
    assert sorted(got) == sorted(want)
    for table in want:
        assert got[table] == want[table], table
