"""Each seed's workload preset draws what its article describes, the whole prompt included
(seed 002: ~1,000 input tokens per request in all, of which the 478-token shared system prompt)."""

import statistics

import pytest

from llmbench.schemas.workload import PRESETS, Workload, length_mean, length_range, sample_length

N = 4000


def _draws(w: Workload, which: str) -> list[int]:
    spec = w.input_tokens if which == "input" else w.output_tokens
    return [sample_length(spec, w.seed, i, which) for i in range(N)]


def test_every_preset_is_tested():
    assert set(PRESETS) == {"seed-000", "seed-002"}


def test_seed_000_preset_is_2048_in_512_out():
    w = Workload.model_validate({"preset": "seed-000"})
    prompt = [n + w.shared_prefix_tokens for n in _draws(w, "input")]
    out = _draws(w, "output")
    assert set(prompt) == {2048} and set(out) == {512}  # fixed lengths, no shared prefix
    assert w.concurrency == [1, 16, 64]


def test_seed_002_preset_prompt_is_about_1000_tokens_including_the_478_shared():
    w = Workload.model_validate({"preset": "seed-002"})
    assert w.shared_prefix_tokens == 478
    prompt = [n + w.shared_prefix_tokens for n in _draws(w, "input")]  # what the server is sent
    out = _draws(w, "output")
    assert statistics.mean(prompt) == pytest.approx(1000, abs=10)
    assert min(prompt) >= 700 and max(prompt) <= 1300
    assert length_mean(w.input_tokens) + w.shared_prefix_tokens == 1000
    assert length_range(w.input_tokens) == (222, 822)
    assert statistics.mean(out) == pytest.approx(560, abs=5)
    assert min(out) >= 380 and max(out) <= 740
    assert w.concurrency == [1, 2, 4, 8, 16, 32]
