"""The suites: seed 001's count_ids tool-call items and short exact-answer items, shipped here;
generated suites of any size (arithmetic, unit conversion, count_ids over random ids and
conditions), the same items for the same seed and size; and a user's JSONL file
(llmbench.quality describes how each is graded)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmbench.errors import InputError
from llmbench.schemas.targets import SuiteSpec

# ---- the suites ------------------------------------------------------------------------------

TOOL_NAME = "count_ids"
TOOL_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ids": {"type": "array", "items": {"type": "integer"}, "description": "the ids to filter"},
        "filter": {"type": "string", "description": 'a condition on id, such as "id == 3"'},
    },
    "required": ["ids", "filter"],
    "additionalProperties": False,
}
TOOL_DESCRIPTION = "Count how many of the given ids satisfy a filter condition on id."
OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "parameters": TOOL_PARAMETERS},
    }
]


@dataclass(frozen=True)
class ToolItem:
    id: str
    condition: str  # as the question words it
    ids: tuple[int, ...]
    expected: str  # the right filter, in the grader's grammar
    question: str | None = None  # a user suite's own wording (default: the sentence below)

    @property
    def prompt(self) -> str:
        if self.question is not None:
            return self.question
        return f"Use the {TOOL_NAME} tool to count how many of these ids are {self.condition}: {list(self.ids)}."


@dataclass(frozen=True)
class ExactItem:
    id: str
    prompt: str
    answer: str
    case_sensitive: bool = False  # a fixed-format task where case is the format


TOOL_ITEMS = (
    ToolItem("at-least-10", "at least 10", (3, 10, 12, 7, 15), "id >= 10"),
    # `id > 10` gives the right count (3) here: only the filter tells right from wrong.
    ToolItem("ge-10-no-10", "greater than or equal to 10", (4, 11, 15, 8, 20), "id >= 10"),
    ToolItem("less-than-5", "less than 5", (1, 5, 9, 2, 4), "id < 5"),
    ToolItem("at-most-7", "at most 7", (7, 8, 3, 12), "id <= 7"),
    ToolItem("greater-than-20", "greater than 20", (20, 21, 35, 5), "id > 20"),
)

_NUM = " Answer with the number only."
_WORD = " Answer with the word only."
EXACT_ITEMS = (
    # arithmetic
    ExactItem("add-7-5", "What is 7 + 5?" + _NUM, "12"),
    ExactItem("mul-12-3", "What is 12 times 3?" + _NUM, "36"),
    ExactItem("sub-100-37", "What is 100 minus 37?" + _NUM, "63"),
    ExactItem("div-81-9", "What is 81 divided by 9?" + _NUM, "9"),
    ExactItem("add-15-27", "What is 15 + 27?" + _NUM, "42"),
    ExactItem("mul-9-8", "What is 9 times 8?" + _NUM, "72"),
    ExactItem("pow-2-5", "What is 2 to the power of 5?" + _NUM, "32"),
    ExactItem("sub-1000-1", "What is 1000 - 1?" + _NUM, "999"),
    ExactItem("half-50", "What is half of 50?" + _NUM, "25"),
    ExactItem("add-6-7-8", "What is 6 + 7 + 8?" + _NUM, "21"),
    ExactItem("mul-11-11", "What is 11 times 11?" + _NUM, "121"),
    ExactItem("div-45-5", "What is 45 divided by 5?" + _NUM, "9"),
    # extraction
    ExactItem(
        "year",
        "Extract the year from this sentence: 'The bridge opened in 1932 after four years of work.'"
        " Answer with the year only.",
        "1932",
    ),
    ExactItem(
        "email",
        "What is the email address in this text: 'Write to ana.lima@example.org for details.'"
        " Answer with the address only.",
        "ana.lima@example.org",
    ),
    ExactItem(
        "city-to",
        "'Maria flew from Lisbon to Oslo on Monday.' Which city did Maria fly to? Answer with the city only.",
        "Oslo",
    ),
    ExactItem("colour", "'The red car stopped next to the blue door.' What colour is the car?" + _WORD, "red"),
    ExactItem(
        "order-number",
        "'Order #48213 ships on Friday.' What is the order number? Answer with the digits only.",
        "48213",
    ),
    ExactItem("first-word", "What is the first word of this sentence: 'Bright stars fill the sky.'" + _WORD, "Bright"),
    ExactItem("apples", "'Tom has 4 apples and 3 pears.' How many apples does Tom have?" + _NUM, "4"),
    ExactItem(
        "day", "'The meeting moved to Thursday.' Which day is the meeting? Answer with the day only.", "Thursday"
    ),
    ExactItem("last-word", "What is the last word of 'one two three four'?" + _WORD, "four"),
    ExactItem("capital", "What is the capital of France?" + _WORD, "Paris"),
    # a fixed format
    ExactItem("upper-cat", "Write the word cat in uppercase letters." + _WORD, "CAT", case_sensitive=True),
    ExactItem("lower-yes", "Reply with exactly the word yes, in lowercase letters.", "yes", case_sensitive=True),
    ExactItem("list-1-5", "Write the numbers 1 to 5 separated by commas, with no spaces.", "1,2,3,4,5"),
    ExactItem("reverse-dog", "Spell the word dog backwards." + _WORD, "god"),
    ExactItem("iso-date", "Write 5 March 2024 as an ISO date (YYYY-MM-DD). Answer with the date only.", "2024-03-05"),
    ExactItem("prime-17", "Is 17 a prime number? Answer with yes or no only.", "yes"),
    ExactItem("twelve-digits", "Write the number twelve in digits." + _NUM, "12"),
    ExactItem("sort-letters", "Sort the letters c, a, b alphabetically and answer with them joined, no spaces.", "abc"),
)

SUITES: dict[str, tuple[Any, ...]] = {"tool_call": TOOL_ITEMS, "exact": EXACT_ITEMS}


# ---- generated suites ------------------------------------------------------------------------
# Each draws from its own random.Random seeded by (kind, seed): item i of a suite is the same
# whatever the size, so a larger suite extends a smaller one.


def arithmetic_items(size: int, seed: int = 0, max_operand: int = 9) -> tuple[ExactItem, ...]:
    """a + b, a - b (never negative) and a x b with operands in 0..max_operand."""
    rng = random.Random(f"arithmetic:{seed}:{max_operand}")
    items = []
    for i in range(size):
        a, b = rng.randint(0, max_operand), rng.randint(0, max_operand)
        op = rng.choice("+-*")
        if op == "-" and b > a:
            a, b = b, a
        value = a + b if op == "+" else a - b if op == "-" else a * b
        word = {"+": "+", "-": "-", "*": "times"}[op]
        items.append(ExactItem(f"arith-{seed}-{i}", f"What is {a} {word} {b}?{_NUM}", str(value)))
    return tuple(items)


# (from, to, factor): integer factors only, so every answer is an exact integer.
_UNITS = (
    ("kilometres", "metres", 1000),
    ("metres", "centimetres", 100),
    ("kilograms", "grams", 1000),
    ("hours", "minutes", 60),
    ("minutes", "seconds", 60),
    ("days", "hours", 24),
    ("feet", "inches", 12),
    ("weeks", "days", 7),
    ("litres", "millilitres", 1000),
)


def units_items(size: int, seed: int = 0) -> tuple[ExactItem, ...]:
    """How many <small units> are in v <large units>, v in 1..20."""
    rng = random.Random(f"units:{seed}")
    items = []
    for i in range(size):
        big, small, factor = rng.choice(_UNITS)
        v = rng.randint(1, 20)
        items.append(ExactItem(f"units-{seed}-{i}", f"How many {small} are in {v} {big}?{_NUM}", str(v * factor)))
    return tuple(items)


# (how the question words it, the filter's operator)
_CONDITIONS = (
    ("at least {n}", ">="),
    ("greater than or equal to {n}", ">="),
    ("at most {n}", "<="),
    ("less than or equal to {n}", "<="),
    ("greater than {n}", ">"),
    ("less than {n}", "<"),
    ("equal to {n}", "=="),
)


def tool_call_items(size: int, seed: int = 0) -> tuple[ToolItem, ...]:
    """Seed 001's count_ids over 4-8 random ids in 1..50 and a random condition; the threshold is
    one of the ids half the time, so `>` and `>=` differ on the question's own ids."""
    rng = random.Random(f"tool_call:{seed}")
    items = []
    for i in range(size):
        ids = tuple(rng.sample(range(1, 51), rng.randint(4, 8)))
        words, op = rng.choice(_CONDITIONS)
        n = rng.choice(ids) if rng.random() < 0.5 or op == "==" else rng.randint(1, 50)
        items.append(ToolItem(f"tool-{seed}-{i}", words.format(n=n), ids, f"id {op} {n}"))
    return tuple(items)


