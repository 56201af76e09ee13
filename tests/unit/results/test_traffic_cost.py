"""A run with a traffic profile, from raw results to the traffic_cost and capacity tables, the views
and the report's headline (issue 29): the six-path run of test_path_comparison, with a flat profile
of 1 request/s (400 input and 100 output tokens) and a capacity search result for g6."""

import copy
import json

import pytest
import yaml

from llmbench import warehouse
from llmbench.planning.plan import plan
from llmbench.results import tables
from llmbench.results.report import write_report
from llmbench.results.traffic import traffic_headline
from llmbench.schemas.targets import RunPlan
from tests.unit.results.test_path_comparison import CONFIG, DATE, _measured

PROFILE = {"name": "flat-1rps", "requests_per_hour": [3600.0] * 24, "input_tokens": 400, "output_tokens": 100}
CAPACITY = {
    "status": "found",
    "capacity_rps": 0.9,
    "capacity_output_tokens_per_s": 90.0,
    "capacity_output_tokens_per_s_ci95": [None, None],
    "bracket_pass_rps": 0.9,
    "bracket_fail_rps": 0.95,
    "rel_tolerance": 0.1,
    "probes": [{}, {}, {}, {}],
    "search_s": 80.0,
    "note": "a pass and a fail within 10%",
}


@pytest.fixture
def traffic_frames(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path / "home"))
    cfg = copy.deepcopy(CONFIG)
    cfg["traffic"] = PROFILE
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    run = RunPlan.load(plan(str(path), DATE, runs_root=tmp_path / "runs").run_dir)
    _measured(run)
    g6 = next(t for t in run.targets if t.target_id == "g6")
    (g6.dir / "capacity.json").write_text(json.dumps(CAPACITY))
    return run, tables.build_tables(run.run_dir)


def test_traffic_cost_per_path_by_hand(traffic_frames):
    run, frames = traffic_frames
    tc = frames["traffic_cost"].set_index("path")
    # every priced path has one row
    assert sorted(tc.index) == ["g6", "local-cpu", "mine", "ml-g6", "nova", "nova-dear"]
    # local-cpu: its fastest level meeting the SLO, 2 requests in 1.5 s; 1 req/s needs one
    # instance at headroom 0.8 (1.33 x 0.8 = 1.07): 730 h x the catalog's $0.096 = $70.08
    assert tc.loc["local-cpu", "capacity_rps"] == pytest.approx(2 / 1.5)
    assert tc.loc["local-cpu", "monthly_usd"] == pytest.approx(730 * 0.096)
    # g6: the capacity search's 0.9 req/s; 1 req/s at headroom 0.8 needs 2 instances, all hours
    assert tc.loc["g6", "capacity_rps"] == 0.9 and tc.loc["g6", "peak_instances"] == 2
    # ml-g6: no search, its fastest level meeting the SLO: 2 requests in 1 s
    assert tc.loc["ml-g6", "capacity_rps"] == pytest.approx(2.0)
    # mine: $1.5/h, one instance at 5 req/s x 0.8 serves 1 req/s: 730 h
    assert tc.loc["mine", "monthly_usd"] == pytest.approx(730 * 1.5)
    assert tc.loc["mine", "mean_utilisation"] == pytest.approx(1 / 5)
    # nova: 3600 x 730 requests x (400 x $0.035 + 100 x $0.14) / 1e6 = $73.58
    assert tc.loc["nova", "monthly_usd"] == pytest.approx(3600 * 730 * 28e-6)
    assert tc.loc["nova-dear", "monthly_usd"] == tc.loc["nova", "monthly_usd"]  # the same list price here
    assert tc["cheapest"].sum() == 1 and tc.loc["local-cpu", "cheapest"] and tc.loc["nova", "runner_up"]
    assert tc.loc["local-cpu", "margin_usd"] == pytest.approx(3600 * 730 * 28e-6 - 730 * 0.096)
    # local-cpu against nova, flat shape: one instance ($70.08) costs what nova does at V output
    # tokens a day: V / 100 requests x 730 / 24 days x $28 per million requests (0.95 req/s,
    # within the one instance's 1.07 req/s at headroom 0.8); its first crossing of several
    be = tc.loc["local-cpu", "break_even_daily_output_tokens"]
    assert be == pytest.approx(730 * 0.096 / (730 / 24) / 28e-6 * 100, rel=1e-9)
    # mine: $1095 per instance serves 4 req/s, which nova bills $294 for: never breaks even
    assert tc.loc["mine", "break_even_daily_output_tokens"] != tc.loc["mine", "break_even_daily_output_tokens"]
    cap = frames["capacity"]
    assert cap["target_id"].tolist() == ["g6"] and cap["capacity_rps"].tolist() == [0.9]
    assert cap["probes"].tolist() == [4] and cap["slo"].tolist() == ["ttft p90 <= 500 ms; tpot p90 <= 100 ms"]


def test_headline_names_the_cheapest_and_the_runner_up(traffic_frames, tmp_path):
    _, frames = traffic_frames
    sentence = traffic_headline(frames["traffic_cost"])
    assert sentence == "For this traffic, local-cpu at $70/month meets the SLO; nova costs $74."
    html = write_report(frames, tmp_path / "r.html").read_text()
    assert sentence in html


def test_published_and_the_views_choose(traffic_frames, tmp_path):
    _, frames = traffic_frames
    db = tmp_path / "w.duckdb"
    written = warehouse.publish(frames, db)
    assert written["traffic_cost"] == 6 and written["capacity"] == 1
    best = warehouse.query("SELECT path, runner_up_path, margin_usd FROM llmbench.v_cheapest_path_per_profile",
                           target=db)  # fmt: skip
    assert best.values.tolist()[0][:2] == ["local-cpu", "nova"]
    be = warehouse.query("SELECT path FROM llmbench.v_traffic_break_even ORDER BY path", target=db)
    assert be["path"].tolist() == ["g6", "local-cpu", "mine", "ml-g6"]
