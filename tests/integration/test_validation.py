"""The GX suites (real great_expectations) pass honest frames and catch broken ones."""

import dataclasses
import json

import pandas as pd

from llmbench.analysis import metrics
from llmbench.results.validation import validate_results
from llmbench.schemas.records import RequestRecord

MS = metrics.NS_PER_MS


def _request(c, i, ok=True, ttft=50.0, e2e=200.0, tokens=8):
    return RequestRecord(
        concurrency=c, request_index=i, worker=0, ok=ok, error_kind=None if ok else "timeout", error_detail=None,
        http_status=200 if ok else None, send_ns=0, first_content_ns=None,
        end_ns=int(e2e * MS), send_lag_ms=0.1, ttft_ms=ttft if ok else None, e2e_ms=e2e,
        tpot_ms=(e2e - ttft) / (tokens - 1) if ok else None, itl_ms=[20.0] * (tokens - 1), content_chunks=tokens,
        output_tokens=tokens if ok else 0, output_tokens_source="usage", output_tokens_counted=tokens,
        input_tokens=40, finish_reason="length" if ok else None, repeat=0, arrival_rate_rps=0.0, send_retried=False)


def _write(tmp_path, records, levels):
    req = pd.DataFrame([r.to_row() for r in records])
    lv = pd.DataFrame([metrics.summarize_level([r for r in records if r.concurrency == c], c) for c in levels])
    req.to_parquet(tmp_path / "requests.parquet")
    lv.to_parquet(tmp_path / "levels.parquet")
    return tmp_path / "requests.parquet", tmp_path / "levels.parquet"


def test_suites_pass_honest_results_and_catch_broken_ones(tmp_path):
    good = [_request(c, i) for c in (1, 2) for i in range(4)]
    rq, lv = _write(tmp_path, good, [1, 2])
    out = validate_results(rq, lv, [1, 2], 0.05, tmp_path / "v.json")
    assert out["validation_passed"], out["failures"]
    assert json.loads((tmp_path / "v.json").read_text())["validation_passed"] is True

    # ttft after e2e, a successful request with no tokens, a level missing, too many errors
    broken = [_request(1, 0, ttft=300.0, e2e=200.0), _request(1, 1, tokens=0), _request(1, 2, ok=False),
              _request(1, 3)]
    broken[1] = dataclasses.replace(broken[1], tpot_ms=None)
    rq, lv = _write(tmp_path, broken, [1])
    out = validate_results(rq, lv, [1, 2], 0.05, tmp_path / "v2.json")
    assert not out["validation_passed"]
    text = " ".join(out["failures"])
    assert "expect_column_pair_values_a_to_be_greater_than_b" in text and "ttft_ms" in text
    assert "output_tokens" in text
    assert "expect_column_distinct_values_to_equal_set" in text
    assert "error_rate" in text


def test_a_level_whose_client_was_saturated_fails_validation(tmp_path):
    records = [_request(c, i) for c in (1, 2) for i in range(4)]
    rq, _ = _write(tmp_path, records, [1, 2])
    # The same requests, but the load generator's process was busy 95 % of the level's window.
    window_s = 0.2
    lv = pd.DataFrame([metrics.summarize_level([r for r in records if r.concurrency == c], c,
                                               client_cpu_s=0.95 * window_s) for c in (1, 2)])
    assert lv["client_saturated"].tolist() == [True, True]
    lv.to_parquet(tmp_path / "levels.parquet")
    out = validate_results(rq, tmp_path / "levels.parquet", [1, 2], 0.05, tmp_path / "v.json")
    assert not out["validation_passed"]
    assert any("client_saturated" in f for f in out["failures"])
