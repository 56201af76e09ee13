"""issue 19: reprocessing history from raw results. Two weeks are measured for real (llama-server,
the pipeline's own functions, a DuckDB warehouse); the first as if by older code. The config's SLO
and price then change, and `llmbench reprocess` recomputes both weeks from their stored request
records: SLO figures follow the new thresholds, everything measured stays as it was, prices stay
frozen unless asked, no endpoint starts, and a week whose raw results were pruned is skipped in
one line and left as published."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
import yaml

from llmbench import cli, pipeline, warehouse
from llmbench.analysis import metrics
from llmbench.loadgen.sweep import read_records, records_by_level
from llmbench.planning.plan import plan
from llmbench.results import codeversion
from llmbench.results.retention import prune_raw_results

from .browser import assert_reads_well, open_page
from .conftest import ROOT, llama_server_pids

pytestmark = pytest.mark.integration

WEEKS = ("2026-11-22", "2026-11-29")


def _config(tmp_path: Path, ttft_ms: float, usd_per_hour: float | None = None) -> Path:
    cfg = yaml.safe_load((ROOT / "include/llmbench/config/local.yaml").read_text())
    cfg["name"] = "reprocess"
    cfg["targets"] = cfg["targets"][:1]
    if usd_per_hour is not None:
        cfg["targets"][0]["usd_per_hour"] = usd_per_hour
    cfg.pop("quality")
    cfg["workload"].update(concurrency=[1, 2], requests_per_level=3, warmup_requests=1)
    cfg["slo"] = {"ttft_ms": ttft_ms, "tpot_ms": 100}
    cfg["warehouse"] = {"kind": "duckdb", "path": str(tmp_path / "warehouse.duckdb")}
    path = tmp_path / "reprocess.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _measure(config: Path, date: str) -> str:
    run = plan(str(config), date)
    for target in run.targets:
        handle = pipeline.deploy(target)
        try:
            pipeline.wait_ready(target, handle)
            pipeline.warm_up(target, handle)
            pipeline.validate(target, pipeline.sweep(target, handle))
        finally:
            pipeline.teardown(target, handle)
    run_dir = pipeline.run_dir_of(run.targets)
    pipeline.price_performance(run_dir)
    pipeline.publish(run_dir)
    return run_dir


def _table(db: Path, name: str, order: str) -> pd.DataFrame:
    return warehouse.query(f"SELECT * FROM llmbench.{name} ORDER BY {order}", target=db)


def test_reprocess_recomputes_published_weeks_from_raw_results(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path))
    config = _config(tmp_path, ttft_ms=60_000)
    db = tmp_path / "warehouse.duckdb"
    with monkeypatch.context() as old_code:  # the first week as an older release computed it
        old_code.setattr(codeversion, "code_version", lambda: "0.0.9+old")
        week1 = _measure(config, WEEKS[0])
    week2 = _measure(config, WEEKS[1])
    today = codeversion.code_version()

    requests_before = _table(db, "requests", "run_key, request_index")
    levels_before = _table(db, "levels", "run_key, concurrency")
    pp_before = _table(db, "price_performance", "run_key, concurrency")
    runs_before = _table(db, "runs", "run_key")
    assert runs_before["computed_by"].tolist() == ["0.0.9+old", today]
    assert runs_before["computation"].tolist() == ["measure", "measure"]
    assert pp_before["meets_slo"].all()
    wow = _table(db, "v_week_over_week", "concurrency")
    assert not wow["comparable"].any() and wow["regression"].isna().all()
    assert wow["not_comparable"].str.contains("different code").all()
    # issue 31: the history page of these two weeks (`llmbench history`) and week 2's report, opened
    # as a person would; screenshots in week 2's run folder.
    assert cli.main(["history", "--warehouse", str(db), "--out", str(tmp_path / "history.html")]) == 0
    page = (tmp_path / "history.html").read_text()
    assert "2 week(s), 1 path(s)" in page and "1 week(s) not comparable" in page  # week 2: other code
    history = open_page(tmp_path / "history.html", Path(week2) / "history.png", tmp_path / "chromium-history")
    assert_reads_well(history)
    report = open_page(Path(week2) / "report.html", Path(week2) / "report.png", tmp_path / "chromium-report")
    assert_reads_well(report)
    assert report.winner == "smollm2-q4_1-1slot" and report.headline.startswith(
        "Cheapest path meeting the SLO: smollm2-q4_1-1slot at concurrency")
    events = {p: p.read_bytes() for d in (week1, week2) for p in Path(d).glob("*/events.jsonl")}
    servers = llama_server_pids()

    # A definition changes (the SLO: nothing meets 1 ms to first token) and so does the price.
    config = _config(tmp_path, ttft_ms=1, usd_per_hour=1.0)
    started = datetime.now(UTC)
    assert cli.main(["reprocess", "--from", WEEKS[0], "--to", WEEKS[1], "--config", str(config)]) == 0

    assert llama_server_pids() == servers  # nothing was deployed
    assert {p: p.read_bytes() for p in events} == events  # no stage ran again
    runs = _table(db, "runs", "run_key")
    assert runs["computed_by"].tolist() == [today, today]
    assert runs["computation"].tolist() == ["reprocess", "reprocess"]
    assert runs["reprocess_prices"].tolist() == ["frozen", "frozen"]
    assert (pd.to_datetime(runs["computed_at"], utc=True) >= started).all()
    assert runs["run_dir"].tolist() == runs_before["run_dir"].tolist()  # the same attempts, republished

    # Request-level rows: unchanged, row for row.
    pd.testing.assert_frame_equal(_table(db, "requests", "run_key, request_index"), requests_before)

    # Levels: what was measured is unchanged; what the SLO defines is recomputed from the records.
    levels = _table(db, "levels", "run_key, concurrency")
    for col in ("output_tokens_per_s", "ttft_ms_p50", "itl_ms_mean", "e2e_ms_p99", "window_s", "requests_ok"):
        pd.testing.assert_series_equal(levels[col], levels_before[col])
    assert levels["client_cpu_pct"].to_numpy() == pytest.approx(levels_before["client_cpu_pct"].to_numpy())
    assert (levels_before["goodput_rps"] > 0).all() and (levels["goodput_rps"] == 0).all()
    for run_dir in (week1, week2):  # the same figures summarize_level gives the stored records today
        target_dir = Path(run_dir) / "smollm2-q4_1-1slot"
        for (_, c), recs in records_by_level(read_records(target_dir / "requests.parquet")).items():
            expected = metrics.summarize_level(recs, c, 1, 100)
            got = levels[(levels["run_key"] == Path(run_dir).parent.name) & (levels["concurrency"] == c)]
            assert got["goodput_rps"].item() == expected["goodput_rps"]
            assert got["ttft_ms_p90"].item() == expected["ttft_ms_p90"]

    # Price-performance: judged by the new SLO, at the price each week was measured at.
    pp = _table(db, "price_performance", "run_key, concurrency")
    assert not pp["meets_slo"].any()
    pd.testing.assert_series_equal(pp["usd_per_hour"], pp_before["usd_per_hour"])
    pd.testing.assert_series_equal(pp["usd_per_m_output_tokens"], pp_before["usd_per_m_output_tokens"])
    wow = _table(db, "v_week_over_week", "concurrency")
    assert wow["comparable"].all() and wow["not_comparable"].isna().all()

    # Today's prices, when asked for.
    assert cli.main(["reprocess", "--from", WEEKS[0], "--to", WEEKS[1], "--config", str(config),
                     "--prices", "current"]) == 0
    pp = _table(db, "price_performance", "run_key, concurrency")
    assert (pp["usd_per_hour"] == 1.0).all() and (pp["usd_per_m_output_tokens"] > pp_before["usd_per_m_output_tokens"]).all()
    assert set(_table(db, "runs", "run_key")["reprocess_prices"]) == {"current"}

    # Retention removes week 1's raw results: a reprocess skips it in one line, leaving it as published.
    removed = prune_raw_results(1, now=datetime.now(UTC) + timedelta(weeks=1, days=1))
    assert {str(p) for p in removed} == {week1, week2}  # both planned today: both older than a week by then
    kept = _table(db, "runs", "run_key")
    capsys.readouterr()
    assert cli.main(["reprocess", "--from", WEEKS[0], "--to", WEEKS[0], "--config", str(config)]) == 1
    err = capsys.readouterr().err
    assert f"reprocess-{WEEKS[0]}: skipped: raw results gone: {week1} was pruned by retention" in err
    pd.testing.assert_frame_equal(_table(db, "runs", "run_key"), kept)
