"""The runner: each suite sent through the target's own wire, bounded in bytes and wall-clock time
(backends.deadline), graded, and written to <target dir>/quality.jsonl and quality.json."""

from __future__ import annotations

import http.client
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llmbench.analysis import metrics
from llmbench.backends.base import Endpoint
from llmbench.backends.deadline import Bounded as _Bounded
from llmbench.backends.deadline import request_bounded
from llmbench.quality.grading import GRADERS, Answer
from llmbench.quality.suites import OPENAI_TOOLS, SUITES
from llmbench.schemas import registry
from llmbench.schemas.workload import DEFAULT_BYTES_PER_REQUEST


def request_for(
    endpoint: Endpoint, suite: str, prompt: str, max_tokens: int
) -> tuple[str, dict[str, Any], dict[str, str]]:
    """(url, body, headers) of one non-streaming request on the endpoint's wire."""
    fmt = registry.wire(endpoint.wire)
    tools = OPENAI_TOOLS if suite == "tool_call" else None
    if fmt.answer_body is not None:
        body = fmt.answer_body(prompt, max_tokens, tools)
    else:
        body = {
            "model": endpoint.model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": max_tokens,
            "temperature": 0.0,
            "stream": False,
        }
        if tools:
            body["tools"] = tools
    url = fmt.answer_url(endpoint.url) if fmt.answer_url else endpoint.url
    headers = {**endpoint.headers, "Content-Type": "application/json", "Accept": "application/json"}
    return url, body, {**headers, **fmt.answer_headers}


def parse_answer(wire: str, payload: Any) -> Answer:
    """A response body (JSON) as an Answer: an OpenAI chat completion, or the wire's own answer."""
    fmt = registry.wire(wire)
    if fmt.answer_parse is not None:
        text, calls = fmt.answer_parse(payload)
        return Answer(text=text, tool_calls=calls, raw=payload)
    message = ((payload.get("choices") or [{}])[0] or {}).get("message") or {}
    calls = [
        ((c.get("function") or {}).get("name", ""), (c.get("function") or {}).get("arguments", ""))
        for c in message.get("tool_calls") or []
    ]
    return Answer(text=message.get("content") or "", tool_calls=calls, raw=payload)


_TOOLS_REFUSED = re.compile(r"tool|jinja|function", re.I)
# 424: a managed runtime's model error (ModelError, ModelErrorException) carries the model server's refusal
_REFUSING_STATUSES = (400, 404, 422, 424, 500, 501)


def post_bounded(url: str, data: bytes, headers: dict[str, str], timeout_s: float, max_bytes: int) -> tuple[int, bytes]:
    """POST and read the response as the sweep bounds one: (status, body) with at most max_bytes
    of body, or _Bounded; the deadline, timeout_s from now, is a wall clock over the whole request
    (llmbench.backends.deadline.request_bounded)."""
    return request_bounded("POST", url, data, headers, timeout_s, max_bytes)


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
    if endpoint.wire not in registry.wires():
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
