"""SLOs the user defines and goodput (DistServe / vLLM's --goodput), against hand-computed cases."""

import pytest
from pydantic import ValidationError

from llmbench.analysis import metrics, pricing
from llmbench.planning.config import ConfigError, load_config
from llmbench.schemas.slo import Objective, Slo
from tests.unit.analysis.test_metrics import rec

RECORDS = [
    rec(0, [100, 110, 130], 140, 3),  # ttft 100, itl 10 20, tpot 20, e2e 140
    rec(0, [200, 240], 300, 2),  # ttft 200, itl 40, tpot 100, e2e 300
    rec(0, [120, 125, 130, 400], 1000, 4),  # ttft 120, itl 5 5 270, tpot 293.3, e2e 1000
    rec(50, [], 1050, 0, ok=False, kind="timeout"),
]


def test_old_form_means_p90_ttft_and_tpot():
    slo = Slo(ttft_ms=150, tpot_ms=50)
    assert [o.label for o in slo.objectives_list()] == ["ttft p90 <= 150 ms", "tpot p90 <= 50 ms"]
    row = metrics.summarize_level(RECORDS[:2] + RECORDS[3:], 3, slo_ttft_ms=150, slo_tpot_ms=50)
    assert row["goodput_rps"] == pytest.approx(1 / 1.05)
    assert row["goodput_output_tokens_per_s"] == pytest.approx(3 / 1.05)  # the first request's 3 tokens


def test_goodput_counts_requests_meeting_every_objective():
    slo = Slo(objectives=[Objective(metric="ttft", percentile=99, max_ms=150),
                          Objective(metric="e2e", percentile=50, max_ms=1000)])  # fmt: skip
    row = metrics.summarize_level(RECORDS, 3, slo=slo)
    # requests 1 (ttft 100, e2e 140) and 3 (ttft 120, e2e 1000) meet both; 2 has ttft 200
    assert row["goodput_rps"] == pytest.approx(2 / 1.05)
    assert row["goodput_output_tokens_per_s"] == pytest.approx(7 / 1.05)
    # the level: ttft p99 over 100, 200, 120 is 197.6 > 150: the level misses, whatever its goodput
    assert row["slo_latency_met"] is False
    loose = Slo(objectives=[Objective(metric="ttft", percentile=50, max_ms=150)])
    assert metrics.summarize_level(RECORDS, 3, slo=loose)["slo_latency_met"] is True  # p50 120


def test_itl_objective_per_request_and_per_level():
    # per request: p99 of its own gaps; request 3's gaps 5, 5, 270 -> p99 264.8 > 50
    slo = Slo(objectives=[Objective(metric="itl", percentile=99, max_ms=50)])
    good = [metrics.request_meets_slo(r, slo) for r in RECORDS]
    assert good == [True, True, False, False]
    # per level, over every gap (10, 20, 40, 5, 5, 270): p50 is 15
    p50 = Slo(objectives=[Objective(metric="itl", percentile=50, max_ms=15)])
    assert metrics.latency_objectives_met(RECORDS, p50) is True
    assert metrics.latency_objectives_met(RECORDS, Slo(objectives=[Objective(metric="itl", percentile=50,
                                                                             max_ms=14.9)])) is False  # fmt: skip


def test_level_meets_slo_from_the_row_or_its_columns():
    slo = Slo(objectives=[Objective(metric="e2e", percentile=99.9, max_ms=500)])
    assert metrics.level_meets_slo({"slo_latency_met": True, "error_rate": 0.0}, slo, 0.05)
    assert not metrics.level_meets_slo({"slo_latency_met": True, "error_rate": 0.1}, slo, 0.05)
    # a row built without the SLO: its columns; p99.9 is not one of them, so the level cannot pass
    assert not metrics.level_meets_slo({"e2e_ms_p99": 10.0, "error_rate": 0.0}, slo, 0.05)
    assert metrics.level_meets_slo({"ttft_ms_p90": 10.0, "tpot_ms_p90": 5.0}, Slo(ttft_ms=20, tpot_ms=5), 0.05)


def test_usd_per_m_at_the_slo_is_on_goodput_tokens():
    # $1/h over 100 goodput tok/s: 1 / (100 x 3600) x 1e6 = $2.78 per million
    assert pricing.usd_per_m_goodput_tokens(1.0, 100.0) == pytest.approx(2.7778, abs=1e-4)
    assert pricing.usd_per_m_goodput_tokens(1.0, 0.0) is None
    # a per-token path bills all 200 tok/s to deliver 100 goodput tok/s: twice its price
    assert pricing.usd_per_m_goodput_paid_per_token(5.0, 200.0, 100.0) == pytest.approx(10.0)


@pytest.mark.parametrize(
    "objective, match",
    [
        ({"metric": "latency", "max_ms": 1}, "'ttft', 'tpot', 'itl' or 'e2e'"),
        ({"metric": "ttft", "percentile": 99.99, "max_ms": 1}, "between 50 and 99.9"),
        ({"metric": "ttft", "percentile": 40, "max_ms": 1}, "between 50 and 99.9"),
        ({"metric": "ttft", "max_ms": 0}, "greater than 0"),
    ],
)
def test_bad_objectives_are_refused(objective, match):
    with pytest.raises(ValidationError, match=match):
        Slo(objectives=[objective])


def test_bad_slo_in_a_config_is_one_line(tmp_path):
    text = """
name: t
targets: [{id: a, backend: local}]
slo: {objectives: [{metric: ttft, percentile: 99.95, max_ms: 500}]}
"""
    path = tmp_path / "t.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_config(str(path))
    assert "\n" not in str(e.value) and "slo.objectives.0.percentile" in str(e.value)
    path.write_text(text.replace("objectives:", "ttft_ms: 5, objectives:").replace("99.95", "99"))
    with pytest.raises(ConfigError, match="not both"):
        load_config(str(path))


def test_an_slo_with_objectives_survives_the_dag_params(tmp_path, monkeypatch):
    # the DAG overlays its Params on a dump of the config: the dumped SLO must validate again
    from llmbench.planning.plan import plan

    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path / "home"))
    run = plan("local-capacity", "2026-12-05", {"requests_per_level": 3}, runs_root=tmp_path / "runs")
    assert run.targets[0].slo.label == "ttft p90 <= 1000 ms; tpot p90 <= 100 ms"
    assert run.targets[0].capacity is not None and run.traffic is not None
