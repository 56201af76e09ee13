"""Deterministic, seeded prompts sized to a token budget, and the request bodies that carry them.

Prompts are built from common short English words, each of which is one token for the Llama/
SmolLM/Qwen BPE vocabularies when preceded by a space, so N words ~ N tokens. Where the server can
tokenize (loadgen.tokenizer: llama-server, vLLM), a WordSizing measured from the served model's own
tokenizer sizes them instead, and the prompt carries the client's exact count; the server-reported
count is recorded beside it.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llmbench.schemas.dataset import Conversation, DatasetIndex, DatasetSpec, Trace

__all__ = [
    "Prompt",
    "TEMPLATE_OVERHEAD_TOKENS",
    "WORDS",
    "WordSizing",
    "chat_request_body",
    "dataset_prompt",
    "draw_prefix",
    "make_prompt",
    "session_turn_prompt",
    "trace_prompt",
]

_WORDS = (
    "the of and to in is was for on that with as by at from his her it an are were be this which "
    "or had not but have one all their they been has more when who will no there its would can "
    "time two if new first may into only out some also year these other many then them so over "
    "than about after such most made up city part used where state world people under between "
    "known high during could did she both three well while life school war four back long name "
    "just same each work later day game house end team our what any few like very good way water "
    "old open great small land line light north south east west river road word light book car "
    "tree sun moon star rain snow wind fire stone paper table chair door window music song story"
).split()

# Tokens a chat template adds around one user message (role markers, separators); measured as
# ~30 with SmolLM2's template and the instruction line. Subtracted so the whole prompt lands near the budget.
TEMPLATE_OVERHEAD_TOKENS = 30
_INSTRUCTION = "Continue this list of words with more words:"
WORDS: tuple[str, ...] = tuple(dict.fromkeys(_WORDS))  # the distinct words prompts are made of


@dataclass(frozen=True)
class WordSizing:
    """A served model's token counts for our generated prompts, measured once from its tokenizer
    (tokenizer.measure_word_sizing). A BPE pre-tokenizer splits text at each space, so a prompt's
    count is additive: base_tokens (the chat template around one user turn and the instruction)
    + system_tokens[prefix_id] (what shared prefix k's system turn adds) + each word's tokens (with
    its leading space). Sizing a prompt is then arithmetic on the client, no server call."""

    base_tokens: int
    system_tokens: tuple[int, ...]  # by prefix id; () when the workload has no shared prefix
    word_tokens: tuple[int, ...]  # tokens of " " + WORDS[k]

    @functools.cached_property
    def table(self) -> dict[str, int]:
        """Tokens of each word (with its leading space), by word."""
        return dict(zip(WORDS, self.word_tokens, strict=True))

    def fit(self, words: list[str], target_tokens: int, fixed_tokens: int) -> tuple[int, int]:
        """(how many of `words`, from the first, bring fixed_tokens + their tokens closest to
        target_tokens without passing it, that count): a binary search over the running sum.
        At least one word; `words` must be long enough (each word is at least one token)."""
        cum = list(itertools.accumulate(map(self.table.__getitem__, words), initial=fixed_tokens))
        n = max(1, bisect.bisect_right(cum, target_tokens) - 1)
        return n, cum[n]


@dataclass(frozen=True)
class Prompt:
    index: int
    text: str
    max_tokens: int
    system: str | None = None  # the shared prefix, identical across requests
    # A dataset's request (dataset_prompt): its turns as (role, content), sent as they are (text and
    # system then hold its last user turn and its system turn, for wires that take one prompt).
    messages: tuple[tuple[str, str], ...] | None = None
    ignore_eos: bool = True  # False: the model stops where it would (dataset output: model)
    # The whole prompt's tokens as the client counted them with the served model's tokenizer
    # (WordSizing; a dataset's prompt: tokenizer.count_prompts before the level); None: not counted.
    input_tokens_client: int | None = None


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(max(0, n)))


# code-edit prompts: a function of seeded lines, each ~CODE_TOKENS_PER_LINE tokens, to be rewritten
# with one rename. The answer repeats most of the prompt, as seed 002's "rewrite this code" tasks
# do: what n-gram prompt lookup (speculative decoding without a draft model) drafts from.
CODE_TOKENS_PER_LINE = 14
_CODE_INSTRUCTION = "Rewrite this code with one change: rename `{old}` to `{new}`. Answer with the whole code only."


def _code(rng: random.Random, n_tokens: int) -> tuple[str, str, str]:
    """(a seeded Python function of about n_tokens tokens, a name it uses, its replacement)."""
    names = [w for w in _WORDS if len(w) > 3]
    old, new = rng.sample(names, 2)
    lines = [f"def update_{old}(items, {old}_limit):", "    total = 0"]
    for i in range(max(1, n_tokens // CODE_TOKENS_PER_LINE - 3)):
        a, b = rng.choice(names), rng.choice(names)
        lines.append(f"    {a}_{i} = items[{i}].{b} + min({old}_limit, {rng.randint(1, 99)})")
    lines.append("    return total")
    return "\n".join(lines), f"{old}_limit", f"{new}_limit"


def make_prompt(
    seed: int,
    index: int,
    input_tokens: int,
    output_tokens: int,
    shared_prefix_tokens: int = 0,
    style: str = "words",
    prefix_id: int = 0,
    sizing: WordSizing | None = None,
) -> Prompt:
    """The `index`-th prompt of a seeded workload: same seed and index, same text, always.

    Distinct indices give distinct word sequences (or code), so no two requests share a cacheable
    prefix beyond the instruction, except the optional shared system prompt of
    `shared_prefix_tokens` (seed 002's 478-token system prompt, what prefix caching reuses).
    style "code-edit": rewrite a seeded piece of code with one rename (Workload.prompt_style).
    With `sizing` (the served model's counts), a words prompt is input_tokens + shared_prefix_tokens
    tokens in all as its tokenizer counts them (the word count binary-searched to it), and carries
    that count; without, words ~ tokens less TEMPLATE_OVERHEAD_TOKENS.
    """
    rng = random.Random(f"{seed}:{index}")
    key = f"{seed}:system" if prefix_id == 0 else f"{seed}:system:{prefix_id}"
    system = _words(random.Random(key), shared_prefix_tokens) if shared_prefix_tokens else None
    if style == "code-edit":
        code, old, new = _code(rng, input_tokens - TEMPLATE_OVERHEAD_TOKENS - 20)
        text = _CODE_INSTRUCTION.format(old=old, new=new) + "\n```python\n" + code + "\n```"
        return Prompt(index=index, text=text, max_tokens=output_tokens, system=system)
    if sizing is not None:
        fixed = sizing.base_tokens + (sizing.system_tokens[prefix_id] if system else 0)
        words = [rng.choice(_WORDS) for _ in range(max(1, input_tokens + shared_prefix_tokens - fixed))]
        n, counted = sizing.fit(words, input_tokens + shared_prefix_tokens, fixed)
        text = f"{_INSTRUCTION} {' '.join(words[:n])}"
        return Prompt(index, text, output_tokens, system, input_tokens_client=counted)
    n_words = max(1, input_tokens - TEMPLATE_OVERHEAD_TOKENS - len(_INSTRUCTION.split()))
    return Prompt(index=index, text=f"{_INSTRUCTION} {_words(rng, n_words)}", max_tokens=output_tokens, system=system)


def chat_request_body(prompt: Prompt, model: str = "default") -> dict:
    """OpenAI chat-completions streaming request. `ignore_eos` makes llama-server and vLLM
    generate exactly max_tokens; `include_usage` makes the last chunk carry token counts, and
    `continuous_usage_stats` (vLLM's) every chunk its running count, so that a chunk carrying
    several tokens (speculation) is seen as such; llama-server ignores it."""
    if prompt.messages is not None:
        messages = [{"role": role, "content": content} for role, content in prompt.messages]
    else:
        system = [{"role": "system", "content": prompt.system}] if prompt.system else []
        messages = [*system, {"role": "user", "content": prompt.text}]
    return {
        "model": model,
        "messages": messages,
        "max_tokens": prompt.max_tokens,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        "ignore_eos": prompt.ignore_eos,
    }


def dataset_prompt(spec: DatasetSpec, index: DatasetIndex, seed: int, request_index: int, output_tokens: int) -> Prompt:
    """Request `request_index` of a dataset workload: its seeded row's first prompt (system turns
    and the first user turn). Its output length: output_tokens (the workload's draw; with output
    "model", the cap of a natural stop), or the row's own (output "data")."""
    row = index.row_of(seed, request_index, spec.sample == "with_replacement")
    conv = index.conversation(row)
    return _turns_prompt(request_index, conv.first_prompt, conv.first_answer_tokens, output_tokens, spec)


@functools.lru_cache(maxsize=16)
def _zipf_cumulative(count: int, s: float) -> tuple[float, ...]:
    return tuple(itertools.accumulate(1.0 / (k**s) for k in range(1, count + 1)))


def draw_prefix(seed: int, index: int, count: int, draw: str = "uniform", zipf_s: float = 1.0) -> int:
    """Which of `count` shared prefixes request `index` carries (0..count-1), seeded per request.
    uniform: each alike; zipf: prefix k (0-based) with probability (1 / (k + 1)^s) / H(count, s),
    the few popular system prompts and the long tail of rare ones that real traffic has."""
    if count <= 1:
        return 0
    rng = random.Random(f"{seed}:prefix:{index}")
    if draw == "uniform":
        return rng.randrange(count)
    cum = _zipf_cumulative(count, zipf_s)
    return min(count - 1, bisect.bisect_right(cum, rng.random() * cum[-1]))


def session_turn_prompt(
    conv: Conversation, turn: int, output_tokens: int, spec: DatasetSpec, answers: Sequence[str] | None = None
) -> Prompt | None:
    """Turn `turn` (0-based) of a multi-turn session: every turn of the row up to and including its
    turn-th user turn, the row's own assistant turns as the history. None past its last user turn.

    answers (multi_turn history "model"): the model's answers to the session's turns 0..turn-1, in
    order. The history is then the row's system turns and earlier user turns where the row has
    them, each user turn followed by the model's answer to it; the row's own assistant turns are
    left out (they answered a conversation the model did not have). An answer that failed or was
    empty is passed as "": an empty assistant turn, so the turns still alternate as the chat
    template expects and the history's length says what was really carried."""
    users = conv.user_turns()
    if turn >= len(users):
        return None
    if answers is None:
        turns = conv.turns[: users[turn] + 1]
    else:
        if len(answers) < turn:
            raise ValueError(f"turn {turn} needs the model's answers to the {turn} turns before it, got {len(answers)}")
        asked = {k: j for j, k in enumerate(users[:turn])}  # an earlier user turn's place -> its turn number
        carried: list[tuple[str, str]] = []
        for k, (role, text) in enumerate(conv.turns[: users[turn]]):
            if role == "assistant":
                continue
            carried.append((role, text))
            if k in asked:
                carried.append(("assistant", answers[asked[k]]))
        turns = (*carried, conv.turns[users[turn]])
    return _turns_prompt(turn, turns, conv.answer_tokens(users[turn]), output_tokens, spec)


def _turns_prompt(index: int, turns: Any, answer_tokens: int | None, output_tokens: int, spec: DatasetSpec) -> Prompt:
    """A prompt of a dataset row's turns (the last one the user's): its system turns joined, its
    output length the row's own answer (output "data") or the workload's draw."""
    max_tokens = (answer_tokens or output_tokens) if spec.output == "data" else output_tokens
    system = "\n".join(text for role, text in turns if role == "system") or None
    return Prompt(
        index=index,
        text=turns[-1][1],
        max_tokens=max_tokens,
        system=system,
        messages=turns,
        ignore_eos=spec.output != "model",
    )


def trace_prompt(seed: int, trace: Trace, row: int, block_tokens: int, sizing: WordSizing | None = None) -> Prompt:
    """Row `row` of a trace as a prompt of its input_length: one block of block_tokens words per hash
    id (the same id, the same words: the prefix the trace says requests share), then words of its
    own up to the length; it asks for its output_length. With `sizing`, the length is the served
    model's token count (as make_prompt)."""
    if sizing is None:
        n_words = max(1, trace.input_lengths[row] - TEMPLATE_OVERHEAD_TOKENS - len(_INSTRUCTION.split()))
    else:
        n_words = max(1, trace.input_lengths[row] - sizing.base_tokens)
    words: list[str] = []
    for h in trace.hash_ids[row]:
        if len(words) >= n_words:
            break
        words.extend(_block(seed, h, block_tokens))
    words = words[:n_words]
    if len(words) < n_words:
        rng = random.Random(f"{seed}:trace:{row}")
        words.extend(rng.choice(_WORDS) for _ in range(n_words - len(words)))
    counted = None
    if sizing is not None:
        n, counted = sizing.fit(words, trace.input_lengths[row], sizing.base_tokens)
        words = words[:n]
    text = f"{_INSTRUCTION} {' '.join(words)}"
    return Prompt(index=row, text=text, max_tokens=trace.output_lengths[row], input_tokens_client=counted)


@functools.lru_cache(maxsize=4096)
def _block(seed: int, hash_id: int, block_tokens: int) -> tuple[str, ...]:
    rng = random.Random(f"{seed}:block:{hash_id}")
    return tuple(rng.choice(_WORDS) for _ in range(block_tokens))
