"""The comparison a user came for (issue 14 item 6), from a run's raw results to the warehouse
views and the report: a run mixing local, ec2, sagemaker, openai and two per-token (bedrock)
paths, its raw results written as the sweep writes them, its tables built by build_tables,
published into a real DuckDB file and a real PostgreSQL database."""

import copy
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from llmbench import warehouse
from llmbench.analysis import metrics
from llmbench.loadgen.sweep import level_row, write_requests
from llmbench.planning.config import ConfigError
from llmbench.planning.plan import plan
from llmbench.results import tables
from llmbench.results.report import write_report
from llmbench.schemas.records import RequestRecord
from llmbench.schemas.targets import RunPlan

from tests.unit.warehouse.test_warehouse import pg_database  # noqa: F401 (a fixture)

DATE = "2026-11-30"
MS = 1_000_000  # ns

CONFIG = {
    "name": "paths-compared",
    "sagemaker": {"region": "us-east-2", "precision_policy": "warn"},
    "ec2": {"region": "us-east-2"},  # precision_policy warn: int4 on the L4 is widened, with a warning
    "bedrock": {"region": "us-east-1"},
    "workload": {"input_tokens": 400, "output_tokens": 100, "concurrency": [1, 2], "requests_per_level": 2},
    "slo": {"ttft_ms": 500, "tpot_ms": 100},
    "targets": [
        {"id": "local-cpu", "backend": "local", "instance_type": "local-cpu-2c", "model": "smollm2-135m-instruct",
         "precision": "q4_1", "serving": {"kind": "llama-server", "name": "ls-1slot"}},
        {"id": "g6", "backend": "ec2", "instance_type": "g6.xlarge", "model": "gemma-4-e2b", "precision": "int4",
         "serving": {"kind": "vllm", "name": "vllm-int4", "container": "vllm-openai-0.15.1",
                     "quantization": "bitsandbytes", "max_model_len": 4096}},
        {"id": "ml-g6", "backend": "sagemaker", "instance_type": "ml.g6.xlarge", "model": "gemma-4-e2b",
         "precision": "bf16", "serving": {"kind": "vllm", "name": "vllm-bf16"}},
        {"id": "mine", "backend": "openai", "model": "qwen3-32b", "usd_per_hour": 1.5,
         "price_source": "reserved instance quote Q-17", "price_date": "2026-11-02",
         "serving": {"kind": "openai", "name": "vllm-mine", "base_url": "http://127.0.0.1:8001/v1"}},
        {"id": "nova", "backend": "bedrock", "model": "nova-micro",
         "serving": {"kind": "bedrock", "name": "nova", "api": "bedrock-nova-micro"}},
        {"id": "nova-dear", "backend": "bedrock", "model": "nova-micro",
         "serving": {"kind": "bedrock", "name": "nova-dear", "api": "bedrock-nova-micro"}},
    ],
}

# Per target and concurrency: (TTFT ms, e2e ms) of each request of 100 output and 400 input tokens.
# ttft above 500 ms misses the SLO. g6 at c=2 is its fastest level but misses the SLO.
TIMINGS = {
    "local-cpu": {1: (200, 2000), 2: (300, 1500)},
    "g6": {1: (100, 1000), 2: (900, 1200)},
    "ml-g6": {1: (340, 1240), 2: (420, 1000)},
    "mine": {1: (50, 500), 2: (60, 400)},
    "nova": {1: (150, 800), 2: (150, 800)},
    "nova-dear": {1: (150, 800), 2: (150, 800)},
}


def _records(c: int, ttft_ms: float, e2e_ms: float) -> list[RequestRecord]:
    """c streams, each one request, all sent at 0: the level's window is e2e_ms."""
    content = [round(ttft_ms * MS + i * (e2e_ms - ttft_ms) * MS / 99) for i in range(100)]
    t = metrics.request_timings(0, content, round(e2e_ms * MS), 100)
    return [RequestRecord(
        concurrency=c, request_index=i, worker=i, ok=True, error_kind=None, error_detail=None, http_status=200,
        send_ns=0, first_content_ns=content[0], end_ns=round(e2e_ms * MS), send_lag_ms=0.0, ttft_ms=t["ttft_ms"],
        e2e_ms=t["e2e_ms"], tpot_ms=t["tpot_ms"], itl_ms=t["itl_ms"], content_chunks=100, output_tokens=100,
        output_tokens_source="usage", output_tokens_counted=100, input_tokens=400, finish_reason="length", repeat=0,
        arrival_rate_rps=0.0, send_retried=False) for i in range(c)]


