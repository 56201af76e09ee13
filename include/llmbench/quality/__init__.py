"""Correctness beside price-performance: the suites (suites), their grading without an LLM judge
(grading), and the runner that sends them through a target's own wire (runner)."""

from __future__ import annotations

from llmbench.quality.grading import (
    DOMAIN,
    GRADERS,
    Answer,
    Grade,
    check_schema,
    grade_exact,
    grade_tool_call,
    normalise,
    parse_filter,
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
    "check_schema",
    "grade_exact",
    "grade_tool_call",
    "normalise",
    "parse_answer",
    "parse_filter",
    "post_bounded",
    "request_for",
    "run_quality",
]
