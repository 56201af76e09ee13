"""The seeds' arithmetic, reproduced."""

import pytest

from llmbench.analysis import pricing


def test_seed_001_dollars_per_million():
    # SageMaker/EC2 g6.xlarge at $0.8048/h sustaining 131.9 output tok/s -> $1.69 per million.
    assert pricing.usd_per_million_tokens(0.8048, 131.9) == pytest.approx(1.69, abs=0.005)


def test_seed_001_break_even_against_nova_micro():
    # Nova Micro $0.035 in / $0.14 out per million, 5 input tokens per output token: ~710 tok/s.
    tps = pricing.break_even_output_tokens_per_s(0.8048, 0.035, 0.14, 5)
    assert tps == pytest.approx(710, abs=1)


def test_seed_000_implied_hourly_price():
    # G7 at 5,880 tok/s and $0.66 per million implies ~$13.97/h.
    implied = 0.66 * 5880 * 3600 / 1e6
    assert implied == pytest.approx(13.97, abs=0.01)
    assert pricing.usd_per_million_tokens(implied, 5880) == pytest.approx(0.66)


def test_monthly_and_benchmark_cost():
    assert pricing.monthly_usd(13.12) == pytest.approx(9577.6)
    assert pricing.benchmark_cost_usd(13.12, 1800) == pytest.approx(6.56)
    assert pricing.benchmark_cost_usd(13.12, None) is None


def test_no_throughput_has_no_price():
    assert pricing.usd_per_million_tokens(1.0, 0) is None
    assert pricing.usd_per_million_tokens(1.0, None) is None
