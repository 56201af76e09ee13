"""The HTML report: the answer first, interactive charts inlined, readable tables."""

import json
import re

import pandas as pd
import pytest

from llmbench.results.report import REPORT_MAX_BYTES, answer, fmt, pareto, write_report


def _frames(tmp_path, quality=None, gates=None, failed=None):
    """Three targets, four levels each: a is fast and cheap, b cheap-ish, c misses the SLO everywhere."""
    curves = {"a": (40, 80, 95, 100), "b": (30, 31, 32, 33), "c": (20, 21, 22, 23)}
    levels = pd.DataFrame([
        {"target_id": t, "concurrency": c, "arrival_rate_rps": 0.0, "output_tokens_per_s": tps,
         "ttft_ms_p50": 10.0 * c, "ttft_ms_p99": 20.0 * c, "tpot_ms_p50": 5.0, "e2e_ms_p50": 100.0 * c,
         "requests_ok": 4, "requests_failed": 0}
        for t, curve in curves.items() for c, tps in zip((1, 2, 4, 8), curve)
    ])
    pp = levels[["target_id", "concurrency", "arrival_rate_rps", "output_tokens_per_s"]].assign(
        usd_per_hour=1.0, usd_per_m_output_tokens=lambda d: 1e6 / (d["output_tokens_per_s"] * 3600),
        ttft_ms_p90=lambda d: 15.0 * d["concurrency"], tpot_ms_p90=6.0,
        meets_slo=lambda d: (d["target_id"] != "c") & (d["concurrency"] <= 4), validation_passed=True,
        roofline_efficiency=lambda d: (d["target_id"] == "a").map({True: 0.4, False: None}),
        spec_decode_acceptance_rate=0.625)
    if quality is not None:
        pp = pp.assign(**quality)
    targets = pd.DataFrame([{"target_id": t, "backend": "local", "status": "succeeded", "quality_passed": None,
                             "quality_score": None, "time_to_ready_s": 541.25 if t == "a" else None,
                             "first_request_ttft_ms": 912.5 if t == "a" else None, "engine_version": "0.15.1",
                             "usd_per_m_input_tokens_list": None} for t in curves])
    for t, passed in (gates or {}).items():
        targets.loc[targets["target_id"] == t, ["quality_passed", "quality_score"]] = [passed, 0.25]
        pp.loc[pp["target_id"] == t, "quality_passed"] = passed
    if failed:
        targets = pd.concat([targets, pd.DataFrame([{"target_id": failed, "status": "failed", "failed_stage": "deploy",
                                                     "error": "DeployError: no capacity"}])])
    requests = pd.DataFrame([{"target_id": t, "concurrency": c, "ok": True, "ttft_ms": 10.0 + i, "e2e_ms": 100.0 + i}
                             for t in curves for c in (1, 2, 4, 8) for i in range(600)])
    return {
        "runs": pd.DataFrame([{"run_key": "k", "status": "succeeded", "targets_planned": 3, "targets_failed": 0,
                               "targets_validation_failed": 0, "run_dir": str(tmp_path)}]),
        "targets": targets, "levels": levels, "price_performance": pp, "requests": requests,
    }


def test_the_answer_names_the_cheapest_path_meeting_the_slo_and_the_runner_up(tmp_path):
    a = answer(_frames(tmp_path))
    # a at c=4 is cheapest among levels meeting the SLO (c=8 is cheaper but misses it); b is next.
    assert a.winner == "a"
    usd_a, usd_b = 1e6 / (95 * 3600), 1e6 / (32 * 3600)
    assert f"a at concurrency 4, {fmt(usd_a, 'usd')} per million output tokens" in a.sentence
    assert f"Runner-up: b at {fmt(usd_b, 'usd')}, {100 * (usd_b / usd_a - 1):,.1f} % more" in a.sentence
    assert a.excluded == ["c met the SLO at no level (its best TTFT p90 was 15.0 ms)"]


