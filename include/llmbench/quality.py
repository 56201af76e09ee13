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
             by normalised exact match (`normalise`).

Wires: "sse" (OpenAI chat completions with `tools`), "sagemaker" (InvokeEndpoint with the same
OpenAI body), "bedrock" (Converse with `toolConfig`). A server or model that refuses tools
(an HTTP error that names tools, or a wire without tools) records the suite "unsupported": not a
failure, and not a score.

Each request is bounded as a sweep's is: at most the workload's max_response_bytes of response
(more ends the item as `response_too_large`) and a hard wall-clock deadline of the quality
section's request_timeout_s (`timeout`), however fast or slowly bytes arrive.

Raw results: <target dir>/quality.jsonl (one line per item and run: prompt, raw output, pass,
reason) and quality.json (per suite: status, score, n, passed).
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import threading
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from llmbench import metrics
from llmbench.backends.base import Endpoint
from llmbench.workload import DEFAULT_BYTES_PER_REQUEST

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
CONVERSE_TOOL_CONFIG = {
    "tools": [
        {"toolSpec": {"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "inputSchema": {"json": TOOL_PARAMETERS}}}
    ]
}


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


def request_for(
    endpoint: Endpoint, suite: str, prompt: str, max_tokens: int
) -> tuple[str, dict[str, Any], dict[str, str]]:
    """(url, body, headers) of one non-streaming request on the endpoint's wire."""
    tools = suite == "tool_call"
    if endpoint.wire == "bedrock":
        body: dict[str, Any] = {
            "messages": [{"role": "user", "content": [{"text": prompt}]}],
            "inferenceConfig": {"maxTokens": max_tokens, "temperature": 0.0},
        }
        if tools:
            body["toolConfig"] = CONVERSE_TOOL_CONFIG
        url = re.sub(r"/converse-stream$", "/converse", endpoint.url)
    else:
        body = {
            "model": endpoint.model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": max_tokens,
            "temperature": 0.0,
            "stream": False,
        }
        if tools:
            body["tools"] = OPENAI_TOOLS
        url = re.sub(r"/invocations-response-stream$", "/invocations", endpoint.url)
    headers = {**endpoint.headers, "Content-Type": "application/json", "Accept": "application/json"}
    if endpoint.wire == "sagemaker":
        headers["X-Amzn-SageMaker-Accept"] = "application/json"
    return url, body, headers


def parse_answer(wire: str, payload: Any) -> Answer:
    """A response body (JSON) as an Answer: OpenAI chat completion (sse, sagemaker) or Converse."""
    if wire == "bedrock":
        blocks = ((payload.get("output") or {}).get("message") or {}).get("content") or []
        text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict))
        calls = [
            (b["toolUse"].get("name", ""), json.dumps(b["toolUse"].get("input")))
            for b in blocks
            if isinstance(b, dict) and "toolUse" in b
        ]
        return Answer(text=text, tool_calls=calls, raw=payload)
    message = ((payload.get("choices") or [{}])[0] or {}).get("message") or {}
    calls = [
        ((c.get("function") or {}).get("name", ""), (c.get("function") or {}).get("arguments", ""))
        for c in message.get("tool_calls") or []
    ]
    return Answer(text=message.get("content") or "", tool_calls=calls, raw=payload)


_TOOLS_REFUSED = re.compile(r"tool|jinja|function", re.I)
# 424: SageMaker's ModelError and Bedrock's ModelErrorException carry the model server's refusal
_REFUSING_STATUSES = (400, 404, 422, 424, 500, 501)


class _Bounded(Exception):
    """A response the request's bounds ended: `kind` is response_too_large or timeout."""

    def __init__(self, kind: str, detail: str, kept: bytes = b""):
        super().__init__(f"{kind}: {detail}")
        self.kind, self.kept = kind, kept


