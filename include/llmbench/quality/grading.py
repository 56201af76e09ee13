"""Grading without an LLM judge: a tool call's name, arguments, schema and the meaning of its
filter over a range of integers; an exact answer by normalised match (llmbench.quality)."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from llmbench.quality.suites import TOOL_NAME, TOOL_PARAMETERS, ExactItem, ToolItem


@dataclass
class Answer:
    """What a target answered, whatever its wire: text and tool calls (name, arguments as sent)."""

    text: str = ""
    tool_calls: list[tuple[str, str]] = field(default_factory=list)
    raw: Any = None  # the response body as received (JSON, or text when it is not JSON)
    error: str | None = None  # the request failed (HTTP status, timeout, undecodable body)
    unsupported: str | None = None  # the target refused tools: why


@dataclass(frozen=True)
class Grade:
    passed: bool
    reason: str


_OPS: dict[str, Callable[[int, int], bool]] = {
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
}
_COMPARISON = re.compile(r"^\s*(?:[A-Za-z_][A-Za-z_0-9.\[\]'\"]*\s*)?(>=|<=|==|!=|=>|=<|=|>|<)\s*(-?\d+)\s*$")
# The integers a filter is judged on: its meaning, not only its count on the question's ids.
DOMAIN = range(-1000, 1001)


def parse_filter(text: str) -> Callable[[int], bool]:
    """A filter as a predicate on id: comparisons of id with an integer (`id >= 10`, `x<5`, `>= 10`),
    joined by `and` / `&&`. Raises ValueError for anything else."""
    parts = re.split(r"\s+and\s+|\s*&&\s*", text.strip(), flags=re.I)
    tests = []
    for part in parts:
        m = _COMPARISON.match(part)
        if not m:
            raise ValueError(f"not a comparison of id with an integer: {part!r}")
        op = {"=": "==", "=>": ">=", "=<": "<="}.get(m.group(1), m.group(1))
        tests.append((_OPS[op], int(m.group(2))))
    return lambda i: all(f(i, v) for f, v in tests)


def check_schema(schema: dict[str, Any], value: Any, where: str = "arguments") -> str | None:
    """Why `value` does not fit a JSON schema (the subset tool schemas here use), or None."""
    kind = schema.get("type")
    if kind == "object":
        if not isinstance(value, dict):
            return f"{where}: not an object"
        missing = [k for k in schema.get("required", []) if k not in value]
        if missing:
            return f"{where}: missing {missing}"
        props = schema.get("properties", {})
        if schema.get("additionalProperties") is False and set(value) - set(props):
            return f"{where}: unexpected {sorted(set(value) - set(props))}"
        for k, sub in props.items():
            if k in value and (why := check_schema(sub, value[k], f"{where}.{k}")):
                return why
    elif kind == "array":
        if not isinstance(value, list):
            return f"{where}: not an array"
        for i, v in enumerate(value):
            if why := check_schema(schema.get("items", {}), v, f"{where}[{i}]"):
                return why
    elif kind == "integer" and (not isinstance(value, int) or isinstance(value, bool)):
        return f"{where}: not an integer"
    elif kind == "string" and not isinstance(value, str):
        return f"{where}: not a string"
    return None


def grade_tool_call(item: ToolItem, answer: Answer) -> Grade:
    """Right: one call of count_ids, JSON arguments that fit its schema, the question's ids, and
    a filter that accepts exactly the ids the question asks for."""
    if answer.error:
        return Grade(False, f"request failed: {answer.error}")
    if not answer.tool_calls:
        return Grade(False, f"no tool call; answered in text: {answer.text[:80]!r}")
    name, arguments = answer.tool_calls[0]
    if name != TOOL_NAME:
        return Grade(False, f"called {name!r}, not {TOOL_NAME!r}")
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
    except json.JSONDecodeError as e:
        return Grade(False, f"arguments are not JSON ({e.msg}): {str(arguments)[:80]!r}")
    if why := check_schema(TOOL_PARAMETERS, args):
        return Grade(False, f"arguments do not fit the schema: {why}")
    if sorted(args["ids"]) != sorted(item.ids):
        return Grade(False, f"ids {args['ids']} are not the question's {list(item.ids)}")
    try:
        given = parse_filter(args["filter"])
    except ValueError as e:
        return Grade(False, f"filter {args['filter']!r} unreadable: {e}")
    want = parse_filter(item.expected)
    wrong = [i for i in DOMAIN if given(i) != want(i)]
    if wrong:
        same_count = sum(map(given, item.ids)) == sum(map(want, item.ids))
        note = " (the same count on these ids, but a different condition)" if same_count else ""
        return Grade(False, f"filter {args['filter']!r} is not {item.expected!r}: differs at id={wrong[0]}{note}")
    return Grade(True, f"count_ids({list(args['ids'])}, {args['filter']!r})")


_WRAP = "\"'`*_ "


def normalise(text: str, case_sensitive: bool = False) -> str:
    """Unicode NFKC, outer whitespace, quotes, backticks and emphasis stripped, one trailing full
    stop or exclamation mark dropped, inner whitespace collapsed; lower case unless the case is the
    task."""
    s = unicodedata.normalize("NFKC", text).strip().strip(_WRAP)
    s = re.sub(r"[.!]$", "", s).strip(_WRAP)
    s = re.sub(r"\s+", " ", s)
    return s if case_sensitive else s.lower()


def grade_exact(item: ExactItem, answer: Answer) -> Grade:
    if answer.error:
        return Grade(False, f"request failed: {answer.error}")
    got = normalise(answer.text, item.case_sensitive)
    want = normalise(item.answer, item.case_sensitive)
    if got == want:
        return Grade(True, f"{got!r}")
    return Grade(False, f"{got[:80]!r} is not {want!r}")


GRADERS: dict[str, Callable[[Any, Answer], Grade]] = {"tool_call": grade_tool_call, "exact": grade_exact}


# ---- requests, per wire ----------------------------------------------------------------------
