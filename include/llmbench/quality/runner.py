"""The runner: each suite sent through the target's own wire, bounded in bytes and wall-clock time
(backends.deadline), graded, and written to <target dir>/quality.jsonl and quality.json."""

from __future__ import annotations

import http.client
import itertools
import json
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from llmbench.analysis import metrics
from llmbench.backends import registry
from llmbench.backends.base import Endpoint
from llmbench.backends.deadline import Bounded as _Bounded
from llmbench.backends.deadline import request_bounded
from llmbench.quality.grading import Answer, grade, split_thinking
from llmbench.quality.suites import OPENAI_TOOLS, ToolItem, build_suite
from llmbench.schemas.targets import QualitySettings
from llmbench.schemas.workload import DEFAULT_BYTES_PER_REQUEST


def request_for(
    endpoint: Endpoint,
    suite: str,
    prompt: str,
    max_tokens: int,
    temperature: float = 0.0,
    chat_template_kwargs: dict[str, Any] | None = None,
) -> tuple[str, dict[str, Any], dict[str, str]]:
    """(url, body, headers) of one non-streaming request on the endpoint's wire. `suite` is
    "tool_call" when the request offers the count_ids tool."""
    fmt = registry.wire(endpoint.wire)
    tools = OPENAI_TOOLS if suite == "tool_call" else None
    if fmt.answer_body is not None:
        body = fmt.answer_body(prompt, max_tokens, tools)
    else:
        body = {
            "model": endpoint.model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stream": False,
        }
        if tools:
            body["tools"] = tools
        if chat_template_kwargs:
            body["chat_template_kwargs"] = chat_template_kwargs
    url = fmt.answer_url(endpoint.url) if fmt.answer_url else endpoint.url
    headers = {**endpoint.headers, "Content-Type": "application/json", "Accept": "application/json"}
    return url, body, {**headers, **fmt.answer_headers}


def _usage(payload: dict[str, Any]) -> tuple[int | None, int | None]:
    """(completion tokens, reasoning tokens) as the server counted them, when it says."""
    usage = payload.get("usage") or {}
    done = usage.get("completion_tokens", usage.get("outputTokens"))
    details = usage.get("completion_tokens_details") or {}
    return (done if isinstance(done, int) else None), details.get("reasoning_tokens")


def parse_answer(wire: str, payload: Any) -> Answer:
    """A response body (JSON) as an Answer: an OpenAI chat completion, or the wire's own answer.
    Reasoning (<think>...</think> in the text, or `reasoning_content`) is taken out of the
    answer and its tokens counted: the server's count when it gives one, else the reasoning's
    share of the completion tokens by characters (an estimate, documented as such)."""
    fmt = registry.wire(wire)
    done, reasoning_tokens = _usage(payload) if isinstance(payload, dict) else (None, None)
    if fmt.answer_parse is not None:
        text, calls = fmt.answer_parse(payload)
        truncated = isinstance(payload, dict) and payload.get("stopReason") == "max_tokens"
        extra_reasoning = ""
    else:
        choice = (payload.get("choices") or [{}])[0] or {}
        message = choice.get("message") or {}
        calls = [
            ((c.get("function") or {}).get("name", ""), (c.get("function") or {}).get("arguments", ""))
            for c in message.get("tool_calls") or []
        ]
        text = message.get("content") or ""
        truncated = choice.get("finish_reason") == "length"
        extra_reasoning = message.get("reasoning_content") or ""
    thought, answer = split_thinking(text)
    reasoning = "\n".join(x for x in (extra_reasoning, thought) if x)
    if reasoning_tokens is None and done is not None:
        share = len(reasoning) / max(1, len(reasoning) + len(answer))
        reasoning_tokens = round(done * share)
    return Answer(
        text=answer,
        tool_calls=calls,
        raw=payload,
        reasoning=reasoning,
        truncated=truncated,
        completion_tokens=done,
        reasoning_tokens=reasoning_tokens,
    )


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
    temperature: float = 0.0,
    chat_template_kwargs: dict[str, Any] | None = None,
) -> Answer:
    """One request, non-streaming, signed when the endpoint signs, bounded as a sweep's request is
    (post_bounded: at most max_response_bytes of response, a hard deadline of timeout_s). Never
    raises for what the target does: a failed request is an Answer with `error` (its kind first:
    `response_too_large: ...`, `timeout: ...`, `HTTP 500: ...`), a refusal of tools one with
    `unsupported`."""
    if endpoint.wire not in registry.wires():
        return Answer(unsupported=f"wire {endpoint.wire!r} has no non-streaming request")
    url, body, headers = request_for(endpoint, suite, prompt, max_tokens, temperature, chat_template_kwargs)
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


def _score(passed: int, n: int) -> dict[str, float | None]:
    ci = metrics.wilson_interval(passed, n)
    return {
        "score": metrics.suite_score(passed, n),
        "ci_low": ci[0] if ci else None,
        "ci_high": ci[1] if ci else None,
    }


