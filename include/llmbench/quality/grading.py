"""Grading without an LLM judge: a tool call's name, arguments, schema and the meaning of its
filter over a range of integers; an exact answer twice, strict (the normalised answer is the
expected one: the format asked for) and flexible (lm-evaluation-harness's flexible-extract: the
last number, `$`, `,` and a trailing `.` stripped; a text answer by normalised whole-word
containment) (llmbench.quality)."""

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

    text: str = ""  # the answer, reasoning taken out (split_thinking)
    tool_calls: list[tuple[str, str]] = field(default_factory=list)
    raw: Any = None  # the response body as received (JSON, or text when it is not JSON)
    error: str | None = None  # the request failed (HTTP status, timeout, undecodable body)
    unsupported: str | None = None  # the target refused tools: why
    reasoning: str = ""  # <think>...</think> or the OpenAI `reasoning_content` field
    truncated: bool = False  # cut off by the token limit (finish_reason "length" / stopReason "max_tokens")
    completion_tokens: int | None = None  # as the server counted them (usage), reasoning included
    reasoning_tokens: int | None = None  # the server's count, else the reasoning's share of completion_tokens


@dataclass(frozen=True)
class Grade:
    """One answer's verdicts: strict (the format asked for) and flexible (the answer extracted);
    a truncated answer fails both and says so."""

    strict: bool
    flexible: bool
    reason: str
    truncated: bool = False

    def passed(self, grade_on: str = "flexible") -> bool:
        return self.strict if grade_on == "strict" else self.flexible


_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"


def split_thinking(text: str) -> tuple[str, str]:
    """(reasoning, answer) of a reply that may think aloud: what is inside <think>...</think> is
    reasoning; an unclosed <think> (cut off by the limit) is reasoning to the end; a lone
    </think> (the template opened the block in the prompt) closes reasoning from the start."""
    if _THINK_OPEN in text:
        before, _, rest = text.partition(_THINK_OPEN)
        thought, closed, after = rest.partition(_THINK_CLOSE)
        return thought.strip(), (before + after).strip() if closed else before.strip()
    if _THINK_CLOSE in text:
        thought, _, after = text.partition(_THINK_CLOSE)
        return thought.strip(), after.strip()
    return "", text


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


def _fail(reason: str, truncated: bool = False) -> Grade:
    return Grade(False, False, reason, truncated)


def grade_tool_call(item: ToolItem, answer: Answer) -> Grade:
    """Right: one call of count_ids, JSON arguments that fit its schema, the question's ids, and
    a filter that accepts exactly the ids the question asks for. The call's format is the task,
    so strict and flexible agree."""
    if answer.error:
        return _fail(f"request failed: {answer.error}")
    if answer.truncated and not answer.tool_calls:
        return _fail(f"truncated: cut off at the token limit before a tool call ({answer.text[-60:]!r})", True)
    if not answer.tool_calls:
        return _fail(f"no tool call; answered in text: {answer.text[:80]!r}")
    name, arguments = answer.tool_calls[0]
    if name != TOOL_NAME:
        return _fail(f"called {name!r}, not {TOOL_NAME!r}")
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
    except json.JSONDecodeError as e:
        return _fail(f"arguments are not JSON ({e.msg}): {str(arguments)[:80]!r}")
    if why := check_schema(TOOL_PARAMETERS, args):
        return _fail(f"arguments do not fit the schema: {why}")
    if sorted(args["ids"]) != sorted(item.ids):
        return _fail(f"ids {args['ids']} are not the question's {list(item.ids)}")
    try:
        given = parse_filter(args["filter"])
    except ValueError as e:
        return _fail(f"filter {args['filter']!r} unreadable: {e}")
    want = parse_filter(item.expected)
    wrong = [i for i in DOMAIN if given(i) != want(i)]
    if wrong:
        same_count = sum(map(given, item.ids)) == sum(map(want, item.ids))
        note = " (the same count on these ids, but a different condition)" if same_count else ""
        return _fail(f"filter {args['filter']!r} is not {item.expected!r}: differs at id={wrong[0]}{note}")
    return Grade(True, True, f"count_ids({list(args['ids'])}, {args['filter']!r})")


_WRAP = "\"'`*_ "


def normalise(text: str, case_sensitive: bool = False) -> str:
    """Unicode NFKC, outer whitespace, quotes, backticks and emphasis stripped, one trailing full
    stop or exclamation mark dropped, inner whitespace collapsed; lower case unless the case is the
    task."""
    s = unicodedata.normalize("NFKC", text).strip().strip(_WRAP)
    s = re.sub(r"[.!]$", "", s).strip(_WRAP)
    s = re.sub(r"\s+", " ", s)
    return s if case_sensitive else s.lower()


# lm-evaluation-harness's GSM8K flexible-extract: the last match of this, then `$`, `,` and a
# trailing `.` stripped ("$1,234." -> "1234").
_FLEXIBLE_NUMBER = re.compile(r"(-?[$0-9.,]{2,})|(-?[0-9]+)")
_NUMERIC = re.compile(r"-?\d+(?:\.\d+)?")


def extract_number(text: str) -> str | None:
    """The last number in text, lm-eval's flexible-extract way, or None without one."""
    matches = [m.group(0) for m in _FLEXIBLE_NUMBER.finditer(text)]
    if not matches:
        return None
    return matches[-1].replace("$", "").replace(",", "").rstrip(".") or None


def _same_number(got: str | None, want: str) -> bool:
    try:
        return got is not None and float(got) == float(want)
    except ValueError:  # "1.2.3": what the regex matched is not a number
        return False


def contains_answer(text: str, answer: str, case_sensitive: bool = False) -> bool:
    """The flexible rule for text answers: the normalised expected answer occurs in the
    normalised reply as a whole word or phrase (not inside a longer word): "The capital of
    France is Paris." contains "paris"; "Parisian" does not."""
    got, want = normalise(text, case_sensitive), normalise(answer, case_sensitive)
    return bool(want) and re.search(rf"(?<!\w){re.escape(want)}(?!\w)", got) is not None


def grade_exact(item: ExactItem, answer: Answer) -> Grade:
    """Strict: the normalised reply is the answer (the format the prompt asked for). Flexible:
    a numeric answer is the reply's last number (extract_number); a text answer is contained in
    the reply (contains_answer)."""
    if answer.error:
        return _fail(f"request failed: {answer.error}")
    if answer.truncated:
        return _fail(f"truncated: cut off at the token limit ({answer.text[-60:]!r})", True)
    got = normalise(answer.text, item.case_sensitive)
    want = normalise(item.answer, item.case_sensitive)
    strict = got == want
    if _NUMERIC.fullmatch(want):
        extracted = extract_number(answer.text)
        flexible = _same_number(extracted, want)
        detail = f"last number {extracted!r}"
    else:
        flexible = contains_answer(answer.text, item.answer, item.case_sensitive)
        detail = "contains it" if flexible else "does not contain it"
    if strict:
        return Grade(True, True, f"{got!r}")
    return Grade(False, flexible, f"{got[:80]!r} is not {want!r}; flexible: {detail}")


def grade(item: ExactItem | ToolItem, answer: Answer) -> Grade:
    """An item graded by its kind: a count_ids call or an exact answer."""
    return grade_tool_call(item, answer) if isinstance(item, ToolItem) else grade_exact(item, answer)


GRADERS: dict[str, Callable[[Any, Answer], Grade]] = {"tool_call": grade_tool_call, "exact": grade_exact}
