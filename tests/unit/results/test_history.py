"""The history page, built from a real DuckDB warehouse: weekly $/M at the SLO per path, the
regressions v_week_over_week judges marked, weeks computed by other code shown as not comparable."""

import json
import re

import pytest

from llmbench import warehouse
from llmbench.results.history import history_weeks, load_history, write_history

from tests.unit.warehouse.test_warehouse import _pp_run


@pytest.fixture
def three_weeks(tmp_path):
    """g6e: 1000 tok/s, then 800 (-20 %: a regression), then 800 again but computed by other code
    (not comparable); g7e steady. Both meet the SLO at concurrency 16 only."""
    db = tmp_path / "w.duckdb"
    for key, date, g6e_tps, code in (("w1", "2026-11-16", 1000.0, "c1"), ("w2", "2026-11-23", 800.0, "c1"),
                                     ("w3", "2026-11-30", 800.0, "c2")):
        rows = [("g6e", "qwen", "ml.g6e.12xlarge", 16, g6e_tps, 13.12, True),
                ("g6e", "qwen", "ml.g6e.12xlarge", 64, 2 * g6e_tps, 13.12, False),
                ("g7e", "qwen", "ml.g7e.2xlarge", 16, 500.0, 4.20, True)]
        warehouse.publish(_pp_run(key, date, rows, computed_by=code), db)
    return db


def test_each_week_has_the_cheapest_level_at_the_slo_and_its_judgement(three_weeks):
    weeks = {(w.path, w.week): w for w in history_weeks(*load_history(three_weeks))}
    assert sorted({w for _, w in weeks}) == ["2026-11-16", "2026-11-23", "2026-11-30"]
    g6e = [weeks[("g6e (ml.g6e.12xlarge)", d)] for d in ("2026-11-16", "2026-11-23", "2026-11-30")]
    # the level that misses the SLO (c=64, twice as cheap) is not the week's figure
    assert g6e[0].usd_per_m_at_slo == pytest.approx(13.12 / (1000 * 3600) * 1e6)
    assert [w.regression for w in g6e] == [False, True, False]
    assert "regression at concurrency 16: $/M 25.0 %, output tok/s -20.0 %" in g6e[1].detail
    assert g6e[2].not_comparable and "different code (c1 then c2)" in g6e[2].not_comparable
    g7e = weeks[("g7e (ml.g7e.2xlarge)", "2026-11-23")]
    assert not g7e.regression and g7e.not_comparable is None and g7e.detail == ""


def test_the_page_draws_one_trend_per_path_and_names_regressions(three_weeks, tmp_path):
    page = write_history(tmp_path / "history.html", three_weeks).read_text()
    spec = json.loads(re.search(r"Plotly.newPlot\('chart1', (\{.*?\})\.data", page).group(1))
    traces = {t["name"]: t for t in spec["data"]}
    assert set(traces) == {"g6e (ml.g6e.12xlarge)", "g7e (ml.g7e.2xlarge)"}
    assert traces["g6e (ml.g6e.12xlarge)"]["x"] == ["2026-11-16", "2026-11-23", "2026-11-30"]
    assert traces["g6e (ml.g6e.12xlarge)"]["marker"]["symbol"] == ["circle", "x", "circle-open"]
    assert "1 regression(s)" in page and "2 week(s) not comparable" in page  # g6e and g7e in week 3
    assert "▲ REGRESSION: regression at concurrency 16" in page and "not comparable: computed by different code" in page


def test_an_empty_warehouse_says_so(tmp_path):
    db = tmp_path / "w.duckdb"
    warehouse.connect(db).close()
    page = write_history(tmp_path / "history.html", db).read_text()
    assert "No run is published in this warehouse yet." in page and "Plotly.newPlot" not in page
