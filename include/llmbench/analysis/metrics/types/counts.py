"""A level's counts: requests attempted, succeeded and failed, the error rate and its kinds, sends
retried, and output and input tokens (total, means, and how far the client's prompt count missed
the server's)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import numpy as np

from llmbench.analysis.metrics.types.base import Level, LevelMetric, register

__all__ = [
    "ErrorRate",
    "ErrorsByKind",
    "InputTokensClientMinusServerMean",
    "InputTokensMean",
    "OutputTokensMean",
    "OutputTokensTotal",
    "RequestsAttempted",
    "RequestsFailed",
    "RequestsOk",
    "SendsRetried",
]


@register
class RequestsAttempted(LevelMetric):
    tag = "requests_attempted"
    header = "Requests attempted"
    unit = "requests"
    kind = "int"
    definition = "requests the level sent (or tried to)"

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> int:
        return len(level.records)


@register
class RequestsOk(LevelMetric):
    tag = "requests_ok"
    header = "Requests OK"
    unit = "requests"
    kind = "int"
    definition = "requests that completed with a finish reason and no error"

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> int:
        return len(level.ok)


@register
class RequestsFailed(LevelMetric):
    tag = "requests_failed"
    header = "Requests failed"
    unit = "requests"
    kind = "int"
    definition = "attempted - ok: each failed request is a record with its error_kind"

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> int:
        return len(level.records) - len(level.ok)


@register
class ErrorRate(LevelMetric):
    tag = "error_rate"
    header = "Error rate"
    unit = "fraction"
    kind = "pct"
    definition = "failed / attempted"
    not_null = True
    min_value = 0.0
    max_setting = "max_error_rate"

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> float | None:
        attempted = len(level.records)
        return (attempted - len(level.ok)) / attempted if attempted else None


@register
class ErrorsByKind(LevelMetric):
    tag = "errors_by_kind"
    header = "Errors by kind"
    kind = "text"
    definition = "the failed requests counted by error_kind, as a JSON object"

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> str:
        return json.dumps(dict(Counter(r.error_kind for r in level.records if not r.ok)))


@register
class OutputTokensTotal(LevelMetric):
    tag = "output_tokens_total"
    header = "Output tokens"
    unit = "tokens"
    kind = "int"
    definition = "the output tokens of the successful requests, summed"

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> int:
        return sum(r.output_tokens for r in level.ok)


@register
class InputTokensMean(LevelMetric):
    tag = "input_tokens_mean"
    header = "Input tokens (mean)"
    unit = "tokens"
    definition = "the server's prompt token count, mean over the successful requests that reported one"

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> float | None:
        counted = [r.input_tokens for r in level.ok if r.input_tokens is not None]
        return float(np.mean(counted)) if counted else None


@register
class OutputTokensMean(LevelMetric):
    tag = "output_tokens_mean"
    header = "Output tokens (mean)"
    unit = "tokens"
    definition = "output tokens per successful request"

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> float | None:
        return row["output_tokens_total"] / len(level.ok) if level.ok else None  # OutputTokensTotal's, before it


@register
class InputTokensClientMinusServerMean(LevelMetric):
    tag = "input_tokens_client_minus_server_mean"
    header = "Prompt tokens, client - server (mean)"
    unit = "tokens"
    definition = (
        "the client's count of each prompt (the served model's tokenizer) - the server's, mean over those with both"
    )

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> float | None:
        diffs = [
            r.input_tokens_client - r.input_tokens
            for r in level.ok
            if r.input_tokens_client is not None and r.input_tokens is not None
        ]
        return float(np.mean(diffs)) if diffs else None


@register
class SendsRetried(LevelMetric):
    tag = "sends_retried"
    header = "Sends retried"
    unit = "requests"
    kind = "int"
    definition = "sends repeated on a fresh connection because the server had closed the reused one"

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> int:
        return sum(1 for r in level.records if r.send_retried)