def _measured(run: RunPlan, concurrencies=(1, 2)) -> None:
    """Each target's folder as a finished target leaves it: events, validation, teardown, Parquet
    (at the given levels)."""
    for t in run.targets:
        t.dir.mkdir(parents=True)
        events = [{"stage": s, "status": "succeeded", "at": "2026-11-30T00:00:00+00:00"}
                  for s in ("deploy", "wait_ready", "warm_up", "sweep", "validate", "teardown")]
        (t.dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
        (t.dir / "validation.json").write_text(json.dumps({"validation_passed": True}))
        (t.dir / "teardown.json").write_text(json.dumps({"endpoint_seconds": 600.0}))
        groups = {(0.0, c): _records(c, *TIMINGS[t.target_id][c]) for c in concurrencies}
        write_requests(t.dir / "requests.parquet", groups)
        rows = [level_row(recs, c, None, t.slo) for (_, c), recs in groups.items()]
        pd.DataFrame(rows).to_parquet(t.dir / "levels.parquet", index=False)


@pytest.fixture
def run_frames(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path / "home"))  # no refreshed Pricing API cache
    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text(yaml.safe_dump(CONFIG))
    run = plan(str(cfg_path), DATE, runs_root=tmp_path / "runs")
    # The second per-token path at twice nova's list prices (the catalog has one Bedrock API).
    plan_json = Path(run.run_dir) / "plan.json"
    raw = json.loads(plan_json.read_text())
    dear = next(t for t in raw["targets"] if t["target_id"] == "nova-dear")
    dear["price"]["usd_per_m_input_tokens"] *= 2
    dear["price"]["usd_per_m_output_tokens"] *= 2
    plan_json.write_text(json.dumps(raw))
    run = RunPlan.load(run.run_dir)
    _measured(run)
    return run, tables.build_tables(run.run_dir)


@pytest.fixture(params=["duckdb", "postgres"])
def db(request, tmp_path):
    if request.param == "duckdb":
        return tmp_path / "w.duckdb"
    import psycopg

    dsn = request.getfixturevalue("pg_database")
    with psycopg.connect(dsn, autocommit=True) as con:
        con.execute("DROP SCHEMA IF EXISTS llmbench CASCADE")
    return dsn


def q(db, sql, *params):
    return warehouse.query(sql, list(params), db)


def test_plan_warning_and_the_configs_price_source_reach_the_warehouse(run_frames, db):
    run, frames = run_frames
    warehouse.publish(frames, db)
    t = q(db, "SELECT target_id, plan_warnings, price_source, price_date, usd_per_hour FROM llmbench.targets "
              "WHERE run_key = ? ORDER BY target_id", run.run_key).set_index("target_id")
    assert "int4 is not native on ada" in t.loc["g6", "plan_warnings"]  # widened: warned at plan time
    assert "not native" not in t.loc["ml-g6", "plan_warnings"]  # bf16 is native
    assert "lists no vllm 0.15.1" in t.loc["ml-g6", "plan_warnings"]  # the default container's pin, warned
    # an openai target's $/hour with the source and date the config gave, frozen on every row
    assert (t.loc["mine", "price_source"], t.loc["mine", "price_date"], t.loc["mine", "usd_per_hour"]) == (
        "reserved instance quote Q-17", "2026-11-02", 1.5)
    pp = q(db, "SELECT DISTINCT price_source FROM llmbench.price_performance WHERE target_id = 'mine'")
    assert pp["price_source"].tolist() == ["reserved instance quote Q-17"]
    assert t.loc["g6", "price_source"] != "config"  # the catalog's source, as before


