"""The cost model of a traffic profile, against figures worked out by hand."""

import math

import pytest
from pydantic import ValidationError

from llmbench.analysis import costmodel, pricing
from llmbench.errors import InputError
from llmbench.schemas.traffic import Policy, TrafficProfile

ALWAYS_ON_1 = Policy(kind="always_on", instances=1)


def test_flat_24x7_reproduces_seed_001_break_even_exactly():
    # Seed 001: g6.xlarge at $0.8048/h against Nova Micro ($0.035 in / $0.14 out per million, 5
    # input tokens per output token) breaks even at ~710 output tok/s sustained 24x7. The same
    # question as a flat profile: one always-on instance (whose capacity carries the load) against
    # the per-token path, the daily volume at which the two months cost the same.
    profile = TrafficProfile(requests_per_hour=(1000.0,) * 24, input_tokens=435, output_tokens=87, headroom=1)
    g6 = costmodel.HourlyPath("g6", 0.8048, capacity_rps=100.0, policy=ALWAYS_ON_1)
    nova = costmodel.PerTokenPath("nova-micro", 0.035, 0.14)
    (daily,) = costmodel.break_even_daily_output_tokens(profile, g6, nova, 1e6, 1e9)
    want = pricing.break_even_output_tokens_per_s(0.8048, 0.035, 0.14, 5)
    assert daily / 86400 == pytest.approx(want, rel=1e-9)
    assert round(daily / 86400) == 710
    # at that volume both months cost the same: 730 h x $0.8048
    (pt,) = costmodel.break_even_curve(profile, g6, nova, [daily])
    assert pt.hourly_usd == pytest.approx(730 * 0.8048)
    assert pt.per_token_usd == pytest.approx(730 * 0.8048, rel=1e-9)


# A path at $1/h serving 1 request/s at the SLO (3,600 an hour, headroom 1) against a per-token path
# at $0.20 / $4 per million with 500 input and 100 output tokens: $0.0005 a request.
HOURLY = costmodel.HourlyPath(
    "hourly",
    1.0,
    capacity_rps=1.0,
    policy=Policy(kind="autoscaling", min_instances=1, max_instances=4, scale_up_delay_s=0),
)
PER_TOKEN = costmodel.PerTokenPath("per-token", 0.20, 4.0)


def test_diurnal_profile_flips_the_answer_by_hand():
    flat = TrafficProfile(requests_per_hour=(3000.0,) * 24, input_tokens=500, output_tokens=100, headroom=1)
    # flat: hourly 730 h x $1 = $730; per token 3000 x 730 x $0.0005 = $1095 -> hourly wins by $365
    c = costmodel.compare_paths(flat, [HOURLY], [PER_TOKEN])
    assert c.cheapest is not None and c.cheapest.path == "hourly"
    assert c.cheapest.monthly_usd == pytest.approx(730.0)
    assert c.runner_up is not None and c.runner_up.monthly_usd == pytest.approx(1095.0)
    assert c.margin_usd == pytest.approx(365.0)
    assert c.cheapest.mean_utilisation == pytest.approx(3000 / 3600)
    # the same peak for 8 hours a day, none otherwise: the hourly path keeps its one instance
    # ($730); per token: 3000 x 8 h x (730 / 24) days x $0.0005 = $365 -> per token wins by $365
    diurnal = TrafficProfile(peak_requests_per_hour=3000, daily_shape=(1.0,) * 8 + (0.0,) * 16,
                             input_tokens=500, output_tokens=100, headroom=1)  # fmt: skip
    c = costmodel.compare_paths(diurnal, [HOURLY], [PER_TOKEN])
    assert c.cheapest is not None and c.cheapest.path == "per-token"
    assert c.cheapest.monthly_usd == pytest.approx(365.0)
    assert c.cheapest.usd_per_m_output_paid == pytest.approx(5.0)  # 4 + 5 x 0.2
    hourly = c.runner_up
    assert hourly is not None and hourly.monthly_usd == pytest.approx(730.0)
    assert hourly.mean_utilisation == pytest.approx(3000 * 8 / (3600 * 24))
    assert hourly.instance_hours == pytest.approx(730.0)