def post_bounded(url: str, data: bytes, headers: dict[str, str], timeout_s: float, max_bytes: int) -> tuple[int, bytes]:
    """POST and read the response as the sweep bounds one: (status, body) with at most max_bytes
    of body, or _Bounded. The deadline, timeout_s from now, is a wall clock over the whole request
    (connect, head, body), held however fast or slowly bytes arrive: each socket wait is given only
    what is left of it, and a timer shuts the socket down when it passes. Past max_bytes the read
    stops (max_bytes + 1 read at most) and the connection is dropped."""
    u = urlsplit(url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise _Bounded("error", f"not an http(s) URL: {url!r}")
    deadline = time.monotonic() + timeout_s
    conn_cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
    conn = conn_cls(u.hostname, u.port, timeout=timeout_s)
    expired = threading.Event()
    # The socket itself, kept apart: http.client drops conn.sock once a response says it closes the
    # connection (the response still reads from it), and the deadline must reach it all the same.
    held: list[socket.socket] = []

    def expire() -> None:
        expired.set()
        for sock in held:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes a read blocked in another thread
            except OSError:
                pass

    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or expired.is_set():
            raise _Bounded("timeout", f"no complete response within {timeout_s:g} s")
        return remaining

    timer = threading.Timer(timeout_s, expire)
    timer.daemon = True
    timer.start()
    body = bytearray()
    try:
        try:
            conn.connect()
            held.append(conn.sock)
            if expired.is_set():  # the timer fired during connect, before the socket was held
                left()
            path = (u.path or "/") + (f"?{u.query}" if u.query else "")
            held[0].settimeout(left())
            conn.request("POST", path, body=data, headers=headers)
            resp = conn.getresponse()
            while len(body) <= max_bytes:
                held[0].settimeout(left())
                chunk = resp.read1(min(1 << 16, max_bytes + 1 - len(body)))
                if not chunk:
                    break
                body += chunk
            if expired.is_set():  # a read the timer ended looks like the end of the body: it is not
                raise _Bounded("timeout", f"no complete response within {timeout_s:g} s", bytes(body[:2000]))
        except (OSError, http.client.HTTPException):
            if expired.is_set() or time.monotonic() >= deadline:
                raise _Bounded("timeout", f"no complete response within {timeout_s:g} s", bytes(body[:2000])) from None
            raise
        if len(body) > max_bytes:
            raise _Bounded("response_too_large", f"more than {max_bytes} bytes", bytes(body[:2000]))
        return resp.status, bytes(body)
    finally:
        timer.cancel()
        conn.close()


def ask(
    endpoint: Endpoint,
    suite: str,
    prompt: str,
    max_tokens: int,
    timeout_s: float,
    max_response_bytes: int = DEFAULT_BYTES_PER_REQUEST,
) -> Answer:
    """One request, non-streaming, signed when the endpoint signs, bounded as a sweep's request is
    (post_bounded: at most max_response_bytes of response, a hard deadline of timeout_s). Never
    raises for what the target does: a failed request is an Answer with `error` (its kind first:
    `response_too_large: ...`, `timeout: ...`, `HTTP 500: ...`), a refusal of tools one with
    `unsupported`."""
    if endpoint.wire not in ("sse", "sagemaker", "bedrock"):
        return Answer(unsupported=f"wire {endpoint.wire!r} has no non-streaming request")
    url, body, headers = request_for(endpoint, suite, prompt, max_tokens)
    data = json.dumps(body).encode()
    if endpoint.signer is not None:
        headers = endpoint.signer.sign(url, data, headers)
    try:
        status, raw = post_bounded(url, data, headers, timeout_s, max_response_bytes)
    except _Bounded as e:
        return Answer(raw=e.kept.decode("utf-8", "replace") or None, error=str(e)[:300])
    except (OSError, http.client.HTTPException) as e:
        return Answer(error=f"{type(e).__name__}: {e}"[:300])
    text = raw.decode("utf-8", "replace")
    if not 200 <= status < 300:
        detail = text[:500]
        if suite == "tool_call" and status in _REFUSING_STATUSES and _TOOLS_REFUSED.search(detail):
            return Answer(raw=detail, unsupported=f"HTTP {status}: {detail[:200]}")
        return Answer(raw=detail, error=f"HTTP {status}: {detail[:200]}")
    try:
        payload = json.loads(text)
    except json.JSONDecodeError:
        return Answer(raw=text[:2000], error="response is not JSON")
    if not isinstance(payload, dict):
        return Answer(raw=payload, error="response is not a JSON object")
    return parse_answer(endpoint.wire, payload)


# ---- the stage -------------------------------------------------------------------------------


def run_quality(
    endpoint: Endpoint,
    suites: list[str],
    runs: int,
    out_dir: Path,
    max_tokens: int = 96,
    timeout_s: float = 120.0,
    progress: Callable[[str], None] | None = None,
    max_response_bytes: int = DEFAULT_BYTES_PER_REQUEST,
) -> dict[str, Any]:
    """Send every item of each suite `runs` times, one at a time, each bounded by timeout_s and
    max_response_bytes (ask); grade each answer. Writes
    quality.jsonl and quality.json under out_dir; returns the summary (quality.json's content):
    per suite {status: "scored" | "unsupported", score, n, passed, reason}."""
    out_dir.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {"suites": {}, "runs": runs}
    with (out_dir / "quality.jsonl").open("w", buffering=1) as log:  # line by line: readable while it runs
        for suite in suites:
            grader, n, passed, unsupported = GRADERS[suite], 0, 0, None
            for run in range(runs):
                for item in SUITES[suite]:
                    t0 = time.perf_counter()
                    answer = ask(endpoint, suite, item.prompt, max_tokens, timeout_s, max_response_bytes)
                    if answer.unsupported:
                        unsupported = answer.unsupported
                        break
                    grade = grader(item, answer)
                    n, passed = n + 1, passed + grade.passed
                    line = {
                        "suite": suite,
                        "item": item.id,
                        "run": run,
                        "prompt": item.prompt,
                        "passed": grade.passed,
                        "reason": grade.reason,
                        "text": answer.text,
                        "tool_calls": [{"name": nm, "arguments": a} for nm, a in answer.tool_calls],
                        "error": answer.error,
                        "seconds": round(time.perf_counter() - t0, 3),
                        "raw": answer.raw,
                    }
                    log.write(json.dumps(line, default=str) + "\n")
                if unsupported:
                    break
            if unsupported:
                log.write(json.dumps({"suite": suite, "unsupported": unsupported}) + "\n")
                summary["suites"][suite] = {
                    "status": "unsupported",
                    "score": None,
                    "n": 0,
                    "passed": 0,
                    "reason": unsupported,
                }
            else:
                summary["suites"][suite] = {
                    "status": "scored",
                    "score": metrics.suite_score(passed, n),
                    "n": n,
                    "passed": passed,
                    "reason": None,
                }
            if progress:
                s = summary["suites"][suite]
                progress(f"quality {suite}: {s['status']} {s['passed']}/{s['n']}")
    (out_dir / "quality.json").write_text(json.dumps(summary, indent=2))
    return summary
