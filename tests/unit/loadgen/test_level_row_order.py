"""A level's row is a function of its records, not of the order they arrive in: the sweep holds
them in completion order, a reprocess reads them back by request number, and a reprocessed run
must publish the very figures the sweep published (a mean summed in another order moved a last
bit: CI's test_dag_run)."""

import dataclasses
import random

from llmbench.loadgen.sweep import level_row
from llmbench.schemas.records import RequestRecord

from tests.unit.results.test_path_comparison import _records


def _varied(n: int, seed: int) -> list[RequestRecord]:
    rng = random.Random(seed)
    out = []
    for r in _records(n, 120.0, 900.0):
        itl = [rng.uniform(5.0, 40.0) for _ in range(99)]
        out.append(dataclasses.replace(r, itl_ms=itl, ttft_ms=rng.uniform(80.0, 300.0), e2e_ms=rng.uniform(800, 2000),
                                       tpot_ms=sum(itl) / len(itl), send_lag_ms=rng.uniform(0.0, 3.0)))
    return out


def test_a_levels_figures_do_not_depend_on_the_order_of_its_records():
    recs = _varied(24, 7)
    shuffled = recs[:]
    random.Random(1).shuffle(shuffled)
    assert [r.request_index for r in shuffled] != [r.request_index for r in recs]
    a, b = level_row(recs, 24, None, None, 1.7, 1), level_row(shuffled, 24, None, None, 1.7, 1)
    assert {k: str(v) for k, v in a.items()} == {k: str(v) for k, v in b.items()}
