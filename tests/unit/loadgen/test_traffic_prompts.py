"""Prompts of the user's traffic: the Zipf prefix draw, multi-turn turns carrying their history,
a trace's rows sharing the blocks their hash ids say, and the trace's own checks."""

import json
from collections import Counter

import pytest

from llmbench.analysis import metrics
from llmbench.loadgen.prompts import draw_prefix, make_prompt, session_turn_prompt, trace_prompt
from llmbench.loadgen.schedules import TraceArrivals
from llmbench.schemas.dataset import Conversation, DatasetError, DatasetSpec, TraceSpec, scan_trace


def test_zipf_draw_follows_one_over_k_to_the_s():
    # K = 4, s = 1: weights 1, 1/2, 1/3, 1/4 over H = 25/12, so P = 12/25, 6/25, 4/25, 3/25
    n = 50_000
    counts = Counter(draw_prefix(5, i, 4, "zipf", 1.0) for i in range(n))
    for k, p in enumerate((12 / 25, 6 / 25, 4 / 25, 3 / 25)):
        assert abs(counts[k] / n - p) < 0.01, (k, counts[k] / n, p)
    # s = 2: 1, 1/4, 1/9, 1/16 over 205/144 -> the first prefix takes 144/205 = 70.2 %
    first = sum(draw_prefix(5, i, 4, "zipf", 2.0) == 0 for i in range(n)) / n
    assert abs(first - 144 / 205) < 0.01


def test_uniform_draw_and_one_prefix():
    counts = Counter(draw_prefix(1, i, 5) for i in range(20_000))
    assert set(counts) == set(range(5)) and max(counts.values()) / min(counts.values()) < 1.1
    assert {draw_prefix(1, i, 1, "zipf") for i in range(50)} == {0}


def test_requests_with_the_same_prefix_id_share_their_system_prompt_and_others_do_not():
    a, b, c = (make_prompt(3, i, 200, 8, 100, prefix_id=k) for i, k in ((1, 2), (2, 2), (3, 1)))
    assert a.system == b.system and a.system != c.system and len(a.system.split()) == 100
    assert make_prompt(3, 1, 200, 8, 100).system == make_prompt(3, 1, 200, 8, 100, prefix_id=0).system
    assert metrics.shared_prefix_fraction(100, 300.0) == 0.25


def test_a_session_turn_carries_the_rows_earlier_turns():
    conv = Conversation(
        (("system", "s"), ("user", "u1"), ("assistant", "a1" * 8), ("user", "u2"), ("assistant", "a2"), ("user", "u3"))
    )
    spec = DatasetSpec(path="x", format="openai", output="data")
    t0, t1, t2 = (session_turn_prompt(conv, k, 50, spec) for k in range(3))
    assert t0.messages == (("system", "s"), ("user", "u1")) and t0.max_tokens == 4  # "a1" x 8: 16 chars / 4
    assert t1.messages == conv.turns[:4] and t1.text == "u2"
    assert t2.messages == conv.turns and t2.max_tokens == 50  # no answer in the data: the workload's
    assert session_turn_prompt(conv, 3, 50, spec) is None


def test_with_model_history_a_session_turn_carries_the_models_answers_not_the_rows():
    conv = Conversation(
        (("system", "s"), ("user", "u1"), ("assistant", "a1" * 8), ("user", "u2"), ("assistant", "a2"), ("user", "u3"))
    )
    spec = DatasetSpec(path="x", format="openai", output="data")
    t0 = session_turn_prompt(conv, 0, 50, spec, [])
    assert t0.messages == (("system", "s"), ("user", "u1")) and t0.max_tokens == 4  # the row's length still
    t2 = session_turn_prompt(conv, 2, 50, spec, ["first answer", "second"])
    assert t2.messages == (
        ("system", "s"), ("user", "u1"), ("assistant", "first answer"), ("user", "u2"), ("assistant", "second"),
        ("user", "u3"),
    )  # fmt: skip
    assert t2.text == "u3" and t2.system == "s"
    # a failed or empty answer is an empty assistant turn: the turns still alternate
    t1 = session_turn_prompt(conv, 1, 50, spec, [""])
    assert t1.messages == (("system", "s"), ("user", "u1"), ("assistant", ""), ("user", "u2"))
    with pytest.raises(ValueError, match="answers"):
        session_turn_prompt(conv, 2, 50, spec, ["only one"])
    assert session_turn_prompt(conv, 3, 50, spec, ["a", "b", "c"]) is None