def test_price_source_without_a_price_is_refused(tmp_path):
    cfg = copy.deepcopy(CONFIG)
    cfg["targets"] = [dict(cfg["targets"][3], usd_per_hour=None)]
    del cfg["targets"][0]["usd_per_hour"]
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConfigError, match="price_source / price_date describe usd_per_hour"):
        plan(str(p), DATE, runs_root=tmp_path / "runs")
    # without a source, a config price says "config", as before
    cfg["targets"][0] = {k: v for k, v in CONFIG["targets"][3].items() if k not in ("price_source", "price_date")}
    p.write_text(yaml.safe_dump(cfg))
    price = plan(str(p), DATE, runs_root=tmp_path / "runs").targets[0].price
    assert (price.source, price.date) == ("config", None)


def test_v_path_at_slo_gives_each_paths_fastest_level_within_the_slo(run_frames, db):
    run, frames = run_frames
    warehouse.publish(frames, db)
    got = q(db, "SELECT * FROM llmbench.v_path_at_slo WHERE run_key = ? ORDER BY target_id", run.run_key)
    assert got["target_id"].tolist() == ["g6", "local-cpu", "mine", "ml-g6", "nova", "nova-dear"]  # one row each
    by = got.set_index("target_id")
    # g6: c=2 has the higher throughput (200/1.2 s) but misses the TTFT SLO: c=1 (100 tok/s) is its level
    assert by.loc["g6", "concurrency"] == 1 and by.loc["g6", "levels_meeting_slo"] == 1
    assert by.loc["g6", "output_tokens_per_s"] == pytest.approx(100.0)
    g6_c1 = frames["price_performance"].query("target_id == 'g6' and concurrency == 1").iloc[0]
    assert by.loc["g6", "usd_per_m_headline"] == pytest.approx(g6_c1["usd_per_m_output_tokens"])
    assert by.loc["g6", "headline_basis"] == "output"
    # local: both levels meet the SLO; c=2 is faster (200 tok/s in 1.5 s)
    assert by.loc["local-cpu", "concurrency"] == 2 and by.loc["local-cpu", "levels_meeting_slo"] == 2
    assert by.loc["ml-g6", "concurrency"] == 2 and by.loc["ml-g6", "levels"] == 2
    assert by.loc["g6", "workload_label"] == "400 in / 100 out" and by.loc["g6", "workload_output_tokens"] == 100


def test_a_path_with_no_level_within_the_slo_still_has_its_row(run_frames, db):
    run, frames = run_frames
    pp = frames["price_performance"]
    pp.loc[pp["target_id"] == "g6", "meets_slo"] = False
    warehouse.publish(frames, db)
    row = q(db, "SELECT levels, levels_meeting_slo, concurrency, usd_per_m_headline FROM llmbench.v_path_at_slo "
                "WHERE run_key = ? AND target_id = 'g6'", run.run_key)
    assert len(row) == 1 and row["levels"][0] == 2 and row["levels_meeting_slo"][0] == 0
    assert pd.isna(row["concurrency"][0]) and pd.isna(row["usd_per_m_headline"][0])


def test_v_break_even_compares_every_per_token_path_not_only_the_cheapest(run_frames, db):
    run, frames = run_frames
    warehouse.publish(frames, db)
    be = q(db, "SELECT * FROM llmbench.v_break_even WHERE run_key = ? ORDER BY target_id, concurrency, "
               "per_token_target_id", run.run_key)
    hourly = ["g6", "local-cpu", "mine", "ml-g6"]
    assert sorted(set(be["target_id"])) == hourly
    assert len(be) == len(hourly) * 2 * 2  # every hourly level x both per-token paths
    assert set(be["per_token_target_id"]) == {"nova", "nova-dear"}
    cheap = be[be["cheapest_per_token"]]
    assert set(cheap["per_token_target_id"]) == {"nova"} and len(cheap) == len(hourly) * 2
    # nova-dear costs twice as much per token: an hourly path breaks even at half the throughput
    g6 = be[(be["target_id"] == "g6") & (be["concurrency"] == 1)].set_index("per_token_target_id")
    assert g6.loc["nova-dear", "break_even_output_tokens_per_s"] == pytest.approx(
        g6.loc["nova", "break_even_output_tokens_per_s"] / 2)
    # at the measured 400:100 ratio, not the catalog's fixed 5:1
    assert g6.loc["nova", "input_tokens_per_output_token"] == pytest.approx(4.0)
    assert g6.loc["nova", "per_token_usd_per_m_output_tokens_with_input"] == pytest.approx(0.14 + 4 * 0.035)
    assert g6.loc["nova-dear", "per_token_usd_per_m_input_tokens"] == pytest.approx(0.07)
    assert g6.loc["nova", "per_token_model"] == "nova-micro"
    # the workload is on the comparison view, to filter per model and workload
    pc = q(db, "SELECT DISTINCT workload_label, workload_input_tokens FROM llmbench.v_path_comparison "
               "WHERE run_key = ?", run.run_key)
    assert pc.values.tolist() == [["400 in / 100 out", 400.0]]


