"""Correctness (llmbench.quality): suite and target scores, drops against a baseline, and their
intervals (Wilson, paired)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


def suite_score(passed: int, n: int) -> float | None:
    """A quality suite's score: the fraction of its graded answers (items x runs) that passed."""
    return passed / n if n else None


def quality_score(suite_scores: list[float]) -> float | None:
    """A target's quality score: the mean of its scored suites (unsupported suites left out)."""
    return sum(suite_scores) / len(suite_scores) if suite_scores else None


def score_drop(baseline_score: float | None, score: float | None) -> float | None:
    """How far a suite's score falls below the baseline target's (negative: above it)."""
    return None if baseline_score is None or score is None else baseline_score - score


Z_95 = 1.959963984540054  # the two-sided 95 % normal quantile


def wilson_interval(passed: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """A pass rate's 95 % Wilson score interval: unlike p +- z*sqrt(p(1-p)/n) it stays inside
    [0, 1] and is not zero-width at 0/n or n/n, which small suites hit often. None when n is 0."""
    if n <= 0:
        return None
    p = passed / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def detectable_drop(n: int, z: float = Z_95) -> float | None:
    """The smallest score drop a suite of n graded answers can tell from noise at 95 %: the
    worst-case (p = 0.5) half-width of the interval, z * 0.5 / sqrt(n). A one-point drop needs
    n of about 9,600; 35 answers see only drops above ~17 points."""
    return None if n <= 0 else z * 0.5 / n**0.5


def paired_drop(baseline: Sequence[bool], target: Sequence[bool], z: float = Z_95) -> tuple[float, float, float] | None:
    """The baseline's pass rate minus the target's on the SAME items (paired), with its 95 %
    interval: (drop, low, high). Pairing removes the items' own difficulty from the noise: only
    the discordant items count (b: baseline right and target wrong; c: the reverse); drop =
    (b - c) / n, standard error sqrt(b + c - (b - c)^2 / n) / n (the Wald interval of a paired
    difference). None without paired items."""
    if len(baseline) != len(target):
        raise ValueError(f"paired_drop: {len(baseline)} baseline answers but {len(target)} target answers")
    n = len(baseline)
    if n == 0:
        return None
    b = sum(1 for x, y in zip(baseline, target, strict=True) if x and not y)
    c = sum(1 for x, y in zip(baseline, target, strict=True) if y and not x)
    drop = (b - c) / n
    se = max(0.0, b + c - (b - c) ** 2 / n) ** 0.5 / n
    return drop, drop - z * se, drop + z * se
