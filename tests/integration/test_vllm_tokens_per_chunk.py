"""Tokens per chunk on the real vLLM (CPU, `make vllm`) and the real llama-server. With n-gram
speculation a streamed vLLM chunk carries several tokens and the record counts them from vLLM's
per-chunk usage (continuous_usage_stats), so the level's per-token ITL is below its inter-chunk gap
while TPOT keeps its definition; without speculation every chunk carries one token and the two are
the same. One vLLM at a time (each about 5 GB and both cores): the speculative one, then the plain
one. The vLLM tests are skipped with one line when the vLLM venv is absent."""

import json

import pytest

from llmbench.analysis import metrics
from llmbench.backends.openai.backend import OpenAIBackend
from llmbench.loadgen.sweep import run_sweep, run_warmup

from .vllm_fixtures import VllmServer, need_vllm, small_vllm

NGRAM = {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4, "prompt_lookup_min": 2}
# code-edit: the answer repeats the prompt, so n-gram drafts are accepted and chunks carry several tokens
CODE_EDIT = {
    "prompt_style": "code-edit",
    "input_tokens": 160,
    "output_tokens": 48,
    "concurrency": [1],
    "requests_per_level": 6,
    "warmup_requests": 1,
    "request_timeout_s": 120,
}


def _sweep(serving, tmp_path):
    server = VllmServer(serving, tmp_path / "vllm")
    try:
        backend = OpenAIBackend()
        handle = backend.attach(server.base_url + "/v1")
        backend.wait_ready(handle, 60)
        endpoint = backend.endpoint(handle)
        run_warmup(endpoint, CODE_EDIT)
        result = run_sweep(endpoint, CODE_EDIT, tmp_path / "sweep")
    finally:
        server.stop()
    records = [json.loads(x) for x in result.requests_path.with_suffix(".jsonl").read_text().splitlines()]
    (level,) = result.levels
    return records, level


def _check_records(records):
    for r in records:
        assert r["ok"] and r["chunk_tokens_source"] == "usage", r
        # ignore_eos: every token is counted, those streamed as empty chunks after an EOS included
        assert sum(r["chunk_tokens"]) == r["output_tokens"] == 48, r
        assert len(r["chunk_tokens"]) == len(r["itl_ms"]) + 1
        # TPOT keeps its definition: the per-token mean of the decode, from the record's own times
        assert r["tpot_ms"] == pytest.approx((r["e2e_ms"] - r["ttft_ms"]) / (r["output_tokens"] - 1))


def _figures(name, level):
    keys = ("itl_ms_p50", "chunk_gap_ms_p50", "tpot_ms_p50", "tokens_per_chunk_mean", "tokens_per_chunk_max",
            "multi_token_chunk_frac", "output_tokens_per_s")  # fmt: skip
    print(f"\n{name}: " + ", ".join(f"{k}={level[k]:.3f}" for k in keys))


def test_speculative_chunks_carry_several_tokens_and_itl_is_per_token(tmp_path):
    need_vllm()
    records, level = _sweep(small_vllm(speculative_config=NGRAM), tmp_path)
    _figures("ngram speculation", level)
    _check_records(records)
    assert level["chunk_tokens_source"] == "usage"
    assert level["tokens_per_chunk_max"] > 1 and level["multi_token_chunk_frac"] > 0, level
    assert level["chunk_gap_ms_p50"] > level["itl_ms_p50"], level
    # per token, the decode's time is shared out: the ITL samples' mean is TPOT's mean time per token
    samples = [x for r in records for x in metrics.per_token_itl_ms(r["itl_ms"], r["chunk_tokens"])]
    decode_ms = sum(sum(r["itl_ms"]) for r in records)
    assert sum(samples) == pytest.approx(decode_ms)
    assert level["itl_ms_mean"] < level["chunk_gap_ms_mean"]


def test_without_speculation_each_chunk_carries_one_token(tmp_path):
    need_vllm()
    records, level = _sweep(small_vllm(), tmp_path)
    _figures("no speculation", level)
    _check_records(records)
    assert level["tokens_per_chunk_max"] == 1 and level["multi_token_chunk_frac"] == 0, level
    assert level["itl_ms_p50"] == level["chunk_gap_ms_p50"]


def test_llama_server_ignores_the_option_and_counts_one_token_a_content_chunk(local_server, tmp_path):
    """llama-server gives usage once at the end, whatever continuous_usage_stats asks: the records
    fall back to one token per content chunk and say so. Last in the module: vLLM is stopped by then."""
    backend = OpenAIBackend()
    handle = backend.attach(local_server["base_url"] + "/v1")
    backend.wait_ready(handle, 60)
    result = run_sweep(backend.endpoint(handle), {**CODE_EDIT, "requests_per_level": 3}, tmp_path)
    records = [json.loads(x) for x in result.requests_path.with_suffix(".jsonl").read_text().splitlines()]
    for r in records:
        assert r["ok"] and r["output_tokens"] == 48 and r["chunk_tokens_source"] == "content", r
        assert r["chunk_tokens"] == [1] * r["content_chunks"]
    (level,) = result.levels
    assert level["chunk_tokens_source"] == "content" and level["itl_ms_p50"] == level["chunk_gap_ms_p50"]