def test_scale_to_zero_pays_only_busy_hours_and_misses_the_slo_while_scaling_up():
    diurnal = TrafficProfile(peak_requests_per_hour=3000, daily_shape=(1.0,) * 8 + (0.0,) * 16,
                             input_tokens=500, output_tokens=100, headroom=1)  # fmt: skip
    to_zero = costmodel.HourlyPath("hourly", 1.0, 1.0, Policy(kind="autoscaling", min_instances=0, max_instances=4,
                                                              scale_up_delay_s=300), time_to_ready_s=600,
                                   scale_to_zero_allowed=True)  # fmt: skip
    cost = costmodel.cost_hourly_path(diurnal, to_zero)
    # 8 instance-hours a day: 8 x 730 / 24 = 243.33 h, $243.33; one scale-up a day from zero, each
    # (300 + 600) s = 0.25 h short of the SLO: 0.25 x 730 / 24 = 7.60 h a month
    assert cost.instance_hours == pytest.approx(8 * 730 / 24)
    assert cost.monthly_usd == pytest.approx(8 * 730 / 24)
    assert cost.scale_up_miss_hours == pytest.approx(0.25 * 730 / 24)
    assert cost.mean_utilisation == pytest.approx(3000 / 3600)
    assert cost.meets_slo
    strict = diurnal.model_copy(update={"max_scale_up_miss_hours": 5.0})
    assert not costmodel.cost_hourly_path(strict, to_zero).meets_slo
    # where the platform cannot scale to zero, the policy is refused in one line
    with pytest.raises(InputError, match="scale to zero"):
        costmodel.cost_hourly_path(diurnal, costmodel.HourlyPath("local", 1.0, 1.0, to_zero.policy))


def test_instances_follow_the_load_with_headroom_and_growth():
    assert costmodel.instances_needed(0, 1.0, 0.8) == 0
    assert costmodel.instances_needed(2880, 1.0, 0.8) == 1  # exactly 0.8 of one instance
    assert costmodel.instances_needed(2881, 1.0, 0.8) == 2
    grow = TrafficProfile(requests_per_hour=(7200.0,) * 24, input_tokens=1, output_tokens=1, headroom=1,
                          monthly_growth=0.5, policy=Policy(kind="always_on", instances=2))  # fmt: skip
    path = costmodel.HourlyPath("h", 1.0, 1.0, grow.policy)
    assert costmodel.cost_hourly_path(grow, path, month=1).meets_slo
    later = costmodel.cost_hourly_path(grow, path, month=2)  # 10,800 an hour needs 3 > 2
    assert not later.meets_slo and later.capacity_miss_hours == pytest.approx(730.0)


def test_no_capacity_at_the_slo_gets_no_cost_and_never_wins():
    profile = TrafficProfile(requests_per_hour=(10.0,) * 24, input_tokens=1, output_tokens=1)
    none = costmodel.HourlyPath("slow", 0.01, None, ALWAYS_ON_1)
    c = costmodel.compare_paths(profile, [none], [PER_TOKEN])
    assert c.cheapest is not None and c.cheapest.path == "per-token" and c.runner_up is None
    slow = next(x for x in c.costs if x.path == "slow")
    assert slow.monthly_usd is None and not slow.meets_slo and "below the lowest probe" in (slow.note or "")


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"requests_per_hour": [1.0] * 23 + [-1.0]}, "must be finite and >= 0"),
        ({"requests_per_hour": [1.0] * 23 + [math.nan]}, "must be finite"),
        ({"requests_per_hour": [1.0] * 23 + [math.inf]}, "must be finite"),
        ({"requests_per_hour": [1.0] * 5}, "give 24"),
        ({"peak_requests_per_hour": -3.0, "daily_shape": [1.0] * 24}, "must be >= 0"),
        ({"peak_requests_per_hour": 3.0}, "needs daily_shape"),
        ({"requests_per_hour": [1.0] * 24, "monthly_growth": math.inf}, "not a finite number"),
    ],
)
def test_bad_profiles_are_refused(bad, match):
    with pytest.raises(ValidationError, match=match):
        TrafficProfile(input_tokens=1, output_tokens=1, **bad)


def test_bad_numbers_are_refused_in_one_line():
    with pytest.raises(InputError, match="capacity_rps is 0"):
        costmodel.instances_needed(1.0, 0.0, 0.8)
    with pytest.raises(InputError, match="requests_per_hour is nan"):
        costmodel.instances_needed(math.nan, 1.0, 0.8)