def test_a_target_failing_the_quality_gate_cannot_win_and_a_failed_one_is_named(tmp_path):
    a = answer(_frames(tmp_path, gates={"a": False}, failed="g6e"))
    assert a.winner == "b" and "No other target met the SLO" in a.sentence
    assert "a failed the quality gate (score 0.25): fast but wrong cannot win" in a.excluded
    assert "g6e failed at deploy: DeployError: no capacity" in a.excluded


def test_quality_with_its_interval_appears_when_a_stage_wrote_it(tmp_path):
    a = answer(_frames(tmp_path, quality={"quality_score_flexible": 0.81, "quality_ci_low": 0.7,
                                          "quality_ci_high": 0.89}))
    assert "quality 0.81 (95 % CI 0.70–0.89)" in a.sentence
    f = _frames(tmp_path)
    f["price_performance"]["quality_score"] = 0.0  # SmolLM's 0, through a gate of 0: said in words
    f["quality"] = pd.DataFrame([{"target_id": "a", "suite": "exact", "score": 0.0, "min_score": 0.0}])
    assert "quality 0.00, passing its gate of 0.00)." in answer(f).sentence.split(" Runner-up")[0]
    page = write_report(_frames(tmp_path, quality={"quality_score_flexible": 0.81, "quality_ci_low": 0.7,
                                                   "quality_ci_high": 0.89}), tmp_path / "r.html").read_text()
    assert "Quality 95 % CI low" in page.split("</section>")[0]  # in the answer's small table


def test_no_path_meeting_the_slo_is_said_in_words(tmp_path):
    f = _frames(tmp_path)
    f["price_performance"]["meets_slo"] = False
    a = answer(f)
    assert a.winner is None and a.sentence.startswith("No path met the SLO")
    assert {e.split(" ")[0] for e in a.excluded} == {"a", "b", "c"}


def test_the_pareto_front_keeps_only_points_nothing_beats_on_both_axes():
    pts = [(1.0, 50.0), (2.0, 40.0), (3.0, 45.0), (0.5, 100.0), (2.0, 60.0)]
    assert sorted(pareto(pts)) == [0, 1, 3]


def test_charts_are_inline_interactive_and_the_file_is_bounded(tmp_path):
    page = write_report(_frames(tmp_path), tmp_path / "report.html").read_text()
    assert not re.search(r"<(script|link)[^>]+(src|href)=", page)  # nothing fetched: openable offline
    titles = re.findall(r'<div class="chart" id="chart\d+" data-title="([^"]+)"', page)
    assert titles == ["Price-performance frontier (lower-left is better)", "Output throughput against load",
                      "TTFT against load (p50 solid, p99 dashed)", "TPOT against load (p50)",
                      "Per-request TTFT (ms)", "Per-request end-to-end latency (ms)",
                      "Roofline efficiency (decode tok/s per stream / bandwidth ceiling)"]
    assert page.count("Plotly.newPlot(") == len(titles)
    frontier = json.loads(re.search(r"Plotly.newPlot\('chart1', (\{.*?\})\.data", page).group(1))
    names = [t["name"] for t in frontier["data"]]
    assert names == ["a", "b", "c", "Pareto front"]  # one series per target, toggled from the legend
    assert "ms" in frontier["data"][0]["hovertemplate"] and "$" in frontier["data"][0]["hovertemplate"]
    boxes = json.loads(re.search(r"Plotly.newPlot\('chart5', (\{.*?\})\.data", page).group(1))["data"]
    assert len(boxes) == 12 and max(len(b["y"]) for b in boxes) == 400  # 600 requests sampled
    assert len(page.encode()) < REPORT_MAX_BYTES
    assert "Roofline efficiency not available for b, c" in page  # named, not silently missing


