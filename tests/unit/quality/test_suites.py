"""Generated suites: seeded, reproducible, any size, with right answers; user suites from JSONL."""

import json

import pytest

from llmbench import quality
from llmbench.errors import InputError
from llmbench.quality.grading import Answer, grade_exact, grade_tool_call
from llmbench.schemas.targets import QualityOverride, QualitySettings, SuiteSpec


def test_generated_suites_are_reproducible_and_a_larger_one_extends_a_smaller_one():
    for make in (quality.arithmetic_items, quality.units_items, quality.tool_call_items):
        assert make(50, seed=3) == make(50, seed=3)
        assert make(200, seed=3)[:50] == make(50, seed=3)
        assert make(50, seed=3) != make(50, seed=4)
        items = make(1000, seed=0)
        assert len(items) == 1000 and len({i.id for i in items}) == 1000


def test_arithmetic_and_unit_answers_are_right():
    for item in quality.arithmetic_items(300, seed=1, max_operand=99):
        expr = item.prompt.removeprefix("What is ").split("?")[0].replace("times", "*")
        assert str(eval(expr)) == item.answer  # noqa: S307 - our own generated digits and operators
        assert int(item.answer) >= 0
    factors = {"metres": 1000, "centimetres": 100, "grams": 1000, "seconds": 60, "inches": 12}
    for item in quality.units_items(300, seed=1):
        words = item.prompt.split()  # How many <small> are in <v> <big>?
        small, v = words[2], int(words[5])
        if small in factors and not (small == "metres" and words[6] != "kilometres?"):
            assert int(item.answer) == v * factors[small]
        assert int(item.answer) % v == 0


def test_generated_tool_items_grade_their_own_expected_call_right_and_a_neighbour_wrong():
    items = quality.tool_call_items(200, seed=1)
    assert {i.expected.split()[1] for i in items} == {">=", "<=", ">", "<", "=="}
    for item in items:
        right = Answer(tool_calls=[("count_ids", json.dumps({"ids": list(item.ids), "filter": item.expected}))])
        assert grade_tool_call(item, right).flexible
        n = int(item.expected.split()[2])
        off = Answer(tool_calls=[("count_ids", json.dumps({"ids": list(item.ids), "filter": f"id == {n + 1}"}))])
        assert not grade_tool_call(item, off).flexible


def test_jsonl_suites_read_answers_and_tool_calls_and_say_where_they_are_wrong(tmp_path):
    p = tmp_path / "mine.jsonl"
    p.write_text(
        '{"prompt": "2+2?", "answer": 4}\n\n'
        '{"id": "t", "prompt": "count ids over 3", "tool_call": {"ids": [1, 5], "filter": "id > 3"}}\n'
    )
    a, t = quality.build_suite(SuiteSpec(name="mine", kind="jsonl", path=str(p)))
    assert a.id == "1" and grade_exact(a, Answer(text="It is 4.")).flexible
    assert t.prompt == "count ids over 3" and t.expected == "id > 3"
    p.write_text('{"prompt": "x"}\n')
    with pytest.raises(InputError, match=r"mine.jsonl:1 needs `answer`"):
        quality.jsonl_items(p, "mine")
    p.write_text('{"prompt": "x", "tool_call": {"ids": [1], "filter": "big"}}\n')
    with pytest.raises(InputError, match=r":1: tool_call.filter"):
        quality.jsonl_items(p, "mine")


def test_quality_settings_accept_names_and_specs_and_a_target_override():
    q = QualitySettings.model_validate(
        {
            "suites": ["exact", {"name": "arith", "kind": "arithmetic", "size": 10, "max_tokens": 16}],
            "min_score": {"arith": 0.3},
        }
    )
    assert q.suite_names == ["exact", "arith"] and q.grade_on == "flexible"
    assert q.max_tokens_of(q.suites[1]) == 16 and q.max_tokens_of(q.suites[0]) == 96
    hot = QualityOverride(temperature=2.0, baseline="b", max_drop_vs_baseline=0.02).applied_to(q)
    assert hot.temperature == 2.0 and hot.baseline == "b" and hot.suite_names == q.suite_names
    with pytest.raises(ValueError, match="not in quality.suites"):
        QualitySettings.model_validate({"suites": ["exact"], "min_score": {"arith": 0.3}})
    with pytest.raises(ValueError, match="kind jsonl needs one"):
        SuiteSpec(name="x", kind="jsonl")
