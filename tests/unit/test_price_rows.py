"""price_performance rows from level rows, including a level where nothing succeeded."""

import pandas as pd
import pytest

from llmbench import metrics
from llmbench.pipeline import _price_rows

TARGET = {"target_id": "t", "instance_type": "ml.g6.xlarge", "model": "m", "serving_config": "s",
          "usd_per_hour": 0.8048, "price_source": "seed 001", "roofline_tokens_per_s": 150.0,
          "slo": {"ttft_ms": 2000, "tpot_ms": 100}, "validation": {"max_error_rate": 0.05}}
RUN = {"run_key": "k", "logical_date": "2026-11-30"}


def level(concurrency, ok=True):
    ns = 1_000_000
    rec = {"ok": ok, "error_kind": None if ok else "timeout", "send_ns": 0, "end_ns": 1000 * ns,
           "output_tokens": 132 if ok else 0, "input_tokens": 660 if ok else None, "send_lag_ms": 0.0,
           **metrics.request_timings(0, [i * ns for i in range(1, 133)] if ok else [], 1000 * ns, 132 if ok else 0)}
    return metrics.summarize_level([rec], concurrency)


def test_price_rows_by_hand_and_for_a_failed_level(tmp_path):
    # through Parquet, as price_performance reads them: missing metrics come back as NaN
    frame = pd.DataFrame([level(1), level(2, ok=False)])
    frame.to_parquet(tmp_path / "levels.parquet")
    rows = _price_rows(RUN, TARGET, pd.read_parquet(tmp_path / "levels.parquet"), True)
    good, failed = rows
    assert good["output_tokens_per_s"] == pytest.approx(132.0)
    assert good["usd_per_m_output_tokens"] == pytest.approx(0.8048 / (132 * 3600) * 1e6)
    assert good["total_tokens_per_s"] == pytest.approx(132 + 660)
    assert good["break_even_output_tokens_per_s"] == pytest.approx(709.7, abs=0.1)  # seed 001
    assert good["beats_api"] is False and good["meets_slo"] is True
    assert good["roofline_efficiency"] == pytest.approx(1000 / good["tpot_ms_p50"] / 150)
    assert failed["output_tokens_per_s"] == 0 and failed["usd_per_m_output_tokens"] is None
    assert failed["meets_slo"] is False and failed["beats_api"] is False
    assert failed["ttft_ms_p50"] is None and failed["roofline_efficiency"] is None
