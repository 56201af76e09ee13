"""Tokens per chunk from hand-made SSE streams in vLLM's shape with continuous_usage_stats (every
chunk carries the running usage): chunks of k tokens, the empty chunks vLLM streams after an EOS
under ignore_eos, and llama-server's shape (usage once at the end). Expected figures by hand."""

import json

import pytest

from llmbench.analysis import metrics
from llmbench.loadgen.wire import build_record

MS = 1_000_000


def vchunk(content, completion_tokens, finish=None):
    """A chat-completion chunk with continuous usage: the running completion_tokens."""
    return b"data: " + json.dumps({
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 20, "completion_tokens": completion_tokens, "total_tokens": 20 + completion_tokens},
    }).encode() + b"\n\n"  # fmt: skip


def final_usage(completion_tokens):
    usage = {"prompt_tokens": 20, "completion_tokens": completion_tokens}
    return b"data: " + json.dumps({"choices": [], "usage": usage}).encode() + b"\n\n"


def record(items, end_ms=400):
    """items: (t_ms, bytes); send at 0."""
    ls = [(t * MS, b) for t, b in items] + [(end_ms * MS, b"data: [DONE]\n\n")]
    return build_record(concurrency=1, request_index=0, worker=0, send_ns=0, end_ns=end_ms * MS, send_lag_ns=0,
                        http_status=200, lines=ls, error_kind=None, error_detail=None, max_tokens=16)  # fmt: skip


# Speculation: tokens 1 | 2-4 (3 accepted) | 5-6 | 7, then an EOS and three empty chunks
# (ignore_eos: tokens 8-10 have no text), the last with the finish reason.
SPECULATIVE = [
    (100, vchunk("def", 1)),
    (160, vchunk(" f(x): return", 4)),
    (200, vchunk(" x +", 6)),
    (220, vchunk(" 1", 7)),
    (260, vchunk("", 8)),
    (300, vchunk("", 9)),
    (340, vchunk("", 10, finish="length")),
    (350, final_usage(10)),
]


def test_k_token_chunks_give_per_token_itl_below_the_chunk_gap():
    r = record(SPECULATIVE)
    assert r.ok and r.chunk_tokens_source == "usage" and r.output_tokens == 10
    assert r.content_chunks == 4
    # the empty post-EOS chunks carried tokens: they are chunks of one token each
    assert r.chunk_tokens == [1, 3, 2, 1, 1, 1, 1]
    assert r.itl_ms == [60, 40, 20, 40, 40, 40]
    itl = metrics.per_token_itl_ms(r.itl_ms, r.chunk_tokens)
    assert itl == [20, 20, 20, 20, 20, 20, 40, 40, 40]  # 60/3 x3, 40/2 x2, 20, 40 x3
    # TPOT: (e2e 400 - ttft 100) / 9, the per-token mean whatever the chunks carried
    assert r.ttft_ms == 100 and r.tpot_ms == pytest.approx(300 / 9)


def test_dividing_by_tokens_per_content_chunk_would_understate_itl():
    """What usage totals and a count of content chunks give: 10 tokens / 4 content chunks = 2.5
    per chunk, and the content chunks' gaps 60, 40, 20 over 2.5 -> 24, 16, 8 ms, mean 16 ms: the
    three empty chunks' tokens and their 120 ms are lost. Per chunk usage: 240 ms over 9 tokens."""
    r = record(SPECULATIVE)
    naive = [g / (r.output_tokens / r.content_chunks) for g in (60, 40, 20)]
    itl = metrics.per_token_itl_ms(r.itl_ms, r.chunk_tokens)
    assert sum(naive) / len(naive) == pytest.approx(16) and sum(itl) / len(itl) == pytest.approx(240 / 9)


def test_a_level_reports_per_token_itl_and_the_chunk_gap_separately():
    level = metrics.summarize_level([record(SPECULATIVE)], concurrency=1)
    assert level["itl_ms_p50"] == 20 and level["itl_ms_mean"] == pytest.approx(240 / 9)
    assert level["chunk_gap_ms_p50"] == 40 and level["chunk_gap_ms_mean"] == pytest.approx(240 / 6)
    assert level["tokens_per_chunk_mean"] == pytest.approx(10 / 7) and level["tokens_per_chunk_max"] == 3
    assert level["multi_token_chunk_frac"] == pytest.approx(2 / 7) and level["chunk_tokens_source"] == "usage"
    assert level["tpot_ms_p50"] == pytest.approx(300 / 9)


def test_llama_server_shape_falls_back_to_one_token_per_content_chunk():
    """Usage only at the end (llama-server ignores continuous_usage_stats): one token a content
    chunk, and the method says so; the per-token ITL is then the chunk gap."""

    def chunk(content, finish=None):
        return b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": content} if content else {},
                                                    "finish_reason": finish}]}).encode() + b"\n\n"  # fmt: skip

    r = record([(100, chunk("a")), (130, chunk("b")), (190, chunk("c")), (200, chunk(None, "length")),
                (210, final_usage(3))])  # fmt: skip
    assert r.ok and r.chunk_tokens_source == "content" and r.chunk_tokens == [1, 1, 1] and r.itl_ms == [30, 60]
    level = metrics.summarize_level([r], concurrency=1)
    assert level["itl_ms_p50"] == level["chunk_gap_ms_p50"] == 45 and level["chunk_tokens_source"] == "content"


def test_a_content_chunk_without_usage_means_no_per_chunk_counts():
    """Usage on some chunks only cannot say what the others carried: one per content chunk."""
    items = [(100, vchunk("a", 1)), (130, b'data: {"choices": [{"index": 0, "delta": {"content": "b"}}]}\n\n'),
             (160, vchunk("c", 5, finish="length"))]  # fmt: skip
    r = record(items)
    assert r.ok and r.chunk_tokens_source == "content" and r.chunk_tokens == [1, 1, 1]


def test_a_running_count_that_goes_down_is_malformed():
    r = record([(100, vchunk("a", 3)), (130, vchunk("b", 2, finish="length"))])
    assert not r.ok and r.error_kind == "malformed_chunk" and "went down" in (r.error_detail or "")


def test_a_record_from_before_counts_one_token_a_chunk():
    r = record(SPECULATIVE)
    old = type(r).from_row({k: v for k, v in r.to_row().items() if k not in ("chunk_tokens", "chunk_tokens_source")})
    assert metrics.chunk_tokens_of(old) == [1] * 7
    assert metrics.summarize_level([old], concurrency=1)["itl_ms_p50"] == 40
