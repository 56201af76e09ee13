"""Raw-results retention (llmbench.results.retention) and what a reprocess refuses (llmbench.results.reprocess):
planned folders, no server."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from llmbench import cli
from llmbench.planning.plan import plan
from llmbench.results.reprocess import MEASURED_PLAN, RawResultsMissing, reprocess_run
from llmbench.results.retention import RAW_RESULTS_WEEKS_ENV, prune_raw_results, raw_results_weeks


def test_the_setting_keeps_everything_unless_it_names_whole_weeks(monkeypatch):
    monkeypatch.delenv(RAW_RESULTS_WEEKS_ENV, raising=False)
    assert raw_results_weeks() is None
    monkeypatch.setenv(RAW_RESULTS_WEEKS_ENV, "all")
    assert raw_results_weeks() is None
    monkeypatch.setenv(RAW_RESULTS_WEEKS_ENV, "12")
    assert raw_results_weeks() == 12
    for bad in ("0", "-1", "1.5", "two"):
        monkeypatch.setenv(RAW_RESULTS_WEEKS_ENV, bad)
        with pytest.raises(ValueError, match=RAW_RESULTS_WEEKS_ENV):
            raw_results_weeks()


def test_prune_removes_attempts_planned_before_the_retention_only(tmp_path):
    runs = tmp_path / "runs"
    first = Path(plan("local", "2026-11-22", runs_root=runs).run_dir)
    second = Path(plan("local", "2026-11-29", runs_root=runs).run_dir)
    now = datetime.now(UTC)
    assert prune_raw_results(None, runs) == [] and prune_raw_results(2, runs, now) == []
    assert first.exists() and second.exists()
    later = now + timedelta(weeks=2, hours=1)
    assert prune_raw_results(2, runs, later, dry_run=True) == [first, second] and first.exists()
    assert prune_raw_results(2, runs, later) == [first, second]
    assert not first.exists() and not first.parent.exists()  # the run key's folder went with its last attempt
    assert list(runs.iterdir()) == []


def test_prune_cli_says_what_the_setting_is(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path))
    monkeypatch.delenv(RAW_RESULTS_WEEKS_ENV, raising=False)
    assert cli.main(["prune"]) == 0 and "kept for ever" in capsys.readouterr().out
    monkeypatch.setenv(RAW_RESULTS_WEEKS_ENV, "soon")
    assert cli.main(["prune"]) == 2 and RAW_RESULTS_WEEKS_ENV in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli.main(["prune", "--weeks", "0"])
    assert e.value.code == 2


def test_reprocess_refuses_a_run_whose_request_records_are_gone_and_writes_nothing(tmp_path):
    run = plan("local", "2026-11-29", runs_root=tmp_path / "runs")
    target = run.targets[0]
    target.dir.mkdir(parents=True)
    pd.DataFrame([{"concurrency": 1, "arrival_rate_rps": 0.0}]).to_parquet(target.dir / "levels.parquet")
    before = (Path(run.run_dir) / "plan.json").read_bytes()
    with pytest.raises(RawResultsMissing, match=r"has levels but no request records"):
        reprocess_run(run.run_dir)
    assert (Path(run.run_dir) / "plan.json").read_bytes() == before
    assert not (Path(run.run_dir) / MEASURED_PLAN).exists() and not (Path(run.run_dir) / "tables").exists()
    with pytest.raises(RawResultsMissing, match="does not exist"):
        reprocess_run(tmp_path / "runs" / "gone")
    with pytest.raises(ValueError, match="prices"):
        reprocess_run(run.run_dir, prices="yesterday")


def test_reprocess_cli_refuses_bad_dates_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path))
    assert cli.main(["reprocess", "--from", "2026-13-01", "--to", "2026-12-01"]) == 2
    assert cli.main(["reprocess", "--from", "2026-12-08", "--to", "2026-12-01"]) == 2
    assert "is after" in capsys.readouterr().err
    assert cli.main(["reprocess", "--from", "2026-12-01", "--to", "2026-12-08"]) == 1  # no warehouse yet
    assert "no warehouse at" in capsys.readouterr().err
