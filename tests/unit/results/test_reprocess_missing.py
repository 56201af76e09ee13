"""Issue 26 defect 2: a reprocess never drops a published row it cannot recompute. A run is
published from synthetic raw results (request records and levels as a sweep writes them, no
server); then one target's folder goes, or the whole data folder moves."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from llmbench import cli, pipeline, warehouse
from llmbench.loadgen.sweep import level_row
from llmbench.planning.plan import plan
from llmbench.results.reprocess import RawResultsMissing, check_raw_results, reprocess_range
from llmbench.results.tables import build_tables
from llmbench.schemas.records import to_table
from tests.unit.analysis.test_metrics import rec

DATE = "2026-11-29"


def _publish(home: Path) -> tuple[Path, Path]:
    """A planned run of the shipped `local` config whose targets each swept one level, published."""
    run = plan("local", DATE, runs_root=home / "runs")
    for t in run.targets:
        t.dir.mkdir(parents=True)
        events = [{"stage": s, "status": "succeeded", "at": "2026-11-29T12:00:00+00:00"}
                  for s in ("deploy", "wait_ready", "warm_up", "sweep", "validate")]
        (t.dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
        recs = [rec(0, [100, 110], 120, 2), rec(120, [200, 210], 220, 2)]
        recs[1].request_index = 1
        pq.write_table(to_table(recs), t.dir / "requests.parquet")
        pd.DataFrame([level_row(recs, 1, 0.0, t.slo, 0.01, 1, {})]).to_parquet(t.dir / "levels.parquet")
    run_dir = Path(run.run_dir)
    db = home / "warehouse.duckdb"
    warehouse.publish(build_tables(str(run_dir)), db)
    return run_dir, db


def _levels(db: Path) -> list[str]:
    return sorted(warehouse.query("SELECT target_id FROM llmbench.levels", [], target=db)["target_id"])


def test_a_target_folder_gone_skips_the_run_and_keeps_its_published_rows(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path))
    run_dir, db = _publish(tmp_path)
    before = _levels(db)
    assert len(set(before)) == 2
    gone = run_dir / before[0]
    shutil.rmtree(gone)
    with pytest.raises(RawResultsMissing, match=f"{gone} is missing"):
        check_raw_results(run_dir)
    assert cli.main(["reprocess", "--from", DATE, "--to", DATE, "--warehouse", str(db)]) == 1
    out = capsys.readouterr().err
    assert "Traceback" not in out and "skipped: raw results incomplete" in out
    assert "reprocessed 0 run(s), skipped 1" in out
    assert _levels(db) == before  # the last copy of its rows is still there
    with pytest.raises(RawResultsMissing):  # the DAG's reprocess refuses at plan, before writing anything
        pipeline.plan("local", DATE, {}, mode="reprocess")


def test_a_moved_data_folder_reprocesses_from_where_it_is_now(tmp_path, monkeypatch, capsys):
    run_dir, db = _publish(tmp_path / "old")
    before = _levels(db)
    (tmp_path / "old").rename(tmp_path / "new")  # plan.json still names /old/... absolute folders
    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path / "new"))
    db = tmp_path / "new" / "warehouse.duckdb"
    moved = tmp_path / "new" / run_dir.relative_to(tmp_path / "old")
    assert {t.dir.parent for t in check_raw_results(moved).targets} == {moved}
    targets = pipeline.plan("local", DATE, {}, mode="reprocess")  # the DAG's reprocess finds it too
    assert pipeline.run_dir_of(targets) == str(moved)
    outcomes = reprocess_range(db, DATE, DATE)
    assert [o.status for o in outcomes] == ["reprocessed"], outcomes
    assert _levels(db) == before
    assert warehouse.query("SELECT run_dir FROM llmbench.runs", [], target=db)["run_dir"].tolist() == [str(moved)]
    assert not (tmp_path / "old").exists()