def test_tables_read_as_a_person_reads_them(tmp_path):
    page = write_report(_frames(tmp_path), tmp_path / "report.html").read_text()
    assert ">None<" not in page and ">nan<" not in page and "<td>—</td>" in page
    cold = page.split("<h3>Cold start and provenance</h3>")[1].split("</table>")[0]
    assert "<th" in cold and "Time to ready (s)</th>" in cold and "<td>541</td>" in cold and "<td>912</td>" in cold
    assert "Spec. decode acceptance" in page and "62.5 %" in page
    assert "usd_per_m_input_tokens_list</th>" not in page and "List $/M input tokens</th>" in page
    assert fmt(1234567.891, "tps") == "1,234,568" and fmt(0.01234, "usd") == "$0.0123" and fmt(13.1, "usd_h") == "$13.10"
    assert fmt(None, "ms") == "—" and fmt(float("nan"), "usd") == "—" and fmt(True, "bool") == "yes"


@pytest.mark.parametrize("basis", ["total"])
def test_report_ranks_on_the_price_basis_flags_the_ceiling_and_shows_references(tmp_path, basis):
    levels = pd.DataFrame([{"target_id": "g7e", "concurrency": c, "output_tokens_per_s": 100.0 * c, "ttft_ms_p50": 10.0,
                            "ttft_ms_p99": 20.0, "tpot_ms_p50": 5.0, "e2e_ms_p50": 100.0, "requests_ok": 4,
                            "requests_failed": 0} for c in (1, 32)])
    pp = levels[["target_id", "concurrency", "output_tokens_per_s"]].assign(
        arrival_rate_rps=0.0, usd_per_hour=4.2, usd_per_m_output_tokens=[11.7, 0.36], usd_per_m_total_tokens=[4.2, 0.13],
        headline_basis=basis, usd_per_m_headline=[4.2, 0.13], weight_gb_per_token=65.6, meets_slo=True,
        ttft_ms_p90=30.0, tpot_ms_p90=7.0, roofline_efficiency=[2.33, None],
        roofline_note=["efficiency 2.33 above the bandwidth ceiling: likely speculative decoding", None])
    ref = pd.DataFrame([{"run_key": "k", "reference_index": 0, "seed": "002", "target_id": "g7e",
                         "metric": "usd_per_m_total_tokens", "concurrency": 32, "value": 0.41,
                         "unit": "usd_per_m_total_tokens", "says": "g7e + EAGLE3: $0.41/M tokens at C=32",
                         "implied": False}])
    frames = {
        "runs": pd.DataFrame([{"run_key": "k", "status": "succeeded", "targets_planned": 1, "targets_failed": 0,
                               "targets_validation_failed": 0, "run_dir": str(tmp_path)}]),
        "targets": pd.DataFrame([{"target_id": "g7e", "status": "succeeded"}]),
        "levels": levels, "price_performance": pp, "reference": ref,
    }
    html = write_report(frames, tmp_path / "report.html").read_text()
    assert "$0.13 per million tokens (input + output)" in answer(frames).sentence  # ranked on the basis
    assert "Ranked by</th>" in html
    assert "Above the bandwidth ceiling" in html and "likely speculative decoding" in html
    assert "<h2>Against the seed articles</h2>" in html and "g7e + EAGLE3: $0.41/M tokens at C=32" in html
    assert "<td>-68.3</td>" in html  # 0.13 measured vs 0.41 stated: -68.3 %


def test_a_per_level_figure_another_stage_adds_is_shown_before_it_has_a_label(tmp_path):
    f = _frames(tmp_path)
    f["levels"]["server_kv_cache_usage_max"] = 0.42  # e.g. vLLM's server-side metrics per level
    page = write_report(f, tmp_path / "report.html").read_text()
    other = page.split("Other per-level figures")[1].split("</table>")[0]
    assert "server_kv_cache_usage_max</th>" in other and "<td>0.42</td>" in other
    assert "output_tokens_per_s" not in other  # shown above, not twice
