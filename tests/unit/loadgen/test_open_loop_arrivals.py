"""The open-loop arrival schedules: a seeded Poisson process, gamma and constant gaps, a rate shape;
and the strategy classes that pace a level (schedules.STRATEGIES)."""

import itertools
import statistics

import pytest

from llmbench.loadgen.schedules import poisson_offsets_s


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
    from llmbench.loadgen.schedules import arrival_offsets_s

    offsets = list(itertools.islice(arrival_offsets_s(rate, key, kind, burstiness), n))
    return [b - a for a, b in zip([0.0] + offsets, offsets, strict=False)]


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


def test_a_per_minute_shape_speeds_up_idles_and_holds_its_last_multiplier():
    from llmbench.loadgen.schedules import arrival_offsets_s, shaped_offsets_s

    base = list(itertools.islice(arrival_offsets_s(1.0, "k", "constant"), 200))  # 1, 2, ... 200 s
    shaped = list(shaped_offsets_s(iter(base), 60.0, (1.0, 0.0, 2.0)))
    # minute 1 at the base rate (t = u); minute 2 idle; then twice as fast: t = 120 + (u - 60) / 2
    assert shaped[:60] == base[:60]
    assert shaped[60] == 120.5 and shaped[119] == 150.0 and shaped[199] == 190.0
    assert not any(60 < t < 120 for t in shaped)  # nothing sent in the idle minute


def test_a_ramp_rises_from_its_fraction_to_the_full_rate():
    from llmbench.schemas.workload import RateShape

    step_s, mult = RateShape(ramp_s=10, ramp_from=0.2).steps()
    assert step_s == 1.0 and len(mult) == 11 and mult[-1] == 1.0
    assert abs(mult[0] - 0.24) < 1e-9 and all(a < b for a, b in zip(mult, mult[1:], strict=False))
    # over the ramp the shape delivers its mean multiplier (0.6) of the base rate's arrivals
    from llmbench.loadgen.schedules import arrival_offsets_s, shaped_offsets_s

    times = list(itertools.islice(shaped_offsets_s(arrival_offsets_s(100.0, "r", "constant"), step_s, mult), 2000))
    in_ramp = sum(t < 10 for t in times)
    assert abs(in_ramp - 0.6 * 100 * 10) <= 2


def test_each_pacing_is_one_registered_strategy_and_a_workloads_kinds_are_its_open_loops():
    import typing

    from llmbench.loadgen.schedules import STRATEGIES, OpenLoop
    from llmbench.schemas.workload import Workload

    assert set(STRATEGIES) == {"closed", "poisson", "gamma", "constant", "shaped", "trace"}
    allowed = set(typing.get_args(Workload.model_fields["arrivals"].annotation))
    assert allowed == {name for name, cls in STRATEGIES.items() if issubclass(cls, OpenLoop)}


@pytest.mark.parametrize("kind, burstiness, shape", [
    ("poisson", 1.0, None), ("gamma", 0.5, None), ("constant", 1.0, None), ("gamma", 2.0, (30.0, (1.0, 0.0, 3.0)))])
def test_a_workloads_open_loop_strategy_draws_the_seeded_arrivals(kind, burstiness, shape):
    """open_loop keys the level as the sweep always has (seed:first request:rate), so a config's
    arrival times do not change with the strategy classes: the same draws as the offset functions."""
    from llmbench.loadgen.schedules import RateShape, arrival_offsets_s, open_loop, shaped_offsets_s

    strategy = open_loop(kind, 4.0, 16, 7, 300, burstiness, shape)
    assert (strategy.streams, strategy.arrival_rate_rps, strategy.closed) == (16, 4.0, False)
    want = arrival_offsets_s(4.0, "7:300:4.0", kind, burstiness)
    if shape is not None:
        assert isinstance(strategy, RateShape)
        want = shaped_offsets_s(want, *shape)
    got = strategy.arrivals()
    assert got is not None
    assert list(itertools.islice(got, 500)) == list(itertools.islice(want, 500))


def test_an_unknown_open_loop_kind_is_refused_in_one_line():
    from llmbench.loadgen.schedules import open_loop

    with pytest.raises(ValueError, match="arrivals: unknown 'closed'; allowed: poisson, gamma, constant"):
        open_loop("closed", 1.0, 1, 0, 0)
