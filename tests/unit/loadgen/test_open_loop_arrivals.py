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


def _gaps(kind, rate, burstiness, n, key="3:0:gamma"):
    from llmbench.loadgen.driver import arrival_offsets_s

    offsets = list(itertools.islice(arrival_offsets_s(rate, key, kind, burstiness), n))
    return [b - a for a, b in zip([0.0] + offsets, offsets)]


def _mean_and_cv(gaps):
    # by hand: mean = sum / n; CV = sqrt(sum of squared deviations / (n - 1)) / mean
    n = len(gaps)
    mean = sum(gaps) / n
    var = sum((g - mean) ** 2 for g in gaps) / (n - 1)
    return mean, var**0.5 / mean


def test_gamma_gaps_keep_the_mean_and_their_cv_is_one_over_root_burstiness():
    # shape k, scale 1 / (rate k): mean k * 1 / (rate k) = 1 / rate; sd sqrt(k) / (rate k); CV 1 / sqrt(k)
    for burstiness, want_cv in ((0.25, 2.0), (1.0, 1.0), (4.0, 0.5)):
        mean, cv = _mean_and_cv(_gaps("gamma", 10.0, burstiness, 40000))
        assert abs(mean - 0.1) < 0.1 * 0.04, (burstiness, mean)
        assert abs(cv - want_cv) < want_cv * 0.05, (burstiness, cv)


def test_burstier_arrivals_bunch_up_and_constant_ones_do_not():
    bursty = _gaps("gamma", 10.0, 0.25, 20000)
    # burstier: far more gaps below a tenth of the mean than an exponential's 1 - e^-0.1 = 9.5 %
    assert sum(g < 0.01 for g in bursty) / len(bursty) > 0.3
    constant = _gaps("constant", 10.0, 1.0, 100)
    mean, cv = _mean_and_cv(constant)
    assert abs(mean - 0.1) < 1e-9 and cv < 1e-6
