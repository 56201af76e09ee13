"""Reading what a server says about itself: Prometheus text as vLLM writes it, its spec-decode
counters, and the reasons recorded where they cannot be read."""

import pytest

from llmbench.backends import servermetrics
from llmbench.schemas.workload import Workload

VLLM_METRICS = """\
# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="Qwen/Qwen3-32B"} 1200.0
vllm:spec_decode_num_draft_tokens_total{engine="1",model_name="Qwen/Qwen3-32B"} 300.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="Qwen/Qwen3-32B"} 900.0
vllm:spec_decode_num_accepted_tokens_total{engine="1",model_name="Qwen/Qwen3-32B"} 100.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="Qwen/Qwen3-32B",position="0"} 500.0
vllm:request_success_total{engine="0",finished_reason="stop",model_name="a b {c}"} 7 1733230000000
vllm:cache_config_info{block_size="16",cache_dtype="auto"} 1.0
not a sample line
vllm:broken{engine="0"} NaNx
"""


def test_prometheus_text_is_summed_over_label_sets():
    v = servermetrics.parse_prometheus(VLLM_METRICS)
    assert v[servermetrics.VLLM_SPEC_DRAFT] == 1500.0  # both engines
    assert v[servermetrics.VLLM_SPEC_ACCEPTED] == 1000.0  # not the per-position counter
    assert v["vllm:request_success_total"] == 7.0  # a timestamp after the value is not the value
    assert "vllm:broken" not in v and len(v) == 5


def test_no_metrics_url_or_no_server_is_a_reason_not_an_error():
    assert servermetrics.spec_decode_counters(None, why_not="SageMaker: no /metrics") == (None, "SageMaker: no /metrics")
    counters, why = servermetrics.spec_decode_counters("http://127.0.0.1:9/metrics")  # nothing listens on 9
    assert counters is None and why.startswith("GET http://127.0.0.1:9/metrics:")
    assert servermetrics.fetch_json("http://127.0.0.1:9/version") is None


def test_server_root_is_beside_v1():
    assert servermetrics.server_root("http://h:8000/v1") == "http://h:8000"
    assert servermetrics.server_root("http://h:8000/v1/") == "http://h:8000"
    assert servermetrics.server_root("https://gw.example/llm") == "https://gw.example/llm"


def test_warmup_each_level_is_off_by_default_and_closed_loop_only():
    assert Workload().warmup_each_level == 0
    assert Workload(warmup_each_level=2, concurrency=[1, 4]).warmup_each_level == 2
    with pytest.raises(ValueError, match="open-loop"):
        Workload(warmup_each_level=1, arrival_rates_rps=[2.0])
    with pytest.raises(ValueError):
        Workload(warmup_each_level=51)