def jsonl_items(path: Path, name: str) -> tuple[ExactItem | ToolItem, ...]:
    """A user's suite: one JSON object a line, `prompt` with `answer` (graded as exact items
    are) or with `tool_call: {ids: [...], filter: "id >= 10"}` (graded as count_ids calls are);
    an optional `id` (default: the line number) and `case_sensitive`."""
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise InputError(f"quality suite {name!r}: cannot read {path}: {e.strerror}") from None
    items: list[ExactItem | ToolItem] = []
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{no}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"quality suite {name!r}: {where} is not JSON ({e.msg})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("prompt"), str):
            raise InputError(f"quality suite {name!r}: {where} needs a string `prompt`")
        item_id = str(obj.get("id", no))
        if "answer" in obj:
            items.append(ExactItem(item_id, obj["prompt"], str(obj["answer"]), bool(obj.get("case_sensitive"))))
        elif isinstance(call := obj.get("tool_call"), dict) and isinstance(call.get("filter"), str):
            ids = call.get("ids")
            if not isinstance(ids, list) or not all(isinstance(x, int) for x in ids):
                raise InputError(f"quality suite {name!r}: {where}: tool_call.ids must be a list of integers")
            from llmbench.quality.grading import parse_filter  # grading imports this module

            try:
                parse_filter(call["filter"])
            except ValueError as e:
                raise InputError(f"quality suite {name!r}: {where}: tool_call.filter: {e}") from None
            items.append(ToolItem(item_id, call["filter"], tuple(ids), call["filter"], question=obj["prompt"]))
        else:
            raise InputError(f"quality suite {name!r}: {where} needs `answer` or `tool_call: {{ids, filter}}`")
    if not items:
        raise InputError(f"quality suite {name!r}: {path} holds no items")
    ids_seen = [i.id for i in items]
    if len(set(ids_seen)) != len(ids_seen):
        raise InputError(f"quality suite {name!r}: {path} repeats item ids")
    return tuple(items)


def build_suite(spec: SuiteSpec) -> tuple[ExactItem | ToolItem, ...]:
    """The items of one suite of a quality section, in order."""
    if spec.kind in SUITES:
        return SUITES[spec.kind]
    if spec.kind == "arithmetic":
        return arithmetic_items(spec.size, spec.seed, spec.max_operand)
    if spec.kind == "units":
        return units_items(spec.size, spec.seed)
    if spec.kind == "tool_call_generated":
        return tool_call_items(spec.size, spec.seed)
    assert spec.path is not None  # SuiteSpec requires it for jsonl
    return jsonl_items(Path(spec.path), spec.name)
