"""The capacity search on simulated targets whose latency curve is known, so the capacity is too."""

import math

import pytest
from pydantic import ValidationError

from llmbench.loadgen.capacity import Probe, search, sweep_rates
from llmbench.schemas.capacity import CapacitySearch


class Simulated:
    """A target whose p90 TTFT at arrival rate r is base / (1 - r / mu) (an M/M/1-like curve): the
    SLO `ttft p90 <= slo_ms` holds up to r* = mu x (1 - base / slo_ms)."""

    def __init__(self, mu=10.0, base_ms=100.0, slo_ms=400.0, saturate_above=None):
        self.mu, self.base_ms, self.slo_ms, self.saturate_above = mu, base_ms, slo_ms, saturate_above
        self.rates = []

    @property
    def capacity(self):
        return self.mu * (1 - self.base_ms / self.slo_ms)

    def __call__(self, rate):
        self.rates.append(rate)
        ttft = self.base_ms / (1 - rate / self.mu) if rate < self.mu else math.inf
        saturated = self.saturate_above is not None and rate > self.saturate_above
        return Probe(rate, ttft <= self.slo_ms, saturated, requests_per_s=min(rate, self.mu),
                     output_tokens_per_s=100 * min(rate, self.mu), seconds=20)  # fmt: skip


def probes_bound(start, capacity, growth, tol):
    """Growth steps to pass the capacity, then bisections to shrink the bracket (at most
    capacity x (growth - 1) wide) to tol x capacity: the most probes the search may need."""
    grow = math.ceil(math.log(capacity / start, growth)) + 1
    bisect = math.ceil(math.log2((growth - 1) / tol)) + 1
    return grow + bisect


@pytest.mark.parametrize("start, tol", [(0.5, 0.1), (0.1, 0.05), (6.0, 0.02), (7.4, 0.1)])
def test_finds_the_known_capacity_within_tolerance_in_few_probes(start, tol):
    target = Simulated()  # capacity 7.5 req/s
    cfg = CapacitySearch(start_rps=start, rel_tolerance=tol, max_probes=30)
    result = search(target, cfg)
    assert result.status == "found"
    assert result.capacity_rps <= target.capacity  # a measured pass, never above the true capacity
    assert (target.capacity - result.capacity_rps) / target.capacity <= tol
    assert result.bracket_fail_rps > target.capacity
    assert (result.bracket_fail_rps - result.bracket_pass_rps) / result.bracket_pass_rps <= tol
    if start <= target.capacity:
        assert len(result.probes) <= probes_bound(start, target.capacity, 2.0, tol)
    assert result.capacity_output_tokens_per_s == pytest.approx(100 * result.capacity_rps)


def test_first_probe_failing_shrinks_until_one_passes():
    target = Simulated()
    result = search(target, CapacitySearch(start_rps=40, rel_tolerance=0.1, max_probes=20))
    assert result.status == "found" and target.rates[:3] == [40, 20, 10]
    assert (target.capacity - result.capacity_rps) / target.capacity <= 0.1


def test_budget_spent_before_a_fail_is_above_the_highest_probe_not_a_number():
    target = Simulated()
    result = search(target, CapacitySearch(start_rps=0.1, max_probes=3))
    assert target.rates == [0.1, 0.2, 0.4]
    assert result.status == "above_highest_probe" and result.capacity_rps is None
    assert result.bracket_pass_rps == 0.4 and result.bracket_fail_rps is None
    assert "3 probes" in result.note


def test_every_probe_failing_is_below_the_lowest():
    target = Simulated(base_ms=500)  # misses the SLO at any rate
    result = search(target, CapacitySearch(start_rps=1, max_probes=4))
    assert result.status == "below_lowest_probe" and result.capacity_rps is None
    assert result.bracket_pass_rps is None and result.bracket_fail_rps == 0.125


def test_never_exceeds_the_targets_limit():
    target = Simulated()
    result = search(target, CapacitySearch(start_rps=1, max_rps=3, max_probes=10))
    assert max(target.rates) == 3 and result.status == "above_highest_probe"
    assert "limit of 3 req/s" in result.note


def test_stops_at_the_first_saturated_probe():
    target = Simulated(saturate_above=3)
    result = search(target, CapacitySearch(start_rps=1, max_probes=10))
    assert target.rates == [1, 2, 4] and result.status == "client_saturated"
    assert result.capacity_rps is None and result.bracket_pass_rps == 2


def test_minutes_budget():
    now = [0.0]
    target = Simulated()

    def probe(rate):  # each probe measures for 50 s
        now[0] += 50
        return target(rate)

    result = search(probe, CapacitySearch(start_rps=0.1, max_minutes=2, max_probes=50), clock=lambda: now[0])
    assert len(result.probes) == 3 and "2 minutes" in result.note  # at 0, 50 and 100 s; at 150 s it stops
    assert result.search_s == 150


@pytest.mark.parametrize(
    "bad",
    [
        {"max_probes": 0},
        {"start_rps": 0},
        {"rel_tolerance": 0},
        {"growth": 1},
        {"max_minutes": 0},
        {"start_rps": 5, "max_rps": 2},
        {"start_rps": math.inf},
    ],  # fmt: skip
)
def test_bad_search_settings_are_refused(bad):
    with pytest.raises(ValidationError):
        CapacitySearch(**bad)


def test_a_sweep_of_given_rates_reads_the_capacity_below_the_first_failing_rate():
    target = Simulated()  # capacity 7.5 req/s
    rates = [1.0 * k for k in range(1, 13)]
    result = sweep_rates(target, rates, 0.1)
    assert target.rates == rates  # every rate, in order: no search
    assert result.status == "found" and result.capacity_rps == 7.0 and result.bracket_fail_rps == 8.0
    # a pass above the first failure (a noisy curve) is not the capacity
    noisy = [Probe(1.0, True, False), Probe(2.0, False, False), Probe(3.0, True, False)]
    read = sweep_rates(dict(zip((1.0, 2.0, 3.0), noisy, strict=True)).__getitem__, [1.0, 2.0, 3.0], 0.1)
    assert read.capacity_rps == 1.0 and read.bracket_fail_rps == 2.0
    assert sweep_rates(target, [1.0, 2.0], 0.1).status == "above_highest_probe"
    assert sweep_rates(target, [8.0, 9.0], 0.1).capacity_rps is None
