"""issue 31: the report and the history page opened in headless Chromium at 1,366 px, as a person
would: the headline names the winning target, every chart drew (an SVG), no script or console
error, no sideways scrolling; a full-page screenshot of each in the run folder. In seconds: the
report of a three-target run's tables and the history of three published weeks (the real DAG's
report is opened the same way in test_dag_run, two real weeks' history in test_reprocess)."""

import pytest

from llmbench.results.history import write_history
from llmbench.results.report import REPORT_MAX_BYTES, write_report

from tests.unit.results.test_history import three_weeks  # noqa: F401 (a fixture)
from tests.unit.results.test_report import _frames

from .browser import assert_reads_well, open_page

pytestmark = pytest.mark.integration


def test_report_reads_well_in_a_browser(tmp_path):
    run_dir = tmp_path / "runs" / "k" / "attempt"
    run_dir.mkdir(parents=True)
    report = write_report(_frames(run_dir, gates={"c": False}, failed="g6e"), run_dir / "report.html")
    assert report.stat().st_size < REPORT_MAX_BYTES
    view = open_page(report, run_dir / "report.png", tmp_path / "chromium")
    assert_reads_well(view)
    assert view.charts == 7 and view.winner == "a"
    assert view.headline.startswith("Cheapest path meeting the SLO: a at concurrency 4")
    assert (run_dir / "report.png").stat().st_size > 100_000  # a drawn page, not a blank one


def test_history_reads_well_in_a_browser(three_weeks, tmp_path):  # noqa: F811
    page = write_history(tmp_path / "history.html", three_weeks)
    view = open_page(page, tmp_path / "history.png", tmp_path / "chromium")
    assert_reads_well(view)
    assert view.charts == 1 and view.headline is None
    assert (tmp_path / "history.png").stat().st_size > 30_000
