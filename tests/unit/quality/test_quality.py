"""The correctness suites' graders (right, wrong-but-plausible, malformed), the request each wire
sends, a suite a server refuses ("unsupported"), and the gate's effect on best_under_slo."""

import json
import threading
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pandas as pd
import pytest

from llmbench import quality
from llmbench.backends.base import Endpoint
from llmbench.quality.grading import Answer, grade_exact, grade_tool_call
from llmbench.schemas.targets import QualitySettings

GE_10_NO_10 = next(i for i in quality.TOOL_ITEMS if i.id == "ge-10-no-10")  # ids [4, 11, 15, 8, 20]


def call(arguments, name="count_ids"):
    return Answer(tool_calls=[(name, arguments if isinstance(arguments, str) else json.dumps(arguments))])


# ---- tool_call -----------------------------------------------------------------------------------


@pytest.mark.parametrize("flt", ["id >= 10", "id>=10", "x >= 10", ">= 10", "id > 9", "id >= 10 and id < 5000"])
def test_tool_call_right_filters_pass_whatever_their_spelling(flt):
    g = grade_tool_call(GE_10_NO_10, call({"ids": [4, 11, 15, 8, 20], "filter": flt}))
    assert g.strict and g.flexible, g.reason


def test_tool_call_id_greater_than_10_is_wrong_even_when_the_count_matches():
    # On [4, 11, 15, 8, 20] both filters count 3: only the condition tells them apart.
    g = grade_tool_call(GE_10_NO_10, call({"ids": [4, 11, 15, 8, 20], "filter": "id > 10"}))
    assert not g.flexible
    assert "differs at id=10" in g.reason and "same count" in g.reason


def test_tool_call_ids_in_another_order_pass_but_other_ids_fail():
    assert grade_tool_call(GE_10_NO_10, call({"ids": [20, 8, 15, 11, 4], "filter": "id >= 10"})).flexible
    g = grade_tool_call(GE_10_NO_10, call({"ids": [11, 15, 20], "filter": "id >= 10"}))
    assert not g.flexible and "not the question's" in g.reason


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (Answer(text="There are 3 ids at least 10."), "no tool call"),
        (call('{"ids": [4, 11, 15, 8, 20], "filter": "id >= 10"', ), "not JSON"),  # truncated
        (call({"ids": ["4", "11"], "filter": "id >= 10"}), "ids[0]: not an integer"),
        (call({"ids": [4, 11, 15, 8, 20]}), "missing ['filter']"),
        (call({"ids": [4, 11, 15, 8, 20], "filter": "id >= 10", "limit": 3}), "unexpected ['limit']"),
        (call({"ids": [4, 11, 15, 8, 20], "filter": "big ones"}), "unreadable"),
        (call({"ids": [4, 11, 15, 8, 20], "filter": "id >= 10"}, name="count"), "called 'count'"),
        (Answer(error="HTTP 503: loading"), "request failed"),
    ],
)
def test_tool_call_malformed_answers_fail_with_a_reason(answer, why):
    g = grade_tool_call(GE_10_NO_10, answer)
    assert not g.flexible and why in g.reason, g.reason


# ---- exact ---------------------------------------------------------------------------------------

ADD = next(i for i in quality.EXACT_ITEMS if i.id == "add-7-5")
CAT = next(i for i in quality.EXACT_ITEMS if i.id == "upper-cat")


@pytest.mark.parametrize("text", ["12", " 12.\n", "**12**", "`12`", '"12"'])
def test_exact_right_answers_in_the_asked_format_pass_strict(text):
    g = grade_exact(ADD, Answer(text=text))
    assert g.strict and g.flexible, g.reason


# lm-evaluation-harness's GSM8K cases: the format is wrong (strict fails), the number is right.
@pytest.mark.parametrize("text", ["#### 12", "7 + 5 = 12.", "The answer is 12", "The answer is 12.", "12 apples"])
def test_exact_answers_in_a_sentence_pass_flexible_only(text):
    g = grade_exact(ADD, Answer(text=text))
    assert not g.strict and g.flexible, g.reason
    assert "is not '12'" in g.reason and "last number '12'" in g.reason


@pytest.mark.parametrize(
    ("text", "number"),
    [("#### 12", "12"), ("12.", "12"), ("$1,234", "1234"), ("The answer is 12", "12"), ("costs $1,234.", "1234"),
     ("5 + 7 = 12 and then 13", "13"), ("no digits", None), ("-3 degrees", "-3"), ("2.5 kg", "2.5")],
)
def test_extract_number_is_lm_evals_flexible_extract(text, number):
    assert quality.extract_number(text) == number


