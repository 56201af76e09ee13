"""The capacity search against the real llama-server: its probes are measured open-loop levels,
recorded with the sweep's (requests.jsonl, requests.parquet, levels.parquet with their probe
number), held out of validation, and its verdicts are the levels' own."""

import pandas as pd
import pytest

from llmbench.analysis import metrics
from llmbench.backends.local.backend import LocalBackend
from llmbench.errors import InputError
from llmbench.loadgen.capacity import PROBE_INDEX_BASE, append_probe_levels, run_capacity_search
from llmbench.loadgen.sweep import read_jsonl_records, run_sweep
from llmbench.results.validation import validate_results
from llmbench.schemas.capacity import CapacitySearch
from llmbench.schemas.slo import Objective, Slo
from llmbench.schemas.workload import Workload

WORKLOAD = Workload(input_tokens=16, output_tokens=8, concurrency=[1], requests_per_level=2, warmup_requests=0,
                    max_in_flight=8, request_timeout_s=60, seed=7)  # fmt: skip
GENEROUS = Slo(objectives=[Objective(metric="e2e", percentile=50, max_ms=60_000)])
IMPOSSIBLE = Slo(objectives=[Objective(metric="ttft", percentile=50, max_ms=0.001)])


def test_probes_are_levels_and_the_verdicts_are_theirs(local_server, tmp_path):
    endpoint = LocalBackend().endpoint(local_server)
    run_sweep(endpoint, WORKLOAD, tmp_path, slo=GENEROUS)
    # 6 s: the common arrival pattern's first three fall within it at 0.5 req/s (3.1, 4.0, 5.9 s)
    cfg = CapacitySearch(start_rps=0.5, max_probes=2, probe_duration_s=6)
    result, rows = run_capacity_search(endpoint, WORKLOAD, tmp_path, GENEROUS, cfg, 0.5)
    rates = [p.rate_rps for p in result.probes]
    if rows[0]["client_saturated"]:  # a loaded machine's client fell behind: the search stops there
        assert rates == [0.5] and result.status == "client_saturated"
    else:  # both probes meet a 60 s median: every probe passed, so no capacity is claimed
        assert rates == [0.5, 1.0] and result.bracket_pass_rps == 1.0
        assert result.status == ("client_saturated" if rows[1]["client_saturated"] else "above_highest_probe")
    assert result.capacity_rps is None
    assert [r["capacity_probe"] for r in rows] == list(range(1, len(rates) + 1))
    assert [metrics.level_meets_slo(r, GENEROUS, 0.5) for r in rows] == [p.passed for p in result.probes]
    append_probe_levels(tmp_path, rows)
    levels = pd.read_parquet(tmp_path / "levels.parquet")
    assert levels["arrival_rate_rps"].tolist() == [0.0, *rates]
    assert levels["capacity_probe"].isna().tolist() == [True] + [False] * len(rates)
    records, _ = read_jsonl_records(tmp_path / "requests.jsonl")
    probe_records = [r for r in records if r.request_index >= PROBE_INDEX_BASE]
    assert len(probe_records) == sum(r["requests_attempted"] for r in rows) > 0
    assert len(pd.read_parquet(tmp_path / "requests.parquet")) == len(records)
    # the sweep's one level is validated; the probes are not held to its bounds
    outcome = validate_results(tmp_path / "requests.parquet", tmp_path / "levels.parquet", [1], 0.5,
                               tmp_path / "validation.json")  # fmt: skip
    assert outcome["validation_passed"], outcome["failures"]


def test_an_slo_no_probe_meets_is_below_the_lowest(local_server, tmp_path):
    endpoint = LocalBackend().endpoint(local_server)
    cfg = CapacitySearch(start_rps=1, max_probes=2, probe_duration_s=7)  # 0.5 req/s: arrivals at 3.1, 4.0, 5.9 s
    result, rows = run_capacity_search(endpoint, WORKLOAD, tmp_path, IMPOSSIBLE, cfg, 0.5)
    assert result.capacity_rps is None and not any(r["slo_latency_met"] for r in rows)
    if rows[0]["client_saturated"]:  # a loaded machine's client fell behind: the search stops there
        assert result.status == "client_saturated" and len(result.probes) == 1
        return
    assert [p.rate_rps for p in result.probes] == [1, 0.5]  # shrinks after a fail
    assert result.status == "below_lowest_probe" and result.bracket_fail_rps == 0.5


def test_a_probe_that_sent_nothing_is_refused_not_judged(local_server, tmp_path):
    endpoint = LocalBackend().endpoint(local_server)
    # the common pattern's first arrival at 0.5 req/s is 3.1 s in: a 1 s probe sends nothing
    cfg = CapacitySearch(start_rps=0.5, max_probes=2, probe_duration_s=1)
    with pytest.raises(InputError, match="sent no request in 1 s: lengthen capacity.probe_duration_s"):
        run_capacity_search(endpoint, WORKLOAD, tmp_path, GENEROUS, cfg, 0.5)


def test_growing_probes_may_be_shorter_than_the_bisections(tmp_path):
    """growth_probe_duration_s: before the first failure a probe lasts that long; after it (here
    the shrink from a failing first probe) cfg.probe_duration_s. Judged by when the requests were
    due (scheduled_ms): a probe sends nothing due after its duration."""
    from llmbench.backends.base import Endpoint
    from llmbench.testing._serve import ServerProcess

    cfg = CapacitySearch(start_rps=4, max_probes=2, probe_duration_s=3, growth_probe_duration_s=1)
    with ServerProcess("llmbench.testing.calibration", "--ttft-ms", "20", "--itl-ms", "2") as server:
        endpoint = Endpoint(server.url + "/v1/chat/completions", keep_alive=True)
        result, _ = run_capacity_search(endpoint, WORKLOAD, tmp_path, IMPOSSIBLE, cfg, 0.5)
    assert [p.rate_rps for p in result.probes] == [4, 2] and not any(p.passed for p in result.probes)
    records, _ = read_jsonl_records(tmp_path / "requests.jsonl")
    due_ms = {k: [r.scheduled_ms for r in records if r.arrival_rate_rps == k] for k in (4, 2)}
    assert due_ms[4] and max(due_ms[4]) < 1000  # growing: 1 s
    assert max(due_ms[2]) > 1000 and max(due_ms[2]) < 3000  # after the first failure: 3 s