def test_with_model_history_rows_without_answers_between_user_turns_get_one_after_each():
    # two user turns in a row (and an assistant turn before the first): the model answered each turn sent
    conv = Conversation((("assistant", "hello"), ("user", "u1"), ("user", "u2"), ("user", "u3")))
    spec = DatasetSpec(path="x", format="openai")
    t2 = session_turn_prompt(conv, 2, 50, spec, ["x", "yy"])
    assert t2.messages == (("user", "u1"), ("assistant", "x"), ("user", "u2"), ("assistant", "yy"), ("user", "u3"))


def _trace(tmp_path, rows):
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return TraceSpec(path=str(p), block_tokens=16)


def test_trace_rows_share_the_blocks_of_their_hash_ids_and_replay_at_their_times(tmp_path):
    rows = [
        {"timestamp": 0, "input_length": 80, "output_length": 5, "hash_ids": [1, 2]},
        {"timestamp": 250, "input_length": 80, "output_length": 7, "hash_ids": [1, 3]},
        {"timestamp": 1000, "input_length": 80, "output_length": 9},
    ]
    trace = scan_trace(_trace(tmp_path, rows))
    p0, p1, p2 = (trace_prompt(0, trace, k, 16).text.split() for k in range(3))
    head = len("Continue this list of words with more words:".split())
    assert p0[head : head + 16] == p1[head : head + 16]  # block 1, shared
    assert p0[head + 16 : head + 32] != p1[head + 16 : head + 32]  # blocks 2 and 3 differ
    assert len(p0) == 80 - 30  # input_length less the chat template's overhead
    assert trace_prompt(0, trace, 1, 16).max_tokens == 7
    sched = TraceArrivals(trace, time_scale=0.5, max_in_flight=4, block_tokens=16)
    assert list(sched.arrivals()) == [0.0, 0.125, 0.5]
    assert sched.arrival_rate_rps == 3 / 0.5
    # shared: block 1 of the second request (16 of 240 tokens)
    assert metrics.trace_shared_fraction(trace.hash_ids, trace.input_lengths, 16) == 16 / 240


BAD_TRACES = [
    (
        [
            {"timestamp": 10, "input_length": 5, "output_length": 5},
            {"timestamp": 9, "input_length": 5, "output_length": 5},
        ],
        r"t\.jsonl: line 2: timestamps go backwards \(9 ms after 10 ms\)",
    ),
    ([{"timestamp": 0, "input_length": 0, "output_length": 5}], r"line 1: input_length must be a positive integer"),
    ([{"timestamp": 0, "input_length": 4, "output_length": 5, "hash_ids": ["a"]}], r"line 1: hash_ids must be"),
    ([], r"empty trace"),
]


@pytest.mark.parametrize(("rows", "match"), BAD_TRACES)
def test_bad_traces_are_refused_in_one_line(tmp_path, rows, match):
    with pytest.raises(DatasetError, match=match):
        scan_trace(_trace(tmp_path, rows))


def test_a_malformed_trace_line_is_named(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"timestamp": 0, "input_length": 4, "output_length": 5}\n{"timestamp": 1,\n')
    with pytest.raises(DatasetError, match=r"t\.jsonl: line 2: malformed JSON"):
        scan_trace(TraceSpec(path=str(p)))