def test_flexible_compares_numbers_and_takes_the_last_one():
    big = quality.ExactItem("x", "q", "1234")
    assert grade_exact(big, Answer(text="$1,234")).flexible and not grade_exact(big, Answer(text="$1,234")).strict
    assert grade_exact(big, Answer(text="1234.0")).flexible  # the same number
    assert not grade_exact(ADD, Answer(text="12 + 1 = 13")).flexible  # the last number decides
    assert not grade_exact(ADD, Answer(text="13")).flexible


def test_text_answers_pass_flexible_by_whole_word_containment():
    paris = next(i for i in quality.EXACT_ITEMS if i.id == "capital")
    g = grade_exact(paris, Answer(text="The capital of France is Paris."))
    assert g.flexible and not g.strict
    assert not grade_exact(paris, Answer(text="Parisian cafes")).flexible  # inside a longer word
    assert not grade_exact(CAT, Answer(text="the word is cat")).flexible  # case is the task here
    assert grade_exact(CAT, Answer(text="The word is CAT.")).flexible


def test_exact_fixed_format_keeps_case_and_malformed_answers_fail():
    assert grade_exact(CAT, Answer(text="CAT")).strict
    assert not grade_exact(CAT, Answer(text="cat")).strict
    assert not grade_exact(ADD, Answer(text="")).flexible
    assert "request failed" in grade_exact(ADD, Answer(error="timeout")).reason


def test_a_truncated_answer_fails_as_truncated_not_silently_wrong():
    g = grade_exact(ADD, Answer(text="To solve this we add 7 and 5, which gives 1", truncated=True))
    assert g.truncated and not g.flexible and not g.strict and g.reason.startswith("truncated")
    g = grade_tool_call(GE_10_NO_10, Answer(text="Let me think", truncated=True))
    assert g.truncated and g.reason.startswith("truncated")


# ---- reasoning -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "reasoning", "answer"),
    [
        ("<think>7 plus 5 is 12</think>\n12", "7 plus 5 is 12", "12"),
        ("<think>still thinking about 7 + 5", "still thinking about 7 + 5", ""),  # cut off inside
        ("the template opened it</think> 12", "the template opened it", "12"),
        ("12", "", "12"),
    ],
)
def test_split_thinking(text, reasoning, answer):
    assert quality.split_thinking(text) == (reasoning, answer)


def test_reasoning_is_separated_counted_and_a_cut_off_answer_is_truncated():
    body = {"choices": [{"finish_reason": "stop", "message": {"content": "<think>abcdefgh</think>12"}}],
            "usage": {"completion_tokens": 10}}
    a = quality.parse_answer("sse", body)
    assert a.text == "12" and a.reasoning == "abcdefgh" and not a.truncated
    assert a.completion_tokens == 10 and a.reasoning_tokens == 8  # 8 of 10 characters: an estimate
    body = {"choices": [{"finish_reason": "length", "message": {"content": "", "reasoning_content": "hmm, 7 + 5"}}],
            "usage": {"completion_tokens": 48, "completion_tokens_details": {"reasoning_tokens": 48}}}
    a = quality.parse_answer("sse", body)
    assert a.truncated and a.reasoning == "hmm, 7 + 5" and a.reasoning_tokens == 48
    assert grade_exact(ADD, a).truncated


def test_the_suites_are_a_few_dozen_items_with_unique_ids():
    assert len(quality.EXACT_ITEMS) >= 24 and len(quality.TOOL_ITEMS) >= 4
    for items in quality.SUITES.values():
        assert len({i.id for i in items}) == len(items)
    for item in quality.TOOL_ITEMS:  # every expected filter is in the grader's grammar
        quality.parse_filter(item.expected)


# ---- wires ---------------------------------------------------------------------------------------


def test_each_wire_sends_its_own_non_streaming_body_with_tools():
    sm = Endpoint(url="https://rt/endpoints/e/invocations-response-stream", wire="sagemaker",
                  headers={"Accept": "application/vnd.amazon.eventstream"})
    url, body, headers = quality.request_for(sm, "tool_call", "q", 48)
    assert url == "https://rt/endpoints/e/invocations" and body["stream"] is False
    assert body["tools"] == quality.OPENAI_TOOLS and headers["Accept"] == "application/json"
    br = Endpoint(url="https://rt/model/amazon.nova-micro-v1%3A0/converse-stream", wire="bedrock")
    url, body, _ = quality.request_for(br, "tool_call", "q", 48)
    assert url.endswith("/converse") and body["toolConfig"]["tools"][0]["toolSpec"]["name"] == "count_ids"
    url, body, _ = quality.request_for(br, "exact", "q", 48)
    assert "toolConfig" not in body and body["inferenceConfig"]["maxTokens"] == 48


