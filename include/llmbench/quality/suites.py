"""The suites: seed 001's count_ids tool-call items and short exact-answer items, deterministic
and shipped here (llmbench.quality describes how each is graded)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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

    @property
    def prompt(self) -> str:
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


# ---- answers and grading ---------------------------------------------------------------------
