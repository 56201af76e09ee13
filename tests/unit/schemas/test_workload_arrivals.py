"""workload.arrivals and burstiness: open-loop only, and burstiness only as gamma's shape."""

import pytest
from pydantic import ValidationError

from llmbench.schemas.workload import Workload


def test_gamma_arrivals_take_a_burstiness():
    w = Workload(arrival_rates_rps=[2.0], arrivals="gamma", burstiness=0.5)
    assert (w.arrivals, w.burstiness) == ("gamma", 0.5)


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"arrivals": "gamma"}, "set arrival_rates_rps too"),
        ({"arrival_rates_rps": [1.0], "burstiness": 0.5}, "set arrivals: gamma"),
        ({"arrival_rates_rps": [1.0], "arrivals": "gamma", "burstiness": 0}, "greater than 0"),
    ],
)
def test_arrivals_that_cannot_apply_are_refused(fields, match):
    with pytest.raises(ValidationError, match=match):
        Workload(**fields)


def test_rate_shape_from_a_file_and_its_refusals(tmp_path):
    f = tmp_path / "rates.txt"
    f.write_text("1\n0.5\n2\n")
    w = Workload(arrival_rates_rps=[1.0], rate_shape={"file": str(f)})
    assert w.rate_shape.steps() == (60.0, (1.0, 0.5, 2.0))
    with pytest.raises(ValidationError, match="set arrival_rates_rps too"):
        Workload(rate_shape={"ramp_s": 30})
    with pytest.raises(ValidationError, match="the last per-minute multiplier"):
        Workload(arrival_rates_rps=[1.0], rate_shape={"per_minute": [1, 0]})
    with pytest.raises(ValidationError, match="give one of per_minute, file or ramp_s"):
        Workload(arrival_rates_rps=[1.0], rate_shape={"ramp_s": 30, "per_minute": [1]})
