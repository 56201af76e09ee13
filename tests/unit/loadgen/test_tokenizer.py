"""Prompts sized in the served model's own tokens: the word table is measured from a tokenizer,
checked against its count of a probe, and sizes prompts (generated and trace rows) to the asked
length by a binary search over the word count. A small tokenizer of our own stands in for the
model's here (the real one, llama-server's, is tests/integration/test_prompt_tokens.py): it counts
some words as two tokens, so sizing cannot get away with words = tokens."""

import json

import pytest

from llmbench.backends.base import Endpoint
from llmbench.loadgen.prompts import WORDS, Prompt, WordSizing, make_prompt, trace_prompt
from llmbench.loadgen.tokenizer import measure_word_sizing, sizing_for
from llmbench.schemas.dataset import TraceSpec, scan_trace

TWO_TOKEN_WORDS = {"water", "window", "between", "people", "school", "during", "paper", "chair"}
TEMPLATE_TOKENS, SYSTEM_TURN_TOKENS = 11, 4


class WordPieceTokenizer:
    """Splits at spaces (as a BPE pre-tokenizer does); some words are two tokens, the rest one; a
    chat template of fixed size around the turns. Counts what it is given, nothing cached."""

    def count_text(self, text: str) -> int:
        return sum(2 if w in TWO_TOKEN_WORDS else 1 for w in text.split())

    def count_prompt(self, prompt: Prompt) -> int:
        system = SYSTEM_TURN_TOKENS + self.count_text(prompt.system) if prompt.system else 0
        return TEMPLATE_TOKENS + system + self.count_text(prompt.text)


class MergingTokenizer(WordPieceTokenizer):
    """Merges every pair of words into one token across the space: counts do not add up per word."""

    def count_prompt(self, prompt: Prompt) -> int:
        return TEMPLATE_TOKENS + (len(prompt.text.split()) + 1) // 2


def test_the_word_table_is_measured_from_the_tokenizer():
    sizing = measure_word_sizing(WordPieceTokenizer(), seed=3, shared_prefix_tokens=40, prefix_count=2)
    assert {w for w, n in sizing.table.items() if n == 2} == TWO_TOKEN_WORDS & set(WORDS)
    instruction = len("Continue this list of words with more words:".split())
    assert sizing.base_tokens == TEMPLATE_TOKENS + instruction
    tok = WordPieceTokenizer()
    for k in (0, 1):  # each shared prefix's system turn: its framing and its own words' tokens
        system = make_prompt(3, 0, 1, 1, 40, prefix_id=k).system
        assert sizing.system_tokens[k] == SYSTEM_TURN_TOKENS + tok.count_text(system)


def test_counts_that_do_not_add_up_are_refused():
    with pytest.raises(ValueError, match="do not add up"):
        measure_word_sizing(MergingTokenizer(), seed=3, shared_prefix_tokens=0, prefix_count=1)


@pytest.mark.parametrize("shared", [0, 478])
def test_generated_prompts_land_on_their_length_in_the_tokenizers_count(shared):
    tok = WordPieceTokenizer()
    sizing = measure_word_sizing(tok, seed=0, shared_prefix_tokens=shared, prefix_count=3)
    for i, asked in enumerate((60, 222, 522, 822, 2048)):
        prompt = make_prompt(0, i, asked, 8, shared, prefix_id=i % 3 if shared else 0, sizing=sizing)
        counted = tok.count_prompt(prompt)
        assert prompt.input_tokens_client == counted  # the client's count is the tokenizer's
        # within one token of the whole prompt asked (a two-token word may not fit the last slot)
        assert asked + shared - 1 <= counted <= asked + shared, (asked, counted)
    # the same seed and index, the same prompt; words were not taken as tokens
    again = make_prompt(0, 3, 822, 8, shared, sizing=sizing)
    assert again == make_prompt(0, 3, 822, 8, shared, sizing=sizing)
    unsized = make_prompt(0, 3, 822, 8, shared)
    assert unsized.input_tokens_client is None and len(again.text.split()) != len(unsized.text.split())


def test_the_binary_search_takes_the_longest_run_of_words_within_the_target():
    sizing = WordSizing(base_tokens=10, system_tokens=(), word_tokens=tuple(2 if w == "water" else 1 for w in WORDS))
    words = ["the", "water", "of", "water", "and"]  # running sums from 10: 11, 13, 14, 16, 17
    assert sizing.fit(words, 14, 10) == (3, 14)
    assert sizing.fit(words, 15, 10) == (3, 14)  # the next word is two tokens: it would pass 15
    assert sizing.fit(words, 100, 10) == (5, 17)
    assert sizing.fit(words, 5, 10) == (1, 11)  # at least one word


def test_trace_rows_are_sized_to_their_input_length_and_keep_their_shared_blocks(tmp_path):
    path = tmp_path / "trace.jsonl"
    rows = [
        {"timestamp": 0, "input_length": 300, "output_length": 5, "hash_ids": [1, 2]},
        {"timestamp": 10, "input_length": 300, "output_length": 5, "hash_ids": [1, 3]},
        {"timestamp": 20, "input_length": 97, "output_length": 5},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    trace = scan_trace(TraceSpec(path=str(path)))
    tok = WordPieceTokenizer()
    sizing = measure_word_sizing(tok, seed=0, shared_prefix_tokens=0, prefix_count=1)
    p0, p1, p2 = (trace_prompt(0, trace, k, 64, sizing) for k in range(3))
    for p, asked in ((p0, 300), (p1, 300), (p2, 97)):
        assert p.input_tokens_client == tok.count_prompt(p) and asked - 1 <= tok.count_prompt(p) <= asked
    head = len("Continue this list of words with more words:".split())
    assert p0.text.split()[head : head + 64] == p1.text.split()[head : head + 64]  # block 1, shared
    assert trace_prompt(0, trace, 0, 64).input_tokens_client is None


def test_paths_that_cannot_tokenize_keep_the_words_estimate_without_asking():
    # a wire of its own or a signed runtime has no tokenize endpoint: no request is made at all
    assert sizing_for(Endpoint("http://127.0.0.1:9/invocations", wire="sagemaker"), 0, 0, 1) is None
    assert sizing_for(Endpoint("http://127.0.0.1:9/v1/chat/completions", signer=object()), 0, 0, 1) is None
    # nothing listens on the discard port: refused, so words ~ tokens
    assert sizing_for(Endpoint("http://127.0.0.1:9/v1/chat/completions"), 0, 0, 1) is None
