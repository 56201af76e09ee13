"""The offered load held against the schedule (metrics.schedule_output_tokens_per_s,
schedule_deficit_pct, turnaround_ms, offered_load) against hand-computed cases."""

from types import SimpleNamespace

import pytest

from llmbench.analysis import metrics

MS = metrics.NS_PER_MS


def req(worker, send_ms, end_ms, repeat=0):
    return SimpleNamespace(worker=worker, send_ns=int(send_ms * MS), end_ns=int(end_ms * MS), repeat=repeat)


def test_schedule_throughput_by_hand():
    # 256 streams, TTFT 100 ms, ITL 10 ms, 256 tokens: a request lasts 100 + 255 * 10 = 2650 ms.
    assert metrics.schedule_output_tokens_per_s(256, 100, 10, 256) == pytest.approx(256 * 256 / 2.65)
    assert metrics.schedule_output_tokens_per_s(1, 100, 10, 1) == pytest.approx(10.0)  # one token: TTFT only
    assert metrics.schedule_output_tokens_per_s(4, 0, 20, 11) == pytest.approx(4 * 11 / 0.2)
    with pytest.raises(ValueError):
        metrics.schedule_output_tokens_per_s(0, 100, 10, 256)
    with pytest.raises(ValueError):
        metrics.schedule_output_tokens_per_s(1, 0, 0, 5)


def test_deficit_is_the_shortfall_in_percent_of_the_ideal():
    assert metrics.schedule_deficit_pct(990.0, 1000.0) == pytest.approx(1.0)
    assert metrics.schedule_deficit_pct(1010.0, 1000.0) == pytest.approx(-1.0)
    assert metrics.schedule_deficit_pct(None, 1000.0) is None


def test_turnaround_is_per_stream_from_an_end_to_the_next_send():
    records = [
        req(0, 200, 300), req(0, 0, 100),          # stream 0, out of order: gap 200 - 100 = 100
        req(0, 305, 400),                          # gap 5
        req(1, 0, 150), req(1, 151.5, 250),        # stream 1: gap 1.5
        req(1, 0, 90, repeat=1), req(1, 92, 180, repeat=1),  # same worker, another repeat: gap 2
        req(-1, 0, 50), req(-1, 60, 70),           # open loop: no stream, no turnaround
    ]
    assert sorted(metrics.turnaround_ms(records)) == pytest.approx([1.5, 2.0, 5.0, 100.0])
    assert metrics.turnaround_ms([req(0, 0, 10)]) == []


def test_offered_load_row_by_hand():
    records = [req(0, 0, 100), req(0, 102, 200), req(0, 210, 300), req(1, 0, 100), req(1, 101, 200)]
    row = metrics.offered_load(records, 2, 10, 10, 10, achieved_output_tokens_per_s=180.0, achieved_concurrency=1.9)
    ideal = 2 * 10 / 0.1  # 200 tok/s
    assert row["schedule_output_tokens_per_s"] == pytest.approx(ideal)
    assert row["schedule_deficit_pct"] == pytest.approx(10.0)
    assert row["achieved_concurrency"] == 1.9 and row["turnarounds"] == 3
    assert row["turnaround_ms_p50"] == pytest.approx(2.0)          # gaps 1, 2, 10
    assert row["turnaround_ms_p99"] == pytest.approx(2 + 0.98 * 8)  # linear between 2 and 10
    assert row["turnaround_ms_max"] == pytest.approx(10.0)
    empty = metrics.offered_load([req(0, 0, 10)], 1, 100, 10, 256, None)
    assert empty["turnaround_ms_p50"] is None and empty["schedule_deficit_pct"] is None
