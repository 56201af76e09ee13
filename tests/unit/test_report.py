"""The HTML report: every plot rendered as an image, the tables present."""

import base64
import re

import pandas as pd

from llmbench.report import write_report


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
        "targets": pd.DataFrame([{"target_id": "a", "status": "succeeded"}, {"target_id": "b", "status": "succeeded"}]),
        "levels": levels, "price_performance": pp,
    }
    html = write_report(frames, tmp_path / "report.html").read_text()
    images = re.findall(r'alt="([^"]+)" src="data:image/png;base64,([^"]+)"', html)
    assert [a for a, _ in images] == ["Output throughput", "TTFT p50", "TTFT p99", "TPOT p50",
                                      "Throughput against latency", "Price-performance",
                                      "Price-performance per target",
                                      "Roofline efficiency (decode tok/s per stream / ceiling)"]
    for _, data in images:
        assert base64.b64decode(data).startswith(b"\x89PNG")
    assert "<h2>Price-performance</h2>" in html and "<h2>Levels</h2>" in html
    assert "Roofline efficiency not available for b" in html  # named, not silently missing
