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


def test_retention_skips_an_unreadable_plan_in_one_line_and_prunes_the_rest(tmp_path, monkeypatch, capsys):
    """Issue 26 defect 5: one plan.json that does not validate failed every DAG run's prune."""
    from llmbench import pipeline

    runs = tmp_path / "runs"
    broken = Path(plan("local", "2026-11-15", runs_root=runs).run_dir)
    good = Path(plan("local", "2026-11-22", runs_root=runs).run_dir)
    (broken / "plan.json").write_text('{"run_key": 7}')
    said: list[str] = []
    later = datetime.now(UTC) + timedelta(weeks=2, hours=1)
    assert prune_raw_results(2, runs, later, say=said.append) == [good]
    assert not good.exists() and broken.exists()
    assert len(said) == 1 and str(broken) in said[0] and "\n" not in said[0]
    # the DAG's task and the CLI: the good attempt goes, the broken one is named, nothing raises
    good = Path(plan("local", "2026-11-29", runs_root=runs).run_dir)
    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path))
    monkeypatch.setenv(RAW_RESULTS_WEEKS_ENV, "1")
    assert cli.main(["prune", "--dry-run"]) == 0
    assert pipeline.prune_raw_results().startswith("removed 0 attempt")  # planned just now: nothing expired
    out = capsys.readouterr()
    assert "Traceback" not in out.err and out.err.count(str(broken)) == 1


def test_retention_never_follows_a_symlink_out_of_the_data_folder(tmp_path):
    """Issue 26 defect 8: prune deleted what a symlink under runs/ pointed to, then raised."""
    runs, outside = tmp_path / "runs", tmp_path / "elsewhere"
    elsewhere = Path(plan("local", "2026-11-08", runs_root=outside).run_dir)
    first = Path(plan("local", "2026-11-15", runs_root=runs).run_dir)
    (runs / "linked-key").symlink_to(elsewhere.parent)  # a run key that is a link
    (first.parent / "linked-attempt").symlink_to(elsewhere)  # an attempt that is a link
    later_real = Path(plan("local", "2026-11-22", runs_root=runs).run_dir)
    said: list[str] = []
    later = datetime.now(UTC) + timedelta(weeks=2, hours=1)
    removed = prune_raw_results(2, runs, later, say=said.append)
    assert sorted(removed) == sorted([first, later_real])
    assert (elsewhere / "plan.json").exists()  # what the links point to is untouched
    assert (runs / "linked-key").is_symlink() and (first.parent / "linked-attempt").is_symlink()
    assert len(said) == 2 and all("symlink" in line for line in said)


def test_retention_bounds_its_weeks_in_one_line(tmp_path, monkeypatch, capsys):
    """Issue 26 defect 8: --weeks 99999999999 and LLMBENCH_RAW_RESULTS_WEEKS=5000000 overflowed."""
    from llmbench import pipeline

    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path))
    with pytest.raises(SystemExit) as e:
        cli.main(["prune", "--weeks", "99999999999"])
    assert e.value.code == 2
    monkeypatch.setenv(RAW_RESULTS_WEEKS_ENV, "5000000")
    assert cli.main(["prune"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 2 and "from 1 to" in err
    assert pipeline.prune_raw_results().startswith("nothing pruned: ")  # the DAG's task does not fail
    monkeypatch.setenv(RAW_RESULTS_WEEKS_ENV, "52000")
    assert prune_raw_results(52000, tmp_path / "runs") == []  # the largest allowed: no overflow