def test_answers_parse_from_openai_and_converse_responses():
    oa = {"choices": [{"message": {"content": None, "tool_calls": [
        {"type": "function", "function": {"name": "count_ids", "arguments": '{"ids": [1], "filter": "id < 5"}'}}]}}]}
    assert quality.parse_answer("sse", oa).tool_calls == [("count_ids", '{"ids": [1], "filter": "id < 5"}')]
    cv = {"output": {"message": {"content": [{"text": "Sure."}, {"toolUse": {
        "toolUseId": "t1", "name": "count_ids", "input": {"ids": [1], "filter": "id < 5"}}}]}}}
    a = quality.parse_answer("bedrock", cv)
    assert a.text == "Sure." and json.loads(a.tool_calls[0][1]) == {"ids": [1], "filter": "id < 5"}


class _Server(BaseHTTPRequestHandler):
    """Refuses tools as llama-server does without jinja templates; answers "12" otherwise."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "tools" in body:
            out, code = b'{"error": {"code": 500, "message": "tools param requires --jinja flag"}}', 500
        else:
            out, code = json.dumps({"choices": [{"message": {"content": "12"}}]}).encode(), 200
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


def test_a_server_that_refuses_tools_records_the_suite_unsupported(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        ep = Endpoint(url=f"http://127.0.0.1:{server.server_port}/v1/chat/completions")
        settings = QualitySettings(suites=["tool_call", "exact"], runs=2, concurrency=3)
        s = quality.run_quality(ep, settings, tmp_path)
    finally:
        server.shutdown()
    assert s["suites"]["tool_call"]["status"] == "unsupported" and "--jinja" in s["suites"]["tool_call"]["reason"]
    exact = s["suites"]["exact"]
    assert exact["status"] == "scored" and exact["n"] == 2 * len(quality.EXACT_ITEMS)
    assert exact["passed"] == 2 * sum(i.answer == "12" for i in quality.EXACT_ITEMS)
    lines = [json.loads(x) for x in (tmp_path / "quality.jsonl").read_text().splitlines()]
    assert len(lines) == exact["n"] + 1 and all("reason" in x for x in lines if x.get("suite") == "exact")
    assert json.loads((tmp_path / "quality.json").read_text()) == s


# ---- the gate and the ranking --------------------------------------------------------------------


def _target(run_dir, target_id, quality_cfg):
    from llmbench.schemas.targets import ResolvedTarget

    return ResolvedTarget.model_validate({
        "run_key": "k", "run_dir": str(run_dir), "target_id": target_id, "label": f"cpu / m / {target_id}",
        "instance_type": "cpu", "model": "m", "hf_id": None, "precision": "q4",
        "serving": {"kind": "llama-server", "name": target_id}, "workload": {}, "validation": {},
        "slo": {"ttft_ms": 2000, "tpot_ms": 100}, "price": {"usd_per_hour": 1.0, "source": "test"},
        "backend": {"kind": "local"}, "region": "local", "estimated_endpoint_hours": 0.1, "estimated_usd": 0.1,
        "quality": quality_cfg})


def test_a_target_failing_the_gate_is_published_but_never_best_under_slo(tmp_path):
    """Two targets of one model: `fast` is cheaper per token but answers worse than the minimum
    and more than the allowed margin below the baseline `careful`."""
    from llmbench.results.tables import build_tables
    from llmbench.schemas.targets import RunPlan
    from tests.unit.results.test_price_rows import level

    cfg = {"suites": ["tool_call", "exact"], "runs": 1, "min_score": {"exact": 0.5},
           "baseline": "careful", "max_drop_vs_baseline": 0.1}
    targets = [_target(tmp_path, t, cfg) for t in ("fast", "careful")]
    plan = RunPlan(run_key="k", run_dir=str(tmp_path), config_name="c", backends=["local"],
                   logical_date="2026-12-01", planned_at="2026-12-01T00:00:00+00:00", warehouse={}, warnings=[],
                   estimated_endpoint_hours=0.2, estimated_usd=0.2, targets=targets)
    (tmp_path / "plan.json").write_text(plan.model_dump_json())
    scores = {"fast": (0.4, 0.6), "careful": (0.9, 0.9)}  # (tool_call, exact)
    for t in targets:
        t.dir.mkdir()
        lv = level(1)
        if t.target_id == "careful":  # half the throughput: twice the $/M
            lv = {**lv, "output_tokens_per_s": lv["output_tokens_per_s"] / 2}
        pd.DataFrame([lv]).to_parquet(t.dir / "levels.parquet")
        pd.DataFrame([{"ok": True, "output_tokens": 1}]).to_parquet(t.dir / "requests.parquet")
        tc, ex = scores[t.target_id]
        (t.dir / "quality.json").write_text(json.dumps({"runs": 1, "suites": {
            "tool_call": {"status": "scored", "score": tc, "n": 10, "passed": int(tc * 10), "reason": None},
            "exact": {"status": "scored", "score": ex, "n": 10, "passed": int(ex * 10), "reason": None}}}))
        for stage in ("sweep", "validate"):
            with (t.dir / "events.jsonl").open("a") as f:
                f.write(json.dumps({"stage": stage, "status": "succeeded", "at": "2026-12-01T00:00:00+00:00"}) + "\n")
        (t.dir / "validation.json").write_text(json.dumps({"validation_passed": True}))

    frames = build_tables(str(tmp_path))
    tg = frames["targets"].set_index("target_id")
    assert tg.loc["fast", "quality_passed"] == False and tg.loc["careful", "quality_passed"] == True  # noqa: E712
    assert tg.loc["fast", "quality_score"] == pytest.approx(0.5)
    assert tg.loc["fast", "quality_score_tool_call"] == pytest.approx(0.4)
    q = frames["quality"].set_index(["target_id", "suite"])
    assert q.loc[("fast", "tool_call"), "drop_vs_baseline"] == pytest.approx(0.5)
    assert pd.isna(q.loc[("careful", "exact"), "drop_vs_baseline"])  # the baseline against itself: not judged
    report = json.loads((targets[0].dir / "quality_validation.json").read_text())
    assert report["quality_passed"] is False and any("tool_call" in f for f in report["failures"])
    pp = frames["price_performance"].set_index("target_id")
    assert pp.loc["fast", "usd_per_m_output_tokens"] < pp.loc["careful", "usd_per_m_output_tokens"]
    assert not pp.loc["fast", "best_under_slo"] and pp.loc["careful", "best_under_slo"]  # published, not chosen
    assert frames["runs"].iloc[0]["targets_quality_failed"] == 1 and frames["runs"].iloc[0]["status"] == "partial"
    want = {"strict": True, "flexible": True, "reason": "x", "truncated": False}
    assert asdict(quality.Grade(True, True, "x")) == want


def test_quality_rows_measure_the_drop_on_the_same_items_with_its_interval(tmp_path):
    """The int4 target names the fp16 one as its baseline (a target-level override): the drop is
    paired on (suite, item, run), whatever order the answers were logged in."""
    from llmbench.results.tables import quality_rows
    from llmbench.schemas.targets import RunPlan

    cfg = {"suites": [{"name": "arith", "kind": "arithmetic", "size": 100}], "runs": 1}
    fp16 = _target(tmp_path, "fp16", cfg)
    int4 = _target(tmp_path, "int4", {**cfg, "baseline": "fp16", "max_drop_vs_baseline": 0.03})
    plan = RunPlan(run_key="k", run_dir=str(tmp_path), config_name="c", backends=["local"],
                   logical_date="2026-12-01", planned_at="2026-12-01T00:00:00+00:00", warehouse={}, warnings=[],
                   estimated_endpoint_hours=0.2, estimated_usd=0.2, targets=[fp16, int4])
    # 80 both right, 10 only fp16 right, 2 only int4 right, 8 both wrong (test_quality_stats' case)
    base = [True] * 90 + [False] * 10
    mine = [True] * 80 + [False] * 10 + [True] * 2 + [False] * 8
    for t, passes in ((fp16, base), (int4, mine)):
        t.dir.mkdir()
        lines = [{"suite": "arith", "item": f"i{i}", "run": 0, "passed": p} for i, p in enumerate(passes)]
        if t is int4:
            lines.reverse()
        (t.dir / "quality.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        n = len(passes)
        (t.dir / "quality.json").write_text(json.dumps({"runs": 1, "suites": {"arith": {
            "status": "scored", "score": sum(passes) / n, "n": n, "passed": sum(passes), "reason": None}}}))
    rows = {r["target_id"]: r for r in quality_rows(plan)}
    r = rows["int4"]
    assert r["baseline_score"] == pytest.approx(0.9) and r["drop_vs_baseline"] == pytest.approx(0.08)
    assert r["drop_ci_low"] == pytest.approx(0.013939, abs=1e-5)
    assert r["drop_ci_high"] == pytest.approx(0.146061, abs=1e-5)
    assert rows["fp16"]["drop_vs_baseline"] is None and rows["fp16"]["drop_ci_low"] is None
