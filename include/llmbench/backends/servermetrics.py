"""What a serving engine says about itself, read best effort over plain HTTP beside the benchmark's
own requests: its Prometheus counters (vLLM's speculative-decoding counters, read before and after
each level: metrics.spec_decode_level; its scheduler gauges and cache and queue counters, sampled
while each level runs: LevelSampler, metrics.server_metrics_level) and small JSON documents (its
version). Nothing here
raises for a server that does not answer: the caller gets None and the reason, and records NULL.

Which URL to read is the backend's business (Endpoint.metrics_url, Backend.engine_version); this
module only knows the formats.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.error
from typing import Any

from llmbench.analysis.metrics import ServerReading
from llmbench.backends.deadline import get_bounded

# vLLM's speculative-decoding counters (V0 and V1 engines; V1 labels them per engine and model,
# summed here): tokens the draft proposed, and those the target model accepted.
VLLM_SPEC_ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
VLLM_SPEC_DRAFT = "vllm:spec_decode_num_draft_tokens_total"
# vLLM V1's scheduler and cache (names as vLLM 0.10 to 0.32 expose them; a page without the running
# gauge is not vLLM's).
VLLM_RUNNING = "vllm:num_requests_running"
VLLM_WAITING = "vllm:num_requests_waiting"
VLLM_KV_USAGE = "vllm:kv_cache_usage_perc"
VLLM_PREFIX_QUERIES = "vllm:prefix_cache_queries_total"
VLLM_PREFIX_HITS = "vllm:prefix_cache_hits_total"
VLLM_PROMPT_CACHED = "vllm:prompt_tokens_cached_total"
VLLM_QUEUE_SUM = "vllm:request_queue_time_seconds_sum"
VLLM_QUEUE_COUNT = "vllm:request_queue_time_seconds_count"
SAMPLE_INTERVAL_S = 0.5  # gauges read about twice a second while a level runs (a short level too)
TIMEOUT_S = 5.0
MAX_BYTES = 8 << 20  # a /metrics page of a large server is ~100 KB; more is not a metrics page

_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{.*\})?\s+(\S+)(?:\s+\S+)?\s*$")


def parse_prometheus(text: str) -> dict[str, float]:
    """Prometheus text exposition -> {metric name: the sum of its samples over every label set}.
    Comments (# HELP, # TYPE) and lines that are not samples are skipped; so are values that are
    not numbers."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        out[m.group(1)] = out.get(m.group(1), 0.0) + value
    return out


def fetch(url: str, headers: dict[str, str] | None = None, timeout_s: float | None = None) -> bytes:
    """GET url within timeout_s (None: TIMEOUT_S, read at the call) in all (a wall-clock deadline:
    llmbench.backends.deadline); the
    body of a 2xx answer (more than MAX_BYTES is refused). Raises OSError (urllib.error.HTTPError
    for another status, TimeoutError once the deadline passes). Credentials follow a redirect only
    to the same origin (deadline.get_bounded)."""
    sent = {k: v for k, v in (headers or {}).items() if k.lower() != "content-type"}
    return get_bounded(url, sent, TIMEOUT_S if timeout_s is None else timeout_s, MAX_BYTES)


def fetch_json(
    url: str, headers: dict[str, str] | None = None, timeout_s: float | None = None
) -> dict[str, Any] | None:
    """GET url as a JSON object; None when it does not answer with one."""
    try:
        doc = json.loads(fetch(url, headers, timeout_s))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _metrics_page(
    metrics_url: str | None, headers: dict[str, str] | None, why_not: str | None
) -> tuple[dict[str, float] | None, str | None]:
    """A /metrics page parsed, or (None, why not): no metrics URL (why_not, the backend's reason),
    or the server did not answer."""
    if not metrics_url:
        return None, why_not or "the backend exposes no server metrics"
    try:
        text = fetch(metrics_url, headers).decode("utf-8", errors="replace")
    except urllib.error.HTTPError as e:
        return None, f"GET {metrics_url}: HTTP {e.code}"
    except OSError as e:
        return None, f"GET {metrics_url}: {e}"
    return parse_prometheus(text), None


def spec_decode_counters(
    metrics_url: str | None, headers: dict[str, str] | None = None, why_not: str | None = None
) -> tuple[dict[str, float] | None, str | None]:
    """vLLM's speculative-decoding counters at metrics_url: ({"accepted_tokens", "draft_tokens"},
    None), or (None, why not): no metrics URL (why_not, the backend's reason), the server did not
    answer, or its /metrics has no such counters (no speculative config, or not vLLM)."""
    values, why = _metrics_page(metrics_url, headers, why_not)
    if values is None:
        return None, why
    if VLLM_SPEC_ACCEPTED not in values or VLLM_SPEC_DRAFT not in values:
        return None, f"{metrics_url} has no {VLLM_SPEC_DRAFT} (no speculative decoding, or not vLLM)"
    return {"accepted_tokens": values[VLLM_SPEC_ACCEPTED], "draft_tokens": values[VLLM_SPEC_DRAFT]}, None


def server_root(base_url: str) -> str:
    """An OpenAI-compatible server's root from its API base URL (vLLM serves /metrics and /version
    beside /v1, not under it)."""
    return base_url.rstrip("/").removesuffix("/v1")


def vllm_version(root: str, headers: dict[str, str] | None = None) -> tuple[str | None, str]:
    """(vLLM's version from GET <root>/version, what was asked); None when it does not answer
    {"version": ...} (an OpenAI-compatible server that is not vLLM)."""
    doc = fetch_json(root + "/version", headers)
    version = doc.get("version") if doc else None
    return (str(version) if version else None), f"GET {root}/version"


def llama_server_build(root: str, headers: dict[str, str] | None = None) -> tuple[str | None, str]:
    """(llama-server's build from GET <root>/props `build_info`, e.g. "b6780-1234abcd", what was
    asked); None when it does not say (older builds)."""
    doc = fetch_json(root + "/props", headers)
    build = doc.get("build_info") if doc else None
    return (str(build) if build else None), f"GET {root}/props build_info"


def vllm_reading(
    metrics_url: str | None, headers: dict[str, str] | None = None, why_not: str | None = None
) -> tuple[ServerReading | None, str | None]:
    """One reading of vLLM's scheduler gauges and cache/queue counters at metrics_url, or (None,
    why not): no metrics URL (why_not, the backend's reason), no answer, or not vLLM's page."""
    v, why = _metrics_page(metrics_url, headers, why_not)
    if v is None:
        return None, why
    if VLLM_RUNNING not in v:
        return None, f"{metrics_url} has no {VLLM_RUNNING} (not vLLM)"
    return (
        ServerReading(
            requests_running=v.get(VLLM_RUNNING),
            requests_waiting=v.get(VLLM_WAITING),
            kv_cache_usage_frac=v.get(VLLM_KV_USAGE),
            prefix_cache_queries_tokens=v.get(VLLM_PREFIX_QUERIES),
            prefix_cache_hits_tokens=v.get(VLLM_PREFIX_HITS),
            prompt_tokens_cached=v.get(VLLM_PROMPT_CACHED),
            queue_time_s_sum=v.get(VLLM_QUEUE_SUM),
            queue_time_count=v.get(VLLM_QUEUE_COUNT),
        ),
        None,
    )


class LevelSampler:
    """vLLM's /metrics around and during one level: a reading before it (start), one about every
    interval_s in a thread while it runs, and one after it (stop). Gauges only mean something while
    requests are in flight, so a before/after pair alone cannot give running or waiting."""

    def __init__(
        self,
        metrics_url: str | None,
        headers: dict[str, str] | None = None,
        why_not: str | None = None,
        interval_s: float = SAMPLE_INTERVAL_S,
    ):
        self.metrics_url, self.headers, self.interval_s = metrics_url, headers, interval_s
        self.why_not = why_not
        self.before: ServerReading | None = None
        self.after: ServerReading | None = None
        self.samples: list[ServerReading] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> LevelSampler:
        self.before, self.why_not = vllm_reading(self.metrics_url, self.headers, self.why_not)
        if self.before is not None:
            self._thread = threading.Thread(target=self._run, name="server-metrics", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            reading, _ = vllm_reading(self.metrics_url, self.headers)
            if reading is not None:
                self.samples.append(reading)

    def stop(self) -> dict[str, Any]:
        """The level's server-metrics columns (metrics.server_metrics_level)."""
        from llmbench.analysis import metrics

        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=TIMEOUT_S + 1)
            self.after, why_not_after = vllm_reading(self.metrics_url, self.headers)
            self.why_not = self.why_not or why_not_after
        return metrics.server_metrics_level(self.before, self.after, list(self.samples), self.why_not)
