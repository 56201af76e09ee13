"""The open-loop arrival schedule: a seeded Poisson process."""

import itertools
import statistics

from llmbench.loadgen.driver import poisson_offsets_s


def _first(rate, key, n):
    return list(itertools.islice(poisson_offsets_s(rate, key), n))


def test_same_key_same_arrivals_other_key_other_arrivals():
    assert _first(4.0, "0:0:4.0", 100) == _first(4.0, "0:0:4.0", 100)
    assert _first(4.0, "0:0:4.0", 100) != _first(4.0, "1:0:4.0", 100)


def test_gaps_are_exponential_with_mean_one_over_rate():
    offsets = _first(8.0, "7:0:8.0", 20000)
    gaps = [b - a for a, b in zip([0.0] + offsets, offsets)]
    assert all(g > 0 for g in gaps)
    mean = statistics.fmean(gaps)
    assert abs(mean - 1 / 8) < 0.01 * (1 / 8) * 3  # 20,000 draws: the mean within 3 %
    # an exponential's standard deviation equals its mean (coefficient of variation 1), unlike a
    # fixed-rate schedule (0)
    assert 0.95 < statistics.stdev(gaps) / mean < 1.05
    # memoryless: P(gap > mean) = e^-1
    assert abs(sum(g > mean for g in gaps) / len(gaps) - 0.3679) < 0.02
