"""Deterministic, seeded prompts sized to a token budget, and the request bodies that carry them.

Prompts are built from common short English words, each of which is one token for the Llama/
SmolLM/Qwen BPE vocabularies when preceded by a space, so N words ~ N tokens. The server-reported
prompt token count is what the results record; the estimate only sizes the request.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["Prompt", "TEMPLATE_OVERHEAD_TOKENS", "chat_request_body", "make_prompt"]

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


@dataclass(frozen=True)
class Prompt:
    index: int
    text: str
    max_tokens: int
    system: str | None = None  # the shared prefix, identical across requests


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
) -> Prompt:
    """The `index`-th prompt of a seeded workload: same seed and index, same text, always.

    Distinct indices give distinct word sequences (or code), so no two requests share a cacheable
    prefix beyond the instruction, except the optional shared system prompt of
    `shared_prefix_tokens` (seed 002's 478-token system prompt, what prefix caching reuses).
    style "code-edit": rewrite a seeded piece of code with one rename (Workload.prompt_style).
    """
    rng = random.Random(f"{seed}:{index}")
    system = _words(random.Random(f"{seed}:system"), shared_prefix_tokens) if shared_prefix_tokens else None
    if style == "code-edit":
        code, old, new = _code(rng, input_tokens - TEMPLATE_OVERHEAD_TOKENS - 20)
        text = _CODE_INSTRUCTION.format(old=old, new=new) + "\n```python\n" + code + "\n```"
        return Prompt(index=index, text=text, max_tokens=output_tokens, system=system)
    n_words = max(1, input_tokens - TEMPLATE_OVERHEAD_TOKENS - len(_INSTRUCTION.split()))
    return Prompt(index=index, text=f"{_INSTRUCTION} {_words(rng, n_words)}", max_tokens=output_tokens, system=system)


def chat_request_body(prompt: Prompt, model: str = "default") -> dict:
    """OpenAI chat-completions streaming request. `ignore_eos` makes llama-server and vLLM
    generate exactly max_tokens; `include_usage` makes the last chunk carry token counts."""
    system = [{"role": "system", "content": prompt.system}] if prompt.system else []
    return {
        "model": model,
        "messages": [*system, {"role": "user", "content": prompt.text}],
        "max_tokens": prompt.max_tokens,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,
    }
