"""Token counts in the served model's own tokenizer, so a prompt asked to be N tokens is N tokens as
the server counts them, not N words.

A Tokenizer counts a chat prompt the way its server will (template included) and a piece of text.
llama-server has both as endpoints (POST /apply-template renders the messages with the model's
chat template, POST /tokenize counts text): LlamaServerTokenizer. vLLM's OpenAI server has one,
POST /tokenize, taking either the chat messages (template applied) or a prompt: VllmTokenizer.
Which one an endpoint answers is the backend's to say (Endpoint.tokenize_api); where it does not
know (an OpenAI-compatible endpoint we attach to), llama-server's is asked first and vLLM's where
that is absent (HTTP 404). Sizing every request through HTTP would put the server in the client's
path, so measure_word_sizing asks it once per sweep for what our generated prompts are made of
(each word's tokens, the template and instruction around them, each shared system prompt) and
checks that those add up to the server's own count of a probe prompt; sizing is then arithmetic
(prompts.WordSizing), done before a level's clock starts. A dataset's prompts are what they are:
count_prompts counts the ones a level will send, before its clock starts, so their records carry
the client's count too.

Paths with no tokenize endpoint (a managed runtime, a hosted OpenAI API) keep the words ~ tokens
estimate, and their records carry no client count.

The probe is bounded like every other read of a server: each reply at most max_bytes, and the
whole measurement within one deadline, so a server that floods or trickles bytes costs a sweep a
few seconds, and words ~ tokens stands.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Hashable, Iterable
from typing import Protocol, TypeVar

from llmbench.backends.base import Endpoint
from llmbench.backends.deadline import Bounded, request_bounded
from llmbench.loadgen.prompts import WORDS, Prompt, WordSizing, chat_request_body, make_prompt

__all__ = [
    "LlamaServerTokenizer",
    "NoTokenizeEndpoint",
    "Tokenizer",
    "VllmTokenizer",
    "count_prompts",
    "measure_word_sizing",
    "sizing_for",
]

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


class NoTokenizeEndpoint(ValueError):
    """The server has no such tokenize endpoint (HTTP 404 or 405): another API may be tried."""


class _BoundedClient:
    """POSTs to a server's root under one deadline for every request (the whole measurement) and
    at most max_bytes a reply: what each server's tokenizer shares."""

    def __init__(
        self,
        root_url: str,
        headers: dict[str, str] | None = None,
        budget_s: float = PROBE_BUDGET_S,
        max_bytes: int = PROBE_MAX_BYTES,
        deadline: float | None = None,
    ):
        self.root_url = root_url.rstrip("/")
        self.headers = {"Content-Type": "application/json", **(headers or {})}
        # one deadline (time.monotonic) for every request of the measurement; shared when given
        self.deadline = time.monotonic() + budget_s if deadline is None else deadline
        self.budget_s = budget_s
        self.max_bytes = max_bytes

    def _post(self, path: str, body: dict) -> dict:
        left_s = self.deadline - time.monotonic()
        if left_s <= 0:
            raise TimeoutError(f"tokenizer probe: no complete measurement within {self.budget_s:g} s")
        status, raw = request_bounded(
            "POST", self.root_url + path, json.dumps(body).encode(), self.headers, left_s, self.max_bytes
        )
        if status in (404, 405):
            raise NoTokenizeEndpoint(f"tokenizer probe: HTTP {status} from {path}")
        if status != 200:
            raise ValueError(f"tokenizer probe: HTTP {status} from {path}")
        return json.loads(raw)


class LlamaServerTokenizer(_BoundedClient):
    """llama-server's own tokenizer (the GGUF's vocabulary and chat template) over its HTTP API."""

    def count_text(self, text: str) -> int:
        return len(self._post("/tokenize", {"content": text, "add_special": False})["tokens"])

    def count_prompt(self, prompt: Prompt) -> int:
        rendered = self._post("/apply-template", {"messages": chat_request_body(prompt)["messages"]})["prompt"]
        # add_special: the BOS token where the model adds one, as the server does for a chat request
        return len(self._post("/tokenize", {"content": rendered, "add_special": True})["tokens"])


class VllmTokenizer(_BoundedClient):
    """vLLM's own tokenizer (the served model's, and its chat template) over its POST /tokenize."""

    def __init__(self, root_url: str, model: str, *args, **kwargs):
        super().__init__(root_url, *args, **kwargs)
        self.model = model

    def _count(self, body: dict) -> int:
        reply = self._post("/tokenize", {"model": self.model, **body})
        count = reply["count"]
        if not isinstance(count, int) or isinstance(count, bool):
            raise TypeError(f"tokenizer probe: count {count!r} is not an integer")
        return count

    def count_text(self, text: str) -> int:
        return self._count({"prompt": text, "add_special_tokens": False})

    def count_prompt(self, prompt: Prompt) -> int:
        # the messages a chat request carries, with the generation prompt its template adds
        return self._count({"messages": chat_request_body(prompt)["messages"], "add_generation_prompt": True})


