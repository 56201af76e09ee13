"""Correctness beside price-performance: small, deterministic suites shipped here, sent to a
target through the same backend and wire format as its sweep (non-streaming, outside the timed
levels), and graded here, without an LLM judge.

Suites:
  tool_call  seed 001's shape: a question plus the `count_ids(ids, filter)` tool. Graded: a tool
             was called, its name, arguments that parse as JSON and fit the tool's schema, the
             ids passed as given, and the filter's meaning: it must accept exactly the ids the
             question asks for over a range of integers (`id > 9` is `id >= 10`; `id > 10` is
             wrong even where it gives the same count on the question's ids).
  exact      short tasks with one right answer (arithmetic, extraction, a fixed format), graded
             twice: strict (normalised exact match, `normalise`: the format asked for) and
             flexible (lm-eval's flexible-extract: the last number with `$`, `,` and a trailing
             `.` stripped; a text answer contained as a whole word, `contains_answer`).
  arithmetic, units, tool_call_generated
             generated, seeded, of any size (suites.arithmetic_items, units_items,
             tool_call_items); graded as exact and tool_call are.
  jsonl      a user's file: `prompt` with `answer` or `tool_call: {ids, filter}`.

Reasoning (<think>...</think>, `reasoning_content`) is split from the answer and its tokens
counted; an answer cut off by the token limit is `truncated` (failed, and counted as such).

Wires: the endpoint's (registry.WireFormat: OpenAI chat completions with `tools` unless the wire
declares its own URL, headers, body and answer). A server or model that refuses tools
(an HTTP error that names tools, or a wire without tools) records the suite "unsupported": not a
failure, and not a score.

Each request is bounded as a sweep's is: at most the workload's max_response_bytes of response
(more ends the item as `response_too_large`) and a hard wall-clock deadline of the quality
section's request_timeout_s (`timeout`), however fast or slowly bytes arrive.

Raw results: <target dir>/quality.jsonl (one line per item and run: prompt, raw output, pass,
reason) and quality.json (per suite: status, score, n, passed).

Modules: the suites (suites), their grading (grading), the runner (runner).
"""

from __future__ import annotations

from llmbench.quality.grading import (
    DOMAIN,
    GRADERS,
    Answer,
    Grade,
    check_schema,
    contains_answer,
    extract_number,
    grade,
    grade_exact,
    grade_tool_call,
    normalise,
    parse_filter,
    split_thinking,
)
from llmbench.quality.runner import (
    ask,
    parse_answer,
    post_bounded,
    request_for,
    run_quality,
)
from llmbench.quality.suites import (
    EXACT_ITEMS,
    OPENAI_TOOLS,
    SUITES,
    TOOL_DESCRIPTION,
    TOOL_ITEMS,
    TOOL_NAME,
    TOOL_PARAMETERS,
    ExactItem,
    ToolItem,
    arithmetic_items,
    build_suite,
    jsonl_items,
    tool_call_items,
    units_items,
)

__all__ = [
    "Answer",
    "DOMAIN",
    "EXACT_ITEMS",
    "ExactItem",
    "GRADERS",
    "Grade",
    "OPENAI_TOOLS",
    "SUITES",
    "TOOL_DESCRIPTION",
    "TOOL_ITEMS",
    "TOOL_NAME",
    "TOOL_PARAMETERS",
    "ToolItem",
    "ask",
    "arithmetic_items",
    "build_suite",
    "check_schema",
    "contains_answer",
    "extract_number",
    "grade",
    "grade_exact",
    "grade_tool_call",
    "jsonl_items",
    "normalise",
    "parse_answer",
    "parse_filter",
    "post_bounded",
    "request_for",
    "run_quality",
    "split_thinking",
    "tool_call_items",
    "units_items",
]
