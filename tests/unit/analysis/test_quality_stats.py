"""The quality statistics by hand: Wilson 95 % intervals, the detectable drop, the paired drop."""

import pytest

from llmbench.analysis import metrics


def test_wilson_interval_by_hand():
    # 31 of 60: p = 0.51667, z^2/n = 0.064025: centre (p + z^2/2n) / (1 + z^2/n) = 0.51566,
    # half z * sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n) = 1.96 * 0.066549 / 1.064025 = 0.12259
    low, high = metrics.wilson_interval(31, 60)
    assert low == pytest.approx(0.3931, abs=1e-4) and high == pytest.approx(0.6383, abs=1e-4)
    # 0 of 10 is not a zero-width interval, and stays inside [0, 1]
    low, high = metrics.wilson_interval(0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)
    assert metrics.wilson_interval(10, 10)[1] == pytest.approx(1.0) and metrics.wilson_interval(0, 0) is None


def test_detectable_drop_shrinks_with_the_square_root_of_n():
    assert metrics.detectable_drop(35) == pytest.approx(0.1656, abs=1e-4)
    assert metrics.detectable_drop(400) == pytest.approx(0.0490, abs=1e-4)
    assert metrics.detectable_drop(9604) == pytest.approx(0.0100, abs=1e-4)  # one point
    assert metrics.detectable_drop(0) is None


def test_paired_drop_by_hand():
    # 100 items: 80 both right, 10 only the baseline right (b), 2 only the target right (c), 8 both wrong.
    base = [True] * 80 + [True] * 10 + [False] * 2 + [False] * 8
    tgt = [True] * 80 + [False] * 10 + [True] * 2 + [False] * 8
    drop, low, high = metrics.paired_drop(base, tgt)
    # (10 - 2) / 100 = 0.08; se = sqrt(12 - 64/100) / 100 = 0.033705; 1.96 * se = 0.066061
    assert drop == pytest.approx(0.08)
    assert low == pytest.approx(0.013939, abs=1e-5) and high == pytest.approx(0.146061, abs=1e-5)
    same = metrics.paired_drop(base, base)
    assert same == (0.0, 0.0, 0.0)  # the same answers: no drop, no noise
    assert metrics.paired_drop([], []) is None
    with pytest.raises(ValueError, match="paired_drop"):
        metrics.paired_drop([True], [True, False])
