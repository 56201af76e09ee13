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