def test_a_per_token_path_that_failed_the_quality_gate_is_no_comparator(run_frames):
    run, frames = run_frames
    prices = frames["price_performance"].to_dict("records")
    statuses = dict.fromkeys((t.target_id for t in run.targets), "succeeded")
    # nova, the cheaper API, answered wrongly: nova-dear is the comparator on every hourly row
    rows = tables.compare_paths(run, statuses, prices, {"nova": False, "nova-dear": True, "g6": None})
    assert {r["per_token_target_id"] for r in rows} == {"nova-dear"}
    hourly = [p for p in prices if p["price_basis"] == "per_hour"]
    assert hourly and {p["per_token_target_id"] for p in hourly} == {"nova-dear"}
    # without the gate, nova (cheaper) is the comparator and both are compared
    rows = tables.compare_paths(run, statuses, prices, {"nova": None})
    assert {r["per_token_target_id"] for r in rows} == {"nova", "nova-dear"}
    assert {p["per_token_target_id"] for p in hourly} == {"nova"}
    # numpy's False (a gate read back from a frame) is a failed gate too
    import numpy as np

    rows = tables.compare_paths(run, statuses, prices, {"nova": np.False_})
    assert {r["per_token_target_id"] for r in rows} == {"nova-dear"}


def test_report_compares_the_paths_against_each_per_token_path(run_frames, tmp_path):
    from html.parser import HTMLParser

    run, frames = run_frames
    out = write_report(frames, tmp_path / "report.html")
    page = out.read_text()
    assert "<h2>Serving paths compared</h2>" in page
    section = page.split("<h2>Serving paths compared</h2>", 1)[1].split("<h2>", 1)[0]
    assert "Break-even against each per-token path (2)" in section

    class Tables(HTMLParser):
        def __init__(self):
            super().__init__()
            self.tables, self.cell = [], None

        def handle_starttag(self, tag, attrs):
            if tag == "table":
                self.tables.append([])
            elif tag == "tr":
                self.tables[-1].append([])
            elif tag in ("td", "th"):
                self.cell = dict(attrs).get("title", "") if tag == "th" else ""  # a header's raw column
                self.header = tag == "th"

        def handle_data(self, data):
            if self.cell is not None and not self.header:
                self.cell += data

        def handle_endtag(self, tag):
            if tag in ("td", "th"):
                self.tables[-1][-1].append(self.cell.strip())
                self.cell = None

    parser = Tables()
    parser.feed(section)
    paths_table, be_table = parser.tables
    header = paths_table[0]
    assert {r[header.index("backend")] for r in paths_table[1:]} == {"local", "ec2", "sagemaker", "openai", "bedrock"}
    assert "workload_label" in header
    header = be_table[0]
    body = [dict(zip(header, r)) for r in be_table[1:]]
    assert {r["per_token_target_id"] for r in body} == {"nova", "nova-dear"}
    assert len(body) == 4 * 2 * 2  # every hourly level against each per-token path
    g6 = {r["per_token_target_id"]: float(r["break_even_output_tokens_per_s"].replace(",", ""))
          for r in body if r["target_id"] == "g6" and r["concurrency"] == "1"}
    assert g6["nova-dear"] == pytest.approx(g6["nova"] / 2, rel=1e-3)


def test_workload_columns_name_the_preset_and_count_the_shared_prefix():
    from llmbench.schemas.workload import Workload

    w = Workload(preset="seed-002")
    assert tables.workload_columns(w) == {
        "workload_label": "seed-002 (1000 in / 560 out)", "workload_input_tokens": 1000.0,
        "workload_output_tokens": 560.0}
