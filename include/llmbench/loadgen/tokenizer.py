"""Token counts in the served model's own tokenizer, so a prompt asked to be N tokens is N tokens as
the server counts them, not N words.

A Tokenizer counts a chat prompt the way its server will (template included) and a piece of text.
llama-server has both as endpoints (POST /apply-template renders the messages with the model's
chat template, POST /tokenize counts text): LlamaServerTokenizer. Sizing every request through
HTTP would put the server in the client's path, so measure_word_sizing asks it once per sweep for
what our generated prompts are made of (each word's tokens, the template and instruction around
them, each shared system prompt) and checks that those add up to the server's own count of a
probe prompt; sizing is then arithmetic (prompts.WordSizing), done before a level's clock starts.

Paths with no tokenize endpoint (a managed runtime, a hosted OpenAI API, vLLM until its /tokenize
is wired here) keep the words ~ tokens estimate, and their records carry no client count.

The probe is bounded like every other read of a server: each reply at most max_bytes, and the
whole measurement within one deadline, so a server that floods or trickles bytes costs a sweep a
few seconds, and words ~ tokens stands.
"""

from __future__ import annotations

import json
import time
from typing import Protocol

from llmbench.backends.base import Endpoint
from llmbench.backends.deadline import Bounded, request_bounded
from llmbench.loadgen.prompts import WORDS, Prompt, WordSizing, chat_request_body, make_prompt

__all__ = ["LlamaServerTokenizer", "Tokenizer", "measure_word_sizing", "sizing_for"]

PROBE_BUDGET_S = 10.0  # the whole measurement (148 words, the template, the prefixes, one probe)
PROBE_MAX_BYTES = 1 << 20  # a /tokenize reply of a few thousand tokens is tens of KB
PROBE_WORDS = 300  # words in the probe prompt that checks the counts add up


class Tokenizer(Protocol):
    def count_prompt(self, prompt: Prompt) -> int:
        """Tokens of the whole chat prompt (template, system turn, user turn) as the server counts it."""
        ...

    def count_text(self, text: str) -> int:
        """Tokens of `text` alone (no special tokens)."""
        ...


class LlamaServerTokenizer:
    """llama-server's own tokenizer (the GGUF's vocabulary and chat template) over its HTTP API."""

    def __init__(
        self,
        root_url: str,
        headers: dict[str, str] | None = None,
        budget_s: float = PROBE_BUDGET_S,
        max_bytes: int = PROBE_MAX_BYTES,
    ):
        self.root_url = root_url.rstrip("/")
        self.headers = {"Content-Type": "application/json", **(headers or {})}
        self.deadline = time.monotonic() + budget_s  # one deadline for every request of the measurement
        self.budget_s = budget_s
        self.max_bytes = max_bytes

    def _post(self, path: str, body: dict) -> dict:
        left_s = self.deadline - time.monotonic()
        if left_s <= 0:
            raise TimeoutError(f"tokenizer probe: no complete measurement within {self.budget_s:g} s")
        status, raw = request_bounded(
            "POST", self.root_url + path, json.dumps(body).encode(), self.headers, left_s, self.max_bytes
        )
        if status != 200:
            raise ValueError(f"tokenizer probe: HTTP {status} from {path}")
        return json.loads(raw)

    def count_text(self, text: str) -> int:
        return len(self._post("/tokenize", {"content": text, "add_special": False})["tokens"])

    def count_prompt(self, prompt: Prompt) -> int:
        rendered = self._post("/apply-template", {"messages": chat_request_body(prompt)["messages"]})["prompt"]
        # add_special: the BOS token where the model adds one, as the server does for a chat request
        return len(self._post("/tokenize", {"content": rendered, "add_special": True})["tokens"])


def measure_word_sizing(tok: Tokenizer, seed: int, shared_prefix_tokens: int, prefix_count: int) -> WordSizing:
    """The served model's counts for a workload's generated prompts (prompts.WordSizing), raising
    ValueError when they do not add up to its own count of a probe prompt (a tokenizer that merges
    across spaces: the words ~ tokens estimate stays)."""
    word_tokens = tuple(tok.count_text(" " + w) for w in WORDS)
    bare = make_prompt(seed, 0, 1, 1)  # the instruction and one word
    first_word = bare.text.rsplit(" ", 1)[1]
    base = tok.count_prompt(bare) - word_tokens[WORDS.index(first_word)]
    system: list[int] = []
    if shared_prefix_tokens:
        for k in range(prefix_count):
            with_system = make_prompt(seed, 0, 1, 1, shared_prefix_tokens, prefix_id=k)
            system.append(tok.count_prompt(with_system) - tok.count_prompt(bare))
    sizing = WordSizing(base, tuple(system), word_tokens)
    probe = make_prompt(seed, 1, PROBE_WORDS, 1, shared_prefix_tokens, sizing=sizing)
    served = tok.count_prompt(probe)
    if served != probe.input_tokens_client:
        raise ValueError(
            f"token counts do not add up: the server counts {served}, the word table {probe.input_tokens_client}"
        )
    return sizing


def sizing_for(
    endpoint: Endpoint,
    seed: int,
    shared_prefix_tokens: int,
    prefix_count: int,
    budget_s: float = PROBE_BUDGET_S,
    max_bytes: int = PROBE_MAX_BYTES,
) -> WordSizing | None:
    """The WordSizing of a workload's generated prompts on `endpoint`, measured now (each sweep and
    warm-up measures its own: a port may serve another model by the next run, ~0.1 s a time);
    None where the endpoint cannot tokenize (a wire other than OpenAI chat over HTTP, a signed
    runtime, a server without /apply-template and /tokenize, or one whose replies break the
    probe's bounds: budget_s for the whole measurement, max_bytes a reply): words ~ tokens then."""
    if endpoint.wire != "sse" or endpoint.signer is not None or "/v1/" not in endpoint.url:
        return None
    tok = LlamaServerTokenizer(endpoint.url.split("/v1/", 1)[0], endpoint.headers, budget_s, max_bytes)
    try:
        return measure_word_sizing(tok, seed, shared_prefix_tokens, prefix_count)
    except (OSError, ValueError, KeyError, TypeError, Bounded):  # no tokenize endpoint, bounds broken, or no sum
        return None