def _tokenizers(endpoint: Endpoint, budget_s: float, max_bytes: int) -> list[Tokenizer]:
    """The tokenizers to try on `endpoint`, in order, sharing one deadline: the one its backend
    names, else llama-server's then vLLM's; none where it cannot tokenize (a wire other than OpenAI
    chat over HTTP, a signed runtime)."""
    if endpoint.wire != "sse" or endpoint.signer is not None or "/v1/" not in endpoint.url:
        return []
    root = endpoint.url.split("/v1/", 1)[0]
    deadline = time.monotonic() + budget_s
    llama = LlamaServerTokenizer(root, endpoint.headers, budget_s, max_bytes, deadline)
    vllm = VllmTokenizer(root, endpoint.model, endpoint.headers, budget_s, max_bytes, deadline)
    named: dict[str | None, list[Tokenizer]] = {"llama-server": [llama], "vllm": [vllm]}
    return named.get(endpoint.tokenize_api, [llama, vllm])


T = TypeVar("T")
K = TypeVar("K", bound=Hashable)  # what a caller keys its prompts by
# what a server that cannot count, or breaks the probe's bounds, raises (NoTokenizeEndpoint aside)
_PROBE_FAILURES = (OSError, ValueError, KeyError, TypeError, Bounded)


def _with_tokenizer(endpoint: Endpoint, measure: Callable[[Tokenizer], T], budget_s: float, max_bytes: int) -> T | None:
    """measure(the endpoint's tokenizer): the next API tried only where the last one is absent
    (NoTokenizeEndpoint); None where none can measure within the bounds."""
    for tok in _tokenizers(endpoint, budget_s, max_bytes):
        try:
            return measure(tok)
        except NoTokenizeEndpoint:
            continue
        except _PROBE_FAILURES:  # a flood, a trickle, a reply that is not a count, or no sum
            return None
    return None


def measure_word_sizing(tok: Tokenizer, seed: int, shared_prefix_tokens: int, prefix_count: int) -> WordSizing:
    """The served model's counts for a workload's generated prompts (prompts.WordSizing), raising
    ValueError when they do not add up to its own count of a probe prompt (a tokenizer that merges
    across spaces: the words ~ tokens estimate stays)."""
    bare = make_prompt(seed, 0, 1, 1)  # the instruction and one word
    # a chat prompt first: on a server of another API its template endpoint is absent (404), where
    # its /tokenize may exist and only refuse a body of the wrong shape
    bare_tokens = tok.count_prompt(bare)
    word_tokens = tuple(tok.count_text(" " + w) for w in WORDS)
    first_word = bare.text.rsplit(" ", 1)[1]
    base = bare_tokens - word_tokens[WORDS.index(first_word)]
    system: list[int] = []
    if shared_prefix_tokens:
        for k in range(prefix_count):
            with_system = make_prompt(seed, 0, 1, 1, shared_prefix_tokens, prefix_id=k)
            system.append(tok.count_prompt(with_system) - bare_tokens)
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
    runtime, a server with neither llama-server's nor vLLM's tokenize endpoints, or one whose
    replies break the probe's bounds: budget_s for the whole measurement, max_bytes a reply):
    words ~ tokens then."""
    return _with_tokenizer(
        endpoint, lambda tok: measure_word_sizing(tok, seed, shared_prefix_tokens, prefix_count), budget_s, max_bytes
    )


def count_each(tok: Tokenizer, prompts: Iterable[tuple[K, Prompt]]) -> dict[K, int]:
    """{key: the tokenizer's count of its prompt} for as many of `prompts` as it counts: a prompt
    the server refuses (an HTTP error) is left out; the first that breaks the bounds (the
    deadline, a flood) ends the counting with what was counted kept. NoTokenizeEndpoint on the
    first prompt is raised (another API may be tried)."""
    counts: dict[K, int] = {}
    for key, prompt in prompts:
        try:
            counts[key] = tok.count_prompt(prompt)
        except NoTokenizeEndpoint:
            if not counts:
                raise
            break
        except (KeyError, TypeError, json.JSONDecodeError):  # a reply that is not a count
            break
        except ValueError:  # this prompt refused (e.g. HTTP 400): the others may still count
            continue
        except (OSError, Bounded):  # the deadline, a flood or a trickle: what was counted stands
            break
    return counts


def count_prompts(
    endpoint: Endpoint,
    prompts: Iterable[tuple[K, Prompt]],
    budget_s: float = PROBE_BUDGET_S,
    max_bytes: int = PROBE_MAX_BYTES,
) -> dict[K, int]:
    """{key: the served model's token count of its prompt, template included} for the (key,
    prompt) pairs counted within the probe's bounds (budget_s for all of them, max_bytes a reply),
    in order; those beyond stay uncounted. Empty where the endpoint cannot tokenize. A dataset
    level's prompts are counted here before its clock starts, so no request waits on a tokenizer."""
    pending = iter(prompts)
    # the first pair is kept for the next API: a tokenizer whose endpoint is absent stops at it
    first = list(itertools.islice(pending, 1))
    counted = _with_tokenizer(
        endpoint, lambda tok: count_each(tok, itertools.chain(first, pending)), budget_s, max_bytes
    )
    return counted or {}
