"""Request lengths drawn from distributions reach the server as asked, and the seeds' workload
presets run on the embedded local default (llama-server, SmolLM2)."""

import pandas as pd

from llmbench import pipeline
from llmbench.backends.base import Endpoint
from llmbench.loadgen.sweep import run_sweep
from llmbench.planning.plan import plan
from llmbench.schemas.workload import Workload, sample_length
from llmbench.testing._serve import ServerProcess

from .conftest import llama_server_pids


def test_output_lengths_are_the_drawn_ones(tmp_path):
    workload = Workload.model_validate({"input_tokens": {"dist": "uniform", "min": 20, "max": 60},
                                        "output_tokens": {"dist": "uniform", "min": 5, "max": 30},
                                        "concurrency": [4], "requests_per_level": 12, "seed": 3,
                                        "request_timeout_s": 30})
    with ServerProcess("llmbench.testing.calibration", "--ttft-ms", "20", "--itl-ms", "2") as server:
        result = run_sweep(Endpoint(server.url + "/v1/chat/completions", keep_alive=True), workload, tmp_path)
    rq = pd.read_parquet(result.requests_path).sort_values("request_index")
    drawn = [sample_length(workload.output_tokens, 3, i, "output") for i in rq["request_index"]]
    assert len(set(drawn)) > 3  # really a distribution
    assert rq["output_tokens"].tolist() == drawn and (rq["output_tokens_source"] == "usage").all()
    assert rq["content_chunks"].tolist() == drawn  # counted chunks agree with the server's usage


def test_seed_presets_run_on_the_local_default(tmp_path):
    before = llama_server_pids()
    for config, in_range, out_range in (("local-seed-000", (1900, 2200), (512, 512)),
                                        ("local-seed-002", (650, 1400), (380, 740))):
        target = plan(config, "2026-11-30", {"concurrency": [1], "requests_per_level": 1},
                      runs_root=tmp_path).targets[0]
        handle = pipeline.deploy(target)
        try:
            pipeline.wait_ready(target, handle)
            swept = pipeline.sweep(target, handle)
        finally:
            pipeline.teardown(target, handle)
        (req,) = pd.read_parquet(swept["requests_path"]).to_dict("records")
        assert req["ok"], req["error_detail"]
        # input as the server counted it (the shared prefix and chat template included)
        assert in_range[0] <= req["input_tokens"] <= in_range[1], (config, req["input_tokens"])
        assert out_range[0] <= req["output_tokens"] <= out_range[1] and req["output_tokens_source"] == "usage"
    assert llama_server_pids() == before


def test_a_timed_level_stops_sending_at_its_duration(tmp_path):
    workload = Workload.model_validate({"input_tokens": 16, "output_tokens": 20, "concurrency": [4],
                                        "requests_per_level": 1, "level_duration_s": 2.0, "seed": 1,
                                        "request_timeout_s": 30})
    with ServerProcess("llmbench.testing.calibration", "--ttft-ms", "50", "--itl-ms", "5") as server:
        result = run_sweep(Endpoint(server.url + "/v1/chat/completions", keep_alive=True), workload, tmp_path)
    (level,) = result.levels
    rq = pd.read_parquet(result.requests_path)
    # each request takes ~0.15 s: 4 streams for 2 s send about 4 x 13; none after the 2 s mark.
    # Safe on a loaded machine: 30 allows ~0.27 s a request, and load makes one a few to ~15 ms
    # slower (the calibration server's own record, with both cores busy), not 120 ms; the send span
    # is under 2 s by construction (every send falls between the level's start and its deadline).
    assert 30 <= level["requests_ok"] <= 60 and level["requests_failed"] == 0
    assert (rq["send_ns"].max() - rq["send_ns"].min()) / 1e9 < 2.0
    assert rq["request_index"].is_unique
    assert level["steady_window_s"] > 1.5 and level["steady_output_tokens_per_s"] > 0


def test_repeated_levels_carry_confidence_intervals(tmp_path):
    workload = Workload.model_validate({"input_tokens": 16, "output_tokens": 20, "concurrency": [2],
                                        "requests_per_level": 6, "repeats": 3, "seed": 1, "request_timeout_s": 30})
    with ServerProcess("llmbench.testing.calibration", "--ttft-ms", "30", "--itl-ms", "3") as server:
        result = run_sweep(Endpoint(server.url + "/v1/chat/completions", keep_alive=True), workload, tmp_path)
    (level,) = result.levels
    rq = pd.read_parquet(result.requests_path)
    assert level["repeats"] == 3 and level["requests_ok"] == 18
    assert sorted(rq["repeat"].unique()) == [0, 1, 2] and rq["request_index"].is_unique
    low, high = level["output_tokens_per_s_ci95_low"], level["output_tokens_per_s_ci95_high"]
    assert low < high and low <= level["output_tokens_per_s"] * 1.05 and high >= level["output_tokens_per_s"] * 0.95
    assert level["ttft_ms_p50_ci95_low"] <= level["ttft_ms_p50_ci95_high"]
