"""The real vLLM (CPU, `make vllm`) behind every path that reaches a vLLM server: the local
backend's own start, an `openai` target, an EC2 instance's server (moto control plane), and the
SageMaker wire stand-in in front of it. One server for the module, with n-gram speculation and
prefix caching on, so vLLM's own counters (not llmbench.testing.specdecode) are what move.
Assertions are on usage-based token counts and counters, never on text (bf16 ties make greedy
text differ from other implementations'). Skipped with one line when the vLLM venv is absent."""

import dataclasses
import json
import urllib.request

import pytest

from llmbench.backends import servermetrics
from llmbench.backends.ec2.backend import Ec2Backend
from llmbench.backends.openai.backend import OpenAIBackend
from llmbench.loadgen.sweep import run_sweep, run_warmup
from llmbench.testing import sagemaker_runtime
from llmbench.testing._serve import BackgroundServer

from .ec2_fixtures import AMI_PARAMETER, aws, ec2_target  # noqa: F401 (fixture)
from .test_sagemaker_wire import AK, SK, sagemaker_endpoint
from .vllm_fixtures import VllmServer, need_vllm, small_vllm

NGRAM = {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4, "prompt_lookup_min": 2}
CODE_EDIT = {
    "prompt_style": "code-edit",
    "input_tokens": 160,
    "output_tokens": 48,
    "concurrency": [1, 2],
    "requests_per_level": 6,
    "warmup_requests": 1,
    "request_timeout_s": 120,
}


@pytest.fixture(scope="module")
def vllm_server(tmp_path_factory):
    need_vllm()
    server = VllmServer(
        small_vllm(speculative_config=NGRAM, enable_prefix_caching=True), tmp_path_factory.mktemp("vllm")
    )
    try:
        yield server
    finally:
        server.stop()


def _records(result):
    return [json.loads(x) for x in result.requests_path.with_suffix(".jsonl").read_text().splitlines()]


def test_openai_target_counts_usage_tokens_and_reads_vllms_counters(vllm_server, tmp_path):
    backend = OpenAIBackend()
    handle = backend.attach(vllm_server.base_url + "/v1")
    backend.wait_ready(handle, 60)
    assert backend.engine_version(handle).version == "0.32.0"  # vLLM's own GET /version
    endpoint = backend.endpoint(handle)
    run_warmup(endpoint, CODE_EDIT)
    result = run_sweep(endpoint, CODE_EDIT, tmp_path)
    records = _records(result)
    # ignore_eos: usage says exactly max_tokens, however many chunks carried them
    assert len(records) == 12 and all(r["ok"] and r["output_tokens"] == 48 for r in records), records
    assert any(r["content_chunks"] < 48 for r in records)  # speculation: some chunks carry several tokens
    for lv in result.levels:
        assert lv["spec_decode_draft_tokens"] > 0 and 0 < lv["spec_decode_acceptance_rate"] <= 1, lv
        assert lv["server_metrics_note"] is None and lv["server_metrics_samples"] >= 2
        assert lv["server_queue_time_ms_mean"] is not None and lv["prefix_cache_hit_rate"] is not None
    # Gauges are seen only by readings taken while a request runs (about two a second): over the sweep
    assert max(lv["server_requests_running_max"] for lv in result.levels) >= 1
    assert max(lv["server_kv_cache_usage_frac_max"] for lv in result.levels) > 0


def test_a_shared_prefix_is_served_from_vllms_prefix_cache(vllm_server):
    url = vllm_server.base_url
    system = " ".join(["the river road"] * 400)  # ~1,200 tokens: several 128-token blocks

    def ask(question):
        body = {
            "model": "default",
            "max_tokens": 4,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": question}],
        }
        req = urllib.request.Request(
            url + "/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        return json.load(urllib.request.urlopen(req, timeout=120))["usage"]

    first = ask("one")
    before, _ = servermetrics.vllm_reading(url + "/metrics")
    ask("two")
    after, _ = servermetrics.vllm_reading(url + "/metrics")
    hits = after.prefix_cache_hits_tokens - before.prefix_cache_hits_tokens
    assert hits >= 1024 and hits % 128 == 0 and hits <= first["prompt_tokens"], (hits, first)
    assert after.prompt_tokens_cached - before.prompt_tokens_cached == hits


def test_ec2_instance_serving_vllm(aws, vllm_server, tmp_path):  # noqa: F811
    port = int(vllm_server.base_url.rsplit(":", 1)[1])
    t = ec2_target(
        tmp_path,
        ami_ssm_parameter=AMI_PARAMETER,
        runner_cidr="203.0.113.7/32",
        server_port=port,
        server_url="http://127.0.0.1:{port}/v1",
    )
    backend = Ec2Backend(aws)
    handle = backend.deploy(t, tmp_path)
    try:
        backend.wait_ready(handle, 60)
        endpoint = backend.endpoint(handle)
        endpoint = dataclasses.replace(endpoint, model="default")  # the name the local vLLM answers to
        result = run_sweep(endpoint, CODE_EDIT, tmp_path / "sweep")
    finally:
        backend.teardown(handle)
    assert all(r["ok"] and r["output_tokens"] == 48 for r in _records(result))
    assert all(lv["spec_decode_draft_tokens"] > 0 and lv["server_metrics_samples"] >= 2 for lv in result.levels)


def test_sagemaker_wire_in_front_of_vllm(vllm_server, tmp_path):
    with BackgroundServer(sagemaker_runtime.make_app(vllm_server.base_url, AK, SK, split=2)) as sm:
        w = {**CODE_EDIT, "concurrency": [2]}
        result = run_sweep(sagemaker_endpoint(sm.url), w, tmp_path)
    (lv,) = result.levels
    assert lv["requests_ok"] == 6 and all(r["output_tokens"] == 48 for r in _records(result))
    # SageMaker has no path to the server's /metrics: NULL with the reason
    assert lv["server_metrics_samples"] == 0 and lv["server_metrics_note"]
