"""workload.dataset: each format read into conversations, the seeded draw (with and without
replacement), the length filter, the output length's three sources, and each bad file refused at
plan time in one line naming the file, the line and what is wrong, before anything is created."""

import hashlib
import json

import pytest
import yaml

from llmbench import paths
from llmbench.loadgen.prompts import chat_request_body, dataset_prompt
from llmbench.planning.config import ConfigError
from llmbench.planning.plan import plan
from llmbench.schemas.dataset import DatasetError, DatasetSpec, scan

OPENAI = [
    {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi there"},
            {"role": "assistant", "content": "Hello!"},
        ],
        "max_tokens": 7,
    },
    {"messages": [{"role": "user", "content": "What is two plus two, in words please?"}]},
]
SHAREGPT = [
    {"conversations": [{"from": "human", "value": "Tell me a story"}, {"from": "gpt", "value": "x" * 40}]},
    {
        "conversations": [
            {"from": "system", "value": "sys"},
            {"from": "human", "value": "A"},
            {"from": "gpt", "value": "B" * 8},
        ]
    },
]


def _jsonl(tmp_path, rows, name="d.jsonl"):
    p = tmp_path / name
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_openai_rows_keep_their_turns_and_max_tokens(tmp_path):
    p = _jsonl(tmp_path, OPENAI)
    index = scan(DatasetSpec(path=str(p), format="openai"))
    assert index.rows_total == 2 and index.rows_used == 2
    assert index.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()
    first = index.conversation(0)
    assert first.first_prompt == (("system", "Be brief."), ("user", "Hi there"))
    assert first.first_answer_tokens == 7  # the row's own max_tokens
    # the second row has no answer and no max_tokens: output "data" cannot size it
    with pytest.raises(DatasetError, match=r"line 2: output: data, but the row has neither"):
        scan(DatasetSpec(path=str(p), format="openai", output="data"))


def test_sharegpt_speakers_map_to_chat_roles_and_answers_size_the_output(tmp_path):
    index = scan(DatasetSpec(path=str(_jsonl(tmp_path, SHAREGPT)), format="sharegpt", output="data"))
    a, b = index.conversation(0), index.conversation(1)
    assert a.first_prompt == (("user", "Tell me a story"),)
    assert a.first_answer_tokens == 10  # 40 characters / 4
    assert b.first_prompt == (("system", "sys"), ("user", "A"))
    assert b.first_answer_tokens == 2
    assert index.max_data_tokens == 10


