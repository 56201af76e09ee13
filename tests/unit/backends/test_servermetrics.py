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


# Lines as vLLM 0.32 on CPU wrote them (one engine), the label sets trimmed.
VLLM_SCHEDULER = """\
vllm:num_requests_running{engine="0",model_name="default"} 3.0
vllm:num_requests_waiting{engine="0",model_name="default"} 1.0
vllm:kv_cache_usage_perc{engine="0",model_name="default"} 0.25
vllm:prefix_cache_queries_total{engine="0",model_name="default"} 4000.0
vllm:prefix_cache_hits_total{engine="0",model_name="default"} 1024.0
vllm:prompt_tokens_cached_total{engine="0",model_name="default"} 1024.0
vllm:request_queue_time_seconds_sum{engine="0",model_name="default"} 0.5
vllm:request_queue_time_seconds_count{engine="0",model_name="default"} 10.0
"""


class _Page:
    """A real HTTP server whose /metrics page the test changes between readings."""

    def __init__(self, text: str):
        import http.server
        import threading

        page = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                body = page.text.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.text = text
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/metrics"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_a_vllm_reading_has_the_scheduler_gauges_and_cache_counters():
    page = _Page(VLLM_SCHEDULER)
    try:
        reading, why = servermetrics.vllm_reading(page.url)
    finally:
        page.close()
    assert why is None and reading is not None
    assert (reading.requests_running, reading.requests_waiting, reading.kv_cache_usage_frac) == (3.0, 1.0, 0.25)
    assert (reading.prefix_cache_hits_tokens, reading.prefix_cache_queries_tokens) == (1024.0, 4000.0)
    assert (reading.queue_time_s_sum, reading.queue_time_count) == (0.5, 10.0)


def test_a_page_that_is_not_vllms_is_a_reason():
    page = _Page("llamacpp:prompt_tokens_total 5\n")
    try:
        reading, why = servermetrics.vllm_reading(page.url)
    finally:
        page.close()
    assert reading is None and "has no vllm:num_requests_running (not vLLM)" in why
    assert servermetrics.vllm_reading(None, why_not="SageMaker: no /metrics") == (None, "SageMaker: no /metrics")


def test_the_sampler_reads_during_the_level_and_reports_increases():
    import time

    page = _Page(VLLM_SCHEDULER)
    try:
        sampler = servermetrics.LevelSampler(page.url, interval_s=0.05).start()
        moved = {"running": 8.0, "hits_total": 2048.0, "queries_total": 6000.0,
                 "seconds_sum": 1.5, "seconds_count": 14.0}
        lines = VLLM_SCHEDULER.splitlines()
        page.text = "\n".join(
            next((ln.rsplit(" ", 1)[0] + f" {v}" for k, v in moved.items() if k in ln.split("{")[0]), ln)
            for ln in lines
        )
        time.sleep(0.3)
        cols = sampler.stop()
    finally:
        page.close()
    assert cols["server_metrics_note"] is None and cols["server_metrics_samples"] >= 4  # before, >= 2 during, after
    assert cols["server_requests_running_max"] == 8.0 and 3.0 < cols["server_requests_running_mean"] < 8.0
    assert cols["prefix_cache_hits_tokens"] == 1024.0 and cols["prefix_cache_hit_rate"] == 1024.0 / 2000.0
    assert cols["server_queue_time_ms_mean"] == 250.0  # 1 s more over 4 more requests
    assert cols["prompt_tokens_cached"] == 0.0


def test_the_sampler_without_a_metrics_page_gives_null_columns_and_the_reason():
    cols = servermetrics.LevelSampler(None, why_not="llama-server has no vLLM metrics page").start().stop()
    assert cols["server_metrics_note"] == "llama-server has no vLLM metrics page"
    assert cols["server_metrics_samples"] == 0
    assert cols["prefix_cache_hit_rate"] is None and cols["server_requests_running_mean"] is None
