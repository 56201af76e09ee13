"""The HTML report: every plot rendered as an image, the tables present."""

import base64
import re

import pandas as pd

from llmbench.results.report import write_report


def test_report_has_every_plot_and_the_knee(tmp_path):
    levels = pd.DataFrame([
        {"target_id": t, "concurrency": c, "output_tokens_per_s": tps, "ttft_ms_p50": 10.0 * c, "ttft_ms_p99": 20.0 * c,
         "tpot_ms_p50": 5.0, "e2e_ms_p50": 100.0 * c, "requests_ok": 4, "requests_failed": 0}
        for t, curve in (("a", (40, 80, 95, 100)), ("b", (30, 31, 32, 33))) for c, tps in zip((1, 2, 4, 8), curve)
    ])
    pp = levels[["target_id", "concurrency", "output_tokens_per_s"]].assign(
        usd_per_hour=1.0, usd_per_m_output_tokens=lambda d: 1e6 / (d["output_tokens_per_s"] * 3600),
        roofline_efficiency=lambda d: (d["target_id"] == "a").map({True: 0.4, False: None}))
    frames = {
        "runs": pd.DataFrame([{"run_key": "k", "status": "succeeded", "targets_planned": 2, "targets_failed": 0,
                               "targets_validation_failed": 0, "run_dir": str(tmp_path)}]),
        "targets": pd.DataFrame([{"target_id": "a", "status": "succeeded", "time_to_ready_s": 541.25,
                                  "first_request_ttft_ms": 912.5, "engine_version": "0.15.1"},
                                 {"target_id": "b", "status": "succeeded", "time_to_ready_s": None}]),
        "levels": levels, "price_performance": pp.assign(spec_decode_acceptance_rate=0.625),
    }
    html = write_report(frames, tmp_path / "report.html").read_text()
    cold = html.split("<h3>Cold start and provenance</h3>")[1].split("</table>")[0]
    assert "541.250" in cold and "912.500" in cold and "0.15.1" in cold and "time_to_ready_s" in cold
    assert "spec_decode_acceptance_rate" in html and "0.625" in html
    images = re.findall(r'alt="([^"]+)" src="data:image/png;base64,([^"]+)"', html)
    assert [a for a, _ in images] == ["Output throughput", "TTFT p50", "TTFT p99", "TPOT p50",
                                      "Throughput against latency", "Price-performance",
                                      "Price-performance per target",
                                      "Roofline efficiency (decode tok/s per stream / ceiling)"]
    for _, data in images:
        assert base64.b64decode(data).startswith(b"\x89PNG")
    assert "<h2>Price-performance</h2>" in html and "<h2>Levels</h2>" in html
    assert "Roofline efficiency not available for b" in html  # named, not silently missing


def test_report_ranks_on_the_price_basis_flags_the_ceiling_and_shows_references(tmp_path):
    levels = pd.DataFrame([{"target_id": "g7e", "concurrency": c, "output_tokens_per_s": 100.0 * c, "ttft_ms_p50": 10.0,
                            "ttft_ms_p99": 20.0, "tpot_ms_p50": 5.0, "e2e_ms_p50": 100.0, "requests_ok": 4,
                            "requests_failed": 0} for c in (1, 32)])
    pp = levels[["target_id", "concurrency", "output_tokens_per_s"]].assign(
        arrival_rate_rps=0.0, usd_per_hour=4.2, usd_per_m_output_tokens=[11.7, 0.36], usd_per_m_total_tokens=[4.2, 0.13],
        headline_basis="total", usd_per_m_headline=[4.2, 0.13], weight_gb_per_token=65.6,
        roofline_efficiency=[2.33, None],
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
    assert "<th>headline_basis</th>" in html  # the price table says which $/M the run ranks by
    assert "Above the bandwidth ceiling" in html and "likely speculative decoding" in html
    assert "<h2>Against the seed articles</h2>" in html and "g7e + EAGLE3: $0.41/M tokens at C=32" in html
    assert "-68.293" in html  # 0.13 measured vs 0.41 stated: -68.3 %
