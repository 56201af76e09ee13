"""One class per metric (analysis.metrics.types) is the one source of its column, its header, its
bounds and its line in docs/metrics.md: the level row is exactly the level classes' columns, a
target's row has its lifecycle classes' columns, the warehouse has them all, the report's headers
are the classes', the docs' table is the generated one, and a bound changed on a class changes what
Great Expectations fails."""

import dataclasses
import re
from pathlib import Path

import pandas as pd
import pytest

from llmbench import warehouse
from llmbench.analysis import metrics
from llmbench.analysis.columns import COLUMNS, LEVEL_COLUMNS
from llmbench.analysis.metrics import types
from llmbench.analysis.metrics.types.base import LevelMetric, register
from llmbench.analysis.metrics.levels import LEVEL_ROW
from llmbench.analysis.metrics.types.latency import SendLagMs
from tests.unit.results.test_path_comparison import _records

DOC = Path(__file__).resolve().parents[3] / "docs" / "metrics.md"


def test_the_docs_table_is_the_generated_one():
    doc = DOC.read_text()
    m = re.search(r"<!-- metric-classes:begin[^>]*-->\n(.*?)<!-- metric-classes:end -->", doc, re.S)
    assert m, "docs/metrics.md has no metric-classes block"
    assert m.group(1) == types.markdown_table(), "regenerate it: llmbench.analysis.metrics.types.markdown_table()"
    assert len(types.REGISTRY) >= 20


def test_a_level_row_has_every_class_column_and_the_warehouse_has_them_too(tmp_path):
    row = metrics.summarize_level(_records(3, 120.0, 900.0), 3)
    # the row is the classes' columns, in LEVEL_ROW's order, and nothing else
    assert list(row) == ["concurrency", *(c for m in LEVEL_ROW for c in m.columns())]
    columns = {c for m in types.REGISTRY.values() if issubclass(m, types.LevelBased) for c in m.columns()}
    assert columns == set(row) - {"concurrency"}
    con = warehouse.connect(tmp_path / "w.duckdb")
    try:
        tables = dict(con.execute(
            "SELECT table_name, list(column_name) FROM information_schema.columns WHERE table_schema = 'llmbench' "
            "AND table_name IN ('levels', 'requests', 'targets') GROUP BY table_name").fetchall())
    finally:
        con.close()
    assert columns - set(tables["levels"]) == set()
    per_target = {m.tag for m in types.REGISTRY.values() if issubclass(m, types.TargetMetric)}
    assert per_target and per_target - set(tables["targets"]) == set()
    per_request = {m.tag for m in types.REGISTRY.values() if issubclass(m, types.RequestMetric)
                   and m.in_table}
    assert per_request and per_request - set(tables["requests"]) == set()


def test_each_class_computes_its_column_of_the_row_by_hand():
    recs = _records(4, 100.0, 1100.0)  # 4 streams, 100 tokens each, all sent at 0, the window 1.1 s
    recs[3] = dataclasses.replace(recs[3], ok=False, error_kind="timeout", output_tokens=0)
    row = metrics.summarize_level(recs, 4)
    assert (row["requests_attempted"], row["requests_ok"], row["requests_failed"]) == (4, 3, 1)
    assert row["error_rate"] == 0.25 and row["errors_by_kind"] == '{"timeout": 1}'
    assert row["window_s"] == pytest.approx(1.1) and row["output_tokens_total"] == 300
    assert row["output_tokens_per_s"] == pytest.approx(300 / 1.1)
    assert row["requests_per_s"] == pytest.approx(3 / 1.1)
    assert row["achieved_concurrency"] == pytest.approx(4.0)
    assert row["ttft_ms_p50"] == pytest.approx(100.0) and row["e2e_ms_max"] == pytest.approx(1100.0)


def test_the_reports_headers_and_formats_are_the_classes():
    for m in types.REGISTRY.values():
        for c in m.columns():
            assert (COLUMNS[c].label, COLUMNS[c].kind) == (m.label(c), m.kind_of(c))
    assert COLUMNS["ttft_ms_p50"].label == "TTFT p50 (ms)" and COLUMNS["error_rate"].kind == "pct"
    assert [c for c in LEVEL_COLUMNS if c not in COLUMNS] == []


def test_a_tag_defined_twice_is_refused():
    class Again(LevelMetric):
        tag = "error_rate"
        header = "Again"
        definition = "a second definition of error_rate"

    with pytest.raises(ValueError, match="defined twice"):
        register(Again)
    assert types.REGISTRY["error_rate"].__name__ == "ErrorRate"


def test_a_bound_changed_on_its_class_changes_what_validation_fails(tmp_path, monkeypatch):
    from llmbench.results.validation import validate_results

    recs = [dataclasses.replace(r, send_lag_ms=0.5) for r in _records(2, 100.0, 600.0)]
    pd.DataFrame([r.to_row() for r in recs]).to_parquet(tmp_path / "requests.parquet")
    pd.DataFrame([metrics.summarize_level(recs, 2)]).to_parquet(tmp_path / "levels.parquet")

    def check(name: str) -> dict:
        return validate_results(tmp_path / "requests.parquet", tmp_path / "levels.parquet", [2], 0.05,
                                tmp_path / f"{name}.json")

    assert check("as_is")["validation_passed"]
    monkeypatch.setattr(SendLagMs, "max_value", 0.25)  # a send later than 0.25 ms now fails the target
    out = check("bounded")
    assert not out["validation_passed"] and any("send_lag_ms" in f for f in out["failures"]), out


def test_a_targets_lifecycle_columns_are_its_classes_by_hand():
    from llmbench.analysis.metrics.types.lifecycle import TargetLife
    from llmbench.results.tables.targets import lifecycle_figures

    def ev(stage, status, at, **extra):
        return {"stage": stage, "status": status, "at": f"2026-12-07T10:{at}+00:00", **extra}

    events = [ev("deploy", "created", "00:00", deployed_at="2026-12-07T10:00:00+00:00"),
              ev("wait_ready", "succeeded", "05:00"), ev("sweep", "started", "06:00"), ev("sweep", "succeeded", "16:00")]
    first = _records(1, 250.0, 900.0)
    row = lifecycle_figures(TargetLife(events, 1200.0, first), tuple(
        m for m in types.REGISTRY.values() if issubclass(m, types.TargetMetric)))
    assert row == {"measuring_seconds": 600.0, "measuring_fraction": 0.5, "time_to_ready_s": 300.0,
                   "first_request_ttft_ms": pytest.approx(250.0)}
