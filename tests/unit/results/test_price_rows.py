"""price_performance rows from level rows, including a level where nothing succeeded."""

import pandas as pd
import pytest

from llmbench.analysis import metrics
from llmbench.results.tables import price_rows
from llmbench.schemas.records import RequestRecord
from llmbench.schemas.targets import ResolvedTarget, RunPlan

TARGET = ResolvedTarget.model_validate({
    "run_key": "k", "run_dir": "/nonexistent", "target_id": "t", "label": "ml.g6.xlarge / m / s",
    "instance_type": "ml.g6.xlarge", "model": "m", "hf_id": None, "precision": "bf16",
    "serving": {"kind": "llama-server", "name": "s"}, "workload": {}, "validation": {"max_error_rate": 0.05},
    "slo": {"ttft_ms": 2000, "tpot_ms": 100}, "price": {"usd_per_hour": 0.8048, "source": "seed 001"},
    "backend": {"kind": "local"}, "region": "local", "roofline_tokens_per_s": 150.0,
    "estimated_endpoint_hours": 0.1, "estimated_usd": 0.08})
RUN = RunPlan(run_key="k", run_dir="/nonexistent", config_name="c", backends=["local"], logical_date="2026-11-30",
              planned_at="2026-11-30T00:00:00+00:00", warehouse={}, warnings=[], estimated_endpoint_hours=0.1,
              estimated_usd=0.08, targets=[TARGET])


def level(concurrency, ok=True):
    ns = 1_000_000
    content = [i * ns for i in range(1, 133)] if ok else []
    t = metrics.request_timings(0, content, 1000 * ns, 132 if ok else 0)
    rec = RequestRecord(
        concurrency=concurrency, request_index=0, worker=0, ok=ok, error_kind=None if ok else "timeout",
        error_detail=None, http_status=200 if ok else None, send_ns=0, first_content_ns=content[0] if ok else None,
        end_ns=1000 * ns, send_lag_ms=0.0, ttft_ms=t["ttft_ms"], e2e_ms=t["e2e_ms"], tpot_ms=t["tpot_ms"],
        itl_ms=t["itl_ms"], content_chunks=len(content), output_tokens=132 if ok else 0, output_tokens_source="usage",
        output_tokens_counted=len(content), input_tokens=660 if ok else None, finish_reason="length" if ok else None,
        repeat=0, arrival_rate_rps=0.0, send_retried=False)
    return metrics.summarize_level([rec], concurrency)


def test_price_rows_by_hand_and_for_a_failed_level(tmp_path):
    # through Parquet, as price_performance reads them: missing metrics come back as NaN
    frame = pd.DataFrame([level(1), level(2, ok=False)])
    frame.to_parquet(tmp_path / "levels.parquet")
    rows = price_rows(RUN, TARGET, pd.read_parquet(tmp_path / "levels.parquet").to_dict("records"), True)
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


def test_headline_price_follows_the_runs_price_basis():
    from llmbench.results.tables import headline_price

    lv = level(1)
    out_row = price_rows(RUN, TARGET, [lv], True)[0]
    assert out_row["headline_basis"] == "output"
    assert out_row["usd_per_m_headline"] == out_row["usd_per_m_output_tokens"]
    total_row = price_rows(RUN.model_copy(update={"price_basis": "total"}), TARGET, [lv], True)[0]
    assert total_row["headline_basis"] == "total"
    # by hand: $0.8048/h over (132 out + 660 in) tok/s
    assert total_row["usd_per_m_headline"] == pytest.approx(0.8048 / ((132 + 660) * 3600) * 1e6)
    assert headline_price({"usd_per_m_output_tokens": 2.0, "usd_per_m_total_tokens": 0.5}, "total") == {
        "headline_basis": "total", "usd_per_m_headline": 0.5}


def test_speculative_speedup_against_the_target_that_differs_only_in_speculation(tmp_path):
    from llmbench.planning.plan import plan
    from llmbench.results.tables import speculative_pairs, speculative_speedups

    run = plan("sagemaker-seed-002", "2026-11-30", runs_root=tmp_path)
    assert speculative_pairs(run) == {"g6e-vllm-eagle3": "g6e-vllm-prefix-cache",
                                      "g7e-vllm-eagle3": "g7e-vllm-prefix-cache"}
    # seed 002 at C=32 (At a Glance): g7e 34.6 tok/s with EAGLE3, 18.5 without; TTFT/TPOT made up
    rows = [{"target_id": t, "concurrency": 32, "arrival_rate_rps": 0.0, "output_tokens_per_s": tps,
             "ttft_ms_p50": ttft, "tpot_ms_p50": tpot}
            for t, tps, ttft, tpot in (("g7e-vllm-eagle3", 34.6, 300.0, 20.0),
                                       ("g7e-vllm-prefix-cache", 18.5, 250.0, 40.0),
                                       ("g5-lmi-baseline", 14.5, 900.0, 60.0))]
    speculative_speedups(run, rows)
    eagle, plain, g5 = rows
    assert eagle["speculative_baseline_target_id"] == "g7e-vllm-prefix-cache"
    assert eagle["speculative_speedup"] == pytest.approx(34.6 / 18.5)  # 1.87: the article's "1.9x"
    assert eagle["speculative_ttft_change"] == pytest.approx(0.2) and eagle["speculative_tpot_change"] == -0.5
    assert plain["speculative_speedup"] is None and g5["speculative_baseline_target_id"] is None


def test_provenance_names_the_image_engine_model_and_llmbench(tmp_path):
    from llmbench import __version__
    from llmbench.planning.plan import plan
    from llmbench.results.tables import provenance

    run = plan("sagemaker-seed-002", "2026-11-30", runs_root=tmp_path)
    g7e = next(t for t in run.targets if t.target_id == "g7e-vllm-eagle3")
    assert provenance(g7e) == {
        "container_image": "763104351884.dkr.ecr.us-west-2.amazonaws.com/vllm:0.15.1-gpu-py312-cu129-ubuntu22.04-sagemaker",
        "engine": "vllm", "model_id": "Qwen/Qwen3-32B", "llmbench_version": __version__,
        # not yet asked (no server.json: the target never reached warm-up); no revision pinned
        "engine_version": None, "engine_version_source": None, "model_revision": None}
    assert provenance(TARGET)["container_image"] is None  # nothing deployed: no server.json says which build
    g7e.dir.mkdir(parents=True)
    (g7e.dir / "server.json").write_text('{"engine_version": null, "engine_version_source": "SageMaker: no /version"}')
    assert provenance(g7e)["engine_version_source"] == "SageMaker: no /version"
    (g7e.dir / "server.json").write_text('{"engine_version": "0.15.1", "engine_version_source": "GET /version"}')
    assert provenance(g7e)["engine_version"] == "0.15.1"
    # what the deploy recorded wins over the plan (pipeline.record_engine_version writes it)
    (g7e.dir / "server.json").write_text('{"engine_version": null, "container_image": "123456789012.dkr.ecr.x/y:z"}')
    assert provenance(g7e)["container_image"] == "123456789012.dkr.ecr.x/y:z"