def test_text_lines_are_prompts_and_blank_lines_are_skipped(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("first prompt\n\nsecond one\n")
    index = scan(DatasetSpec(path=str(p), format="text"))
    assert index.rows_total == 2
    assert [index.conversation(k).turns for k in range(2)] == [(("user", "first prompt"),), (("user", "second one"),)]


def test_length_filter_keeps_rows_by_their_first_prompts_characters(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("a\n" + "b" * 10 + "\n" + "c" * 100 + "\n")
    index = scan(DatasetSpec(path=str(p), format="text", min_input_chars=5, max_input_chars=50))
    assert (index.rows_total, index.rows_used) == (3, 1)
    assert index.conversation(0).turns[0][1] == "b" * 10


def test_seeded_draw_with_and_without_replacement(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("".join(f"prompt {k}\n" for k in range(50)))
    index = scan(DatasetSpec(path=str(p), format="text"))
    # without replacement: 50 consecutive requests send 50 distinct rows, and the same ones again
    rows = [index.row_of(7, 100 + i, replacement=False) for i in range(50)]
    assert sorted(rows) == list(range(50))
    assert rows == [scan(DatasetSpec(path=str(p), format="text")).row_of(7, 100 + i, False) for i in range(50)]
    # with replacement: seeded per request, so the same (seed, index) gives the same row; repeats occur
    drawn = [index.row_of(7, i, replacement=True) for i in range(50)]
    assert drawn == [index.row_of(7, i, replacement=True) for i in range(50)]
    assert len(set(drawn)) < 50
    assert drawn != [index.row_of(8, i, replacement=True) for i in range(50)]


def test_request_body_carries_the_rows_turns_and_natural_stop_has_no_ignore_eos(tmp_path):
    p = _jsonl(tmp_path, OPENAI[:1])
    spec = DatasetSpec(path=str(p), format="openai", output="model")
    body = chat_request_body(dataset_prompt(spec, scan(spec), 0, 3, 64))
    assert body["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"}]
    assert body["ignore_eos"] is False and body["max_tokens"] == 64
    spec = DatasetSpec(path=str(p), format="openai", output="data")
    body = chat_request_body(dataset_prompt(spec, scan(spec), 0, 3, 64))
    assert body["ignore_eos"] is True and body["max_tokens"] == 7


def _config(tmp_path, dataset, workload=None):
    cfg = yaml.safe_load((paths.CONFIG_DIR / "local.yaml").read_text())
    cfg["workload"].update({"dataset": dataset, **(workload or {})})
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return str(p)


def test_plan_records_the_dataset_with_a_path_relative_to_the_config(tmp_path):
    p = _jsonl(tmp_path, SHAREGPT * 10)
    run = plan(_config(tmp_path, {"path": "d.jsonl", "format": "sharegpt"}), "2026-12-05", runs_root=tmp_path / "runs")
    d = run.targets[0].dataset
    assert d is not None and d.path == str(p.resolve())
    assert (d.format, d.rows_total, d.rows_used, d.sha256) == (
        "sharegpt",
        20,
        20,
        hashlib.sha256(p.read_bytes()).hexdigest(),
    )


BAD = [
    (
        "malformed line",
        "openai",
        ['{"messages": [{"role": "user", "content": "ok"}]}', '{"messages": [ broken'],
        r"d\.jsonl: line 2: malformed JSON",
    ),
    (
        "no user turn",
        "openai",
        ['{"messages": [{"role": "system", "content": "s"}, {"role": "assistant", "content": "a"}]}'],
        r"d\.jsonl: line 1: conversation without a user turn",
    ),
    (
        "bad role",
        "sharegpt",
        ['{"conversations": [{"from": "robot", "value": "x"}]}'],
        r"d\.jsonl: line 1: a turn must be",
    ),
    ("not an object", "openai", ["[1, 2]"], r"d\.jsonl: line 1: expected an object"),
    ("empty", "openai", ["", "  "], r"d\.jsonl: empty dataset"),
]


@pytest.mark.parametrize(("name", "fmt", "lines", "match"), BAD, ids=[b[0] for b in BAD])
def test_bad_data_refused_at_plan_time_in_one_line(tmp_path, name, fmt, lines, match):
    (tmp_path / "d.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=match) as e:
        plan(_config(tmp_path, {"path": "d.jsonl", "format": fmt}), "2026-12-05", runs_root=tmp_path / "runs")
    assert "\n" not in str(e.value)
    assert not (tmp_path / "runs").exists()  # refused before anything was created


def test_too_few_rows_for_a_level_without_replacement_and_a_missing_file_are_refused(tmp_path):
    _jsonl(tmp_path, SHAREGPT)
    with pytest.raises(ConfigError, match=r"2 rows pass the filter, fewer than the 8 requests"):
        plan(
            _config(tmp_path, {"path": "d.jsonl", "format": "sharegpt", "sample": "without_replacement"}),
            "2026-12-05",
            runs_root=tmp_path / "runs",
        )
    with pytest.raises(ConfigError, match=r"nope\.jsonl: cannot read it"):
        plan(_config(tmp_path, {"path": "nope.jsonl", "format": "text"}), "2026-12-05", runs_root=tmp_path / "runs")


def test_a_target_may_run_its_own_workload_and_a_trace_is_recorded_like_a_dataset(tmp_path):
    _jsonl(tmp_path, SHAREGPT * 10)
    (tmp_path / "t.jsonl").write_text('{"timestamp": 0, "input_length": 40, "output_length": 4}\n')
    cfg = yaml.safe_load((paths.CONFIG_DIR / "local.yaml").read_text())
    cfg["targets"][0]["workload"] = {"dataset": {"path": "d.jsonl", "format": "sharegpt"}, "multi_turn": {}}
    cfg["targets"][1]["workload"] = {"trace": {"path": "t.jsonl", "time_scale": 2}}
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(cfg))
    run = plan(str(p), "2026-12-05", runs_root=tmp_path / "runs")
    a, b = run.targets
    assert a.workload.multi_turn is not None and a.dataset.rows_used == 20 and a.workload.input_tokens == 128
    assert b.workload.trace.time_scale == 2 and b.dataset.format == "mooncake-trace" and b.dataset.rows_total == 1
    cfg["targets"][1]["workload"] = {"multi_turn": {}}
    p.write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConfigError, match=r"targets\[smollm2-q4_1-4slots\]\.workload: .*set dataset too"):
        plan(str(p), "2026-12-05", runs_root=tmp_path / "runs2")
