"""Prompts counted with vLLM's own tokenizer (POST /tokenize), on the real vLLM (CPU, `make vllm`):
generated prompts land on their asked length in vLLM's own count (usage.prompt_tokens), and a
dataset's rows, sent as they are, carry the client's count beside the server's; each level's mean
difference is 0. The local backend names vLLM's API (Endpoint.tokenize_api); an `openai` target
attached to the same server does not, and finds it behind llama-server's absent one. Skipped with
one line when the vLLM venv is absent."""

from pathlib import Path

import pandas as pd
import pytest

from llmbench.backends.local.backend import LocalBackend
from llmbench.backends.openai.backend import OpenAIBackend
from llmbench.loadgen.sweep import run_sweep
from llmbench.loadgen.tokenizer import sizing_for
from llmbench.schemas.workload import Workload, sample_length

from .vllm_fixtures import VllmServer, need_vllm, small_vllm

CONVERSATIONS = Path(__file__).resolve().parents[2] / "include" / "llmbench" / "config" / "traffic" / "conversations.jsonl"


@pytest.fixture(scope="module")
def vllm_server(tmp_path_factory):
    need_vllm()
    server = VllmServer(small_vllm(), tmp_path_factory.mktemp("vllm"))
    try:
        yield server
    finally:
        server.stop()


def _sweep(endpoint, workload, tmp_path):
    result = run_sweep(endpoint, Workload.model_validate(workload), tmp_path)
    rq = pd.read_parquet(result.requests_path).sort_values("request_index")
    assert rq["ok"].all(), rq["error_detail"].tolist()
    (level,) = result.levels
    return rq, level


def test_generated_prompts_land_on_their_length_in_vllms_count(vllm_server, tmp_path):
    endpoint = LocalBackend().endpoint(vllm_server.handle)
    assert endpoint.tokenize_api == "vllm"
    workload = {
        "input_tokens": {"dist": "uniform", "min": 100, "max": 900},
        "shared_prefix_tokens": 200,
        "prefix_count": 2,
        "output_tokens": 4,
        "concurrency": [2],
        "requests_per_level": 8,
        "warmup_requests": 0,
        "request_timeout_s": 120,
    }
    rq, level = _sweep(endpoint, workload, tmp_path)
    w = Workload.model_validate(workload)
    asked = [sample_length(w.input_tokens, w.seed, i, "input") + 200 for i in rq["request_index"]]
    served = rq["input_tokens"].tolist()
    print(f"vLLM generated prompts: asked {asked}, served {served}, client {rq['input_tokens_client'].tolist()}")
    assert len(set(asked)) > 3
    # within one token of the asked length (a two-token word may not fit the last slot)
    assert all(a - 1 <= s <= a for a, s in zip(asked, served, strict=True)), list(zip(asked, served, strict=True))
    assert rq["input_tokens_client"].tolist() == served  # the client counted what vLLM did
    assert level["input_tokens_client_minus_server_mean"] == 0.0 and level["prompt_sizing"] == "tokenizer"


def test_a_datasets_rows_carry_vllms_count_beside_the_servers(vllm_server, tmp_path):
    backend = OpenAIBackend()  # an endpoint that does not name its engine's API
    handle = backend.attach(vllm_server.base_url + "/v1")
    backend.wait_ready(handle, 60)
    endpoint = backend.endpoint(handle)
    assert endpoint.tokenize_api is None and sizing_for(endpoint, 0, 0, 1) is not None
    workload = {
        "dataset": {"path": str(CONVERSATIONS), "format": "openai", "max_input_chars": 3000},
        "output_tokens": 4,
        "concurrency": [2],
        "requests_per_level": 10,
        "warmup_requests": 0,
        "request_timeout_s": 120,
    }
    rq, level = _sweep(endpoint, workload, tmp_path)
    print(f"vLLM dataset rows: server {rq['input_tokens'].tolist()}, client {rq['input_tokens_client'].tolist()}")
    assert rq["input_tokens_client"].notna().all()
    assert rq["input_tokens_client"].tolist() == rq["input_tokens"].tolist()
    assert level["input_tokens_client_minus_server_mean"] == 0.0 and level["prompt_sizing"] == "dataset"