def run_quality(
    endpoint: Endpoint,
    settings: QualitySettings,
    out_dir: Path,
    progress: Callable[[str], None] | None = None,
    max_response_bytes: int = DEFAULT_BYTES_PER_REQUEST,
) -> dict[str, Any]:
    """Send every item of each suite `runs` times, at most settings.concurrency at a time, each
    bounded by request_timeout_s and max_response_bytes (ask); grade each answer strict and
    flexible. The first item goes alone: a target that refuses the suite's tools costs one
    request, not the suite. Writes quality.jsonl (in item order) and quality.json under out_dir;
    returns the summary (quality.json's content): per suite {status: "scored" | "unsupported",
    score (the grade_on one), strict and flexible scores with Wilson 95 % bounds, n, passed,
    n_truncated, token counts, detectable_drop, reason}."""
    out_dir.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {"suites": {}, "runs": settings.runs, "grade_on": settings.grade_on}
    t_stage = time.perf_counter()
    with (
        (out_dir / "quality.jsonl").open("w", buffering=1) as log,  # line by line: readable while it runs
        ThreadPoolExecutor(settings.concurrency, thread_name_prefix="quality") as pool,
    ):
        for spec in settings.suites:
            items = build_suite(spec)
            jobs = [(run, item) for run in range(settings.runs) for item in items]
            budget = settings.max_tokens_of(spec)

            def one(job: tuple[int, Any], budget: int = budget) -> tuple[int, Any, Answer, float]:
                run, item = job
                t0 = time.perf_counter()
                answer = ask(
                    endpoint,
                    "tool_call" if isinstance(item, ToolItem) else "exact",
                    item.prompt,
                    budget,
                    settings.request_timeout_s,
                    max_response_bytes,
                    settings.temperature,
                    settings.chat_template_kwargs,
                )
                return run, item, answer, time.perf_counter() - t0

            first = one(jobs[0])
            unsupported = first[2].unsupported
            # pool.map yields in item order as answers arrive: quality.jsonl stays readable while it runs
            done = itertools.chain([first], () if unsupported else pool.map(one, jobs[1:]))
            counts = {"n": 0, "strict": 0, "flexible": 0, "truncated": 0, "tokens": 0, "reasoning": 0}
            for run, item, answer, seconds in done:
                if answer.unsupported:
                    unsupported = unsupported or answer.unsupported
                    continue
                g = grade(item, answer)
                counts["n"] += 1
                counts["strict"] += g.strict
                counts["flexible"] += g.flexible
                counts["truncated"] += g.truncated
                counts["tokens"] += answer.completion_tokens or 0
                counts["reasoning"] += answer.reasoning_tokens or 0
                log.write(
                    json.dumps(_answer_line(spec.name, run, item, g, answer, seconds, settings), default=str) + "\n"
                )
            n = counts["n"]
            if unsupported:
                log.write(json.dumps({"suite": spec.name, "unsupported": unsupported}) + "\n")
            s = _suite_summary(spec, len(items), budget, counts, unsupported, settings)
            summary["suites"][spec.name] = s
            if progress:
                ci = f" [{s['flexible_ci_low']:.2f}, {s['flexible_ci_high']:.2f}]" if n and not unsupported else ""
                progress(
                    f"quality {spec.name}: {s['status']} strict {counts['strict']}/{n}, "
                    f"flexible {counts['flexible']}/{n}{ci}, truncated {counts['truncated']}"
                )
    summary["seconds"] = round(time.perf_counter() - t_stage, 3)
    (out_dir / "quality.json").write_text(json.dumps(summary, indent=2))
    return summary


def _answer_line(
    spec_name: str, run: int, item: Any, g: Any, answer: Answer, seconds: float, settings: QualitySettings
) -> dict[str, Any]:
    """One line of quality.jsonl: the item, the answer as it came, and how it was graded."""
    return {
        "suite": spec_name,
        "item": item.id,
        "run": run,
        "prompt": item.prompt,
        "passed": g.passed(settings.grade_on),
        "strict": g.strict,
        "flexible": g.flexible,
        "truncated": g.truncated,
        "reason": g.reason,
        "text": answer.text,
        "reasoning": answer.reasoning,
        "completion_tokens": answer.completion_tokens,
        "reasoning_tokens": answer.reasoning_tokens,
        "tool_calls": [{"name": nm, "arguments": a} for nm, a in answer.tool_calls],
        "error": answer.error,
        "seconds": round(seconds, 3),
        "raw": answer.raw,
    }


def _suite_summary(
    spec: Any, items: int, budget: int, counts: dict[str, int], unsupported: str | None, settings: QualitySettings
) -> dict[str, Any]:
    """A suite's entry of quality.json: unsupported, or its scores (strict and flexible, with
    Wilson 95 % bounds; `score` the grade_on one), and its counts."""
    n = counts["n"]
    if unsupported:
        s: dict[str, Any] = {"status": "unsupported", "score": None, "n": 0, "passed": 0, "reason": unsupported}
    else:
        strict, flexible = _score(counts["strict"], n), _score(counts["flexible"], n)
        chosen = flexible if settings.grade_on == "flexible" else strict
        s = {"status": "scored", "score": chosen["score"], "n": n, "passed": counts[settings.grade_on], "reason": None}
        for grading, figures in (("strict", strict), ("flexible", flexible)):
            s[f"score_{grading}"] = figures["score"]
            s[f"{grading}_ci_low"], s[f"{grading}_ci_high"] = figures["ci_low"], figures["ci_high"]
    s.update(
        kind=spec.kind,
        items=items,
        passed_strict=counts["strict"],
        passed_flexible=counts["flexible"],
        n_truncated=counts["truncated"],
        completion_tokens=counts["tokens"],
        reasoning_tokens=counts["reasoning"],
        max_tokens=budget,
        detectable_drop=metrics.detectable_drop(n),
    )
    return s
