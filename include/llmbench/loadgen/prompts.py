"""Deterministic, seeded prompts sized to a token budget, and the request bodies that carry them.

Prompts are built from common short English words, each of which is one token for the Llama/
SmolLM/Qwen BPE vocabularies when preceded by a space, so N words ~ N tokens. The server-reported
prompt token count is what the results record; the estimate only sizes the request.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from llmbench.schemas.dataset import DatasetIndex, DatasetSpec

__all__ = ["Prompt", "TEMPLATE_OVERHEAD_TOKENS", "chat_request_body", "dataset_prompt", "make_prompt"]

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
    # A dataset's request (dataset_prompt): its turns as (role, content), sent as they are (text and
    # system then hold its last user turn and its system turn, for wires that take one prompt).
    messages: tuple[tuple[str, str], ...] | None = None
    ignore_eos: bool = True  # False: the model stops where it would (dataset output: model)


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(max(0, n)))


def make_prompt(seed: int, index: int, input_tokens: int, output_tokens: int, shared_prefix_tokens: int = 0) -> Prompt:
    """The `index`-th prompt of a seeded workload: same seed and index, same text, always.

    Distinct indices give distinct word sequences, so no two requests share a cacheable prefix
    beyond the instruction, except the optional shared system prompt of `shared_prefix_tokens`
    (seed 002's 478-token system prompt, what prefix caching reuses).
    """
    rng = random.Random(f"{seed}:{index}")
    n_words = max(1, input_tokens - TEMPLATE_OVERHEAD_TOKENS - len(_INSTRUCTION.split()))
    system = _words(random.Random(f"{seed}:system"), shared_prefix_tokens) if shared_prefix_tokens else None
    return Prompt(index=index, text=f"{_INSTRUCTION} {_words(rng, n_words)}", max_tokens=output_tokens, system=system)


def chat_request_body(prompt: Prompt, model: str = "default") -> dict:
    """OpenAI chat-completions streaming request. `ignore_eos` makes llama-server and vLLM
    generate exactly max_tokens; `include_usage` makes the last chunk carry token counts."""
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
        "stream_options": {"include_usage": True},
        "ignore_eos": prompt.ignore_eos,
    }


def dataset_prompt(spec: DatasetSpec, index: DatasetIndex, seed: int, request_index: int, output_tokens: int) -> Prompt:
    """Request `request_index` of a dataset workload: its seeded row's first prompt (system turns
    and the first user turn). Its output length: output_tokens (the workload's draw; with output
    "model", the cap of a natural stop), or the row's own (output "data")."""
    row = index.row_of(seed, request_index, spec.sample == "with_replacement")
    conv = index.conversation(row)
    turns = conv.first_prompt
    max_tokens = (conv.first_answer_tokens or output_tokens) if spec.output == "data" else output_tokens
    system = "\n".join(text for role, text in turns if role == "system") or None
    return Prompt(
        index=request_index,
        text=turns[-1][1],
        max_tokens=max_tokens,
        system=system,
        messages=turns,
        ignore_eos=spec.output != "model",
    )
