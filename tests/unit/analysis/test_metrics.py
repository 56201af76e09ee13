"""Metric definitions against hand-computed cases."""

import math

import pytest

from llmbench.analysis import metrics
from llmbench.schemas.records import RequestRecord

MS = metrics.NS_PER_MS


def rec(send_ms, content_ms, end_ms, output_tokens, ok=True, kind=None):
    t = metrics.request_timings(int(send_ms * MS), [int(c * MS) for c in content_ms], int(end_ms * MS), output_tokens)
    return RequestRecord(
        concurrency=1, request_index=0, worker=0, ok=ok, error_kind=kind, error_detail=None, http_status=200,
        send_ns=int(send_ms * MS), first_content_ns=int(content_ms[0] * MS) if content_ms else None,
        end_ns=int(end_ms * MS), send_lag_ms=0.5, ttft_ms=t["ttft_ms"], e2e_ms=t["e2e_ms"], tpot_ms=t["tpot_ms"],
        itl_ms=t["itl_ms"], content_chunks=len(content_ms), output_tokens=output_tokens, output_tokens_source="usage",
        output_tokens_counted=len(content_ms), input_tokens=10 if ok else None, finish_reason="length" if ok else None,
        repeat=0, arrival_rate_rps=0.0, send_retried=False,
    )


def test_request_timings_by_hand():
    t = metrics.request_timings(0, [100 * MS, 110 * MS, 130 * MS], 140 * MS, 3)
    assert t["ttft_ms"] == 100
    assert t["itl_ms"] == [10, 20]
    assert t["e2e_ms"] == 140
    assert t["tpot_ms"] == (140 - 100) / (3 - 1)


def test_request_timings_single_token_and_no_content():
    assert metrics.request_timings(0, [5 * MS], 6 * MS, 1)["tpot_ms"] is None
    t = metrics.request_timings(0, [], 7 * MS, 0)
    assert t["ttft_ms"] is None and t["itl_ms"] == [] and t["e2e_ms"] == 7


def test_distribution_linear_percentiles():
    d = metrics.distribution([4, 1, 3, 2, None], "x_ms")
    assert d["x_ms_p50"] == 2.5
    assert d["x_ms_p90"] == pytest.approx(3.7)  # rank 0.9*3 = 2.7 between 3 and 4
    assert d["x_ms_p99"] == pytest.approx(3.97)
    assert (d["x_ms_mean"], d["x_ms_min"], d["x_ms_max"]) == (2.5, 1, 4)
    assert all(v is None for v in metrics.distribution([], "y").values())


def test_summarize_level_by_hand():
    records = [
        rec(0, [100, 110, 130], 140, 3),           # ttft 100, itl 10,20, tpot 20
        rec(0, [200, 240], 300, 2),                # ttft 200, itl 40, tpot 100
        rec(50, [], 1050, 0, ok=False, kind="timeout"),
    ]
    row = metrics.summarize_level(records, concurrency=3, slo_ttft_ms=150, slo_tpot_ms=50, client_cpu_s=0.105)
    assert row["requests_attempted"] == 3 and row["requests_ok"] == 2 and row["requests_failed"] == 1
    assert row["error_rate"] == pytest.approx(1 / 3)
    assert row["errors_by_kind"] == '{"timeout": 1}'
    assert row["window_s"] == pytest.approx(1.05)          # first send 0 ms -> last end 1050 ms
    assert row["output_tokens_total"] == 5
    assert row["output_tokens_per_s"] == pytest.approx(5 / 1.05)
    assert row["requests_per_s"] == pytest.approx(2 / 1.05)
    assert row["ttft_ms_p50"] == 150 and row["ttft_ms_min"] == 100 and row["ttft_ms_max"] == 200
    assert row["itl_ms_mean"] == pytest.approx(70 / 3)   # gaps 10, 20, 40
    assert row["tpot_ms_p50"] == 60
    assert row["e2e_ms_mean"] == 220                      # failed request excluded
    assert row["achieved_concurrency"] == pytest.approx((0.14 + 0.3 + 1.0) / 1.05)
    assert row["client_cpu_pct"] == pytest.approx(10.0)
    assert row["client_saturated"] is False  # 10 % CPU, send lag 0.5 ms
    assert row["goodput_rps"] == pytest.approx(1 / 1.05)  # only the first meets ttft<=150, tpot<=50
    assert row["input_tokens_mean"] == 10


def test_summarize_level_all_failed_has_no_throughput():
    row = metrics.summarize_level([rec(0, [], 10, 0, ok=False, kind="connection")], 1)
    assert row["error_rate"] == 1 and row["output_tokens_per_s"] == 0
    assert row["ttft_ms_p50"] is None and row["goodput_rps"] is None
    assert not math.isnan(row["window_s"])


def test_knee_is_the_lowest_level_near_the_best_throughput():
    levels = [{"concurrency": c, "output_tokens_per_s": t} for c, t in ((1, 40), (2, 70), (4, 92), (8, 100), (16, 101))]
    assert metrics.knee_concurrency(levels) == 4  # 92 >= 0.9 * 101
    assert metrics.knee_concurrency(levels, fraction=0.99) == 8
    assert metrics.knee_concurrency([{"concurrency": 1, "output_tokens_per_s": None}]) is None


@pytest.mark.parametrize("cpu_pct, lag_p99, starved, saturated", [
    (None, None, False, False), (50.0, 1.0, False, False), (69.9, 10.0, False, False), (70.0, 1.0, False, True),
    (10.0, 10.5, False, True),
    # starved of a core by the work beside it: its lateness is the machine's, up to 100 ms
    (10.0, 10.5, True, False), (10.0, 99.0, True, False), (10.0, 100.5, True, True), (70.0, 1.0, True, True)])
def test_client_saturated(cpu_pct, lag_p99, starved, saturated):
    assert metrics.client_saturated(cpu_pct, lag_p99, starved) is saturated


@pytest.mark.parametrize("runqueue_s, cpu_s, starved", [
    (None, 1.0, False), (1.0, None, False), (0.0, 0.0, False), (0.49, 0.5, False), (0.5, 0.5, True), (2.0, 0.1, True)])
def test_client_starved_when_it_waited_for_a_core_as_long_as_it_ran(runqueue_s, cpu_s, starved):
    assert metrics.client_starved(runqueue_s, cpu_s) is starved


def _lagged(send_lag_ms: float, stream_wait_ms: float) -> RequestRecord:
    return RequestRecord(
        concurrency=4, request_index=0, worker=-1, ok=True, error_kind=None, error_detail=None, http_status=200,
        send_ns=0, first_content_ns=MS, end_ns=2 * MS, send_lag_ms=send_lag_ms, ttft_ms=1.0, e2e_ms=2.0, tpot_ms=None,
        itl_ms=[], content_chunks=1, output_tokens=1, output_tokens_source="usage", output_tokens_counted=1,
        input_tokens=8, finish_reason="length", repeat=0, arrival_rate_rps=1.0, send_retried=False,
        stream_wait_ms=stream_wait_ms,
    )  # fmt: skip


def test_send_lateness_splits_into_the_in_flight_caps_wait_and_the_clients_own_lag():
    # 100 arrivals: 99 on time, one held 500 ms by a full in-flight cap and sent 2 ms after a stream freed
    recs = [_lagged(0.5, 0.0) for _ in range(99)] + [_lagged(502.0, 500.0)]
    split = metrics.send_lateness_split(recs)
    # p99 of 100 values (linear): index 98.01, 1 % of the way from the 99th to the 100th value
    assert split["client_lag_ms_p99"] == pytest.approx(0.5 + 0.01 * 1.5)
    assert split["stream_wait_ms_p99"] == pytest.approx(0.01 * 500.0)
    assert split["in_flight_capped"] is False  # 5 ms: under the 10 ms bound
    held = [_lagged(0.5, 0.0) for _ in range(90)] + [_lagged(301.0, 300.0) for _ in range(10)]
    split = metrics.send_lateness_split(held)
    assert split["stream_wait_ms_p99"] == pytest.approx(300.0) and split["in_flight_capped"] is True
    assert split["client_lag_ms_p99"] == pytest.approx(1.0)
    # the level's row: a lateness that was the cap's does not saturate the client
    row = metrics.summarize_level(held, 4)
    assert row["send_lag_ms_p99"] == pytest.approx(301.0) and row["client_saturated"] is False
    assert row["in_flight_capped"] is True and row["client_starved"] is False
    assert row["client_runqueue_pct"] is None
    assert metrics.send_lateness_split([]) == {"client_lag_ms_p99": None, "stream_wait_ms_p99": None,
                                               "in_flight_capped": False}


def test_steady_state_window_by_hand():
    # Two streams. Ramp-up ends at the first completion (500 ms); the tail starts at the last send
    # (1000 ms). Chunks inside [500, 1000]: stream A's second request (sent 500) has chunks at
    # 600, 700, 800 (3) and stream B's first request chunks at 450, 550, 900 -> 550 and 900 (2);
    # the last request (sent 1000) has chunks at 1100, 1200 (outside). 5 tokens in 0.5 s.
    records = [
        rec(0, [100, 200, 300], 500, 3),        # A1: ramp-up
        rec(500, [600, 700, 800], 900, 3),      # A2
        rec(0, [450, 550, 900], 950, 3),        # B1
        rec(1000, [1100, 1200], 1300, 2),       # A3: sent at the window's end
    ]
    st = metrics.steady_state(records)
    assert st["steady_window_s"] == pytest.approx(0.5)
    assert st["steady_output_tokens_per_s"] == pytest.approx(5 / 0.5)
    assert st["steady_requests"] == 2  # A2 (sent 500) and A3 (sent 1000)
    assert st["steady_ttft_ms_p50"] == pytest.approx(100)
    assert metrics.steady_state([rec(0, [10], 20, 1)])["steady_window_s"] is None  # too short to have one


def test_latency_degradation_from_lowest_to_highest_concurrency():
    levels = [{"concurrency": 8, "e2e_ms_p50": 300.0}, {"concurrency": 1, "e2e_ms_p50": 200.0},
              {"concurrency": 4, "e2e_ms_p50": 250.0}]
    assert metrics.latency_degradation(levels) == pytest.approx(0.5)
    assert metrics.latency_degradation(levels[:1]) is None
    assert metrics.latency_degradation([{"concurrency": 1, "e2e_ms_p50": None},
                                        {"concurrency": 2, "e2e_ms_p50": 5.0}]) is None


def test_confidence_interval_by_hand():
    low, high = metrics.confidence_interval([10.0, 12.0, 14.0])  # mean 12, sd 2, t(2) = 4.303
    half = 4.303 * 2 / math.sqrt(3)
    assert (low, high) == (pytest.approx(12 - half), pytest.approx(12 + half))
    assert metrics.confidence_interval([5.0]) == (None, None)
    assert metrics.confidence_interval([5.0, None, 5.0]) == (pytest.approx(5.0), pytest.approx(5.0))


def test_speculative_speedup_by_hand():
    from llmbench.analysis.metrics import speculative_speedup

    # seed 002 at C=32: g7e EAGLE3 34.6 tok/s vs prefix caching 18.5 -> 1.87 ("1.9x")
    assert speculative_speedup(34.6, 18.5) == pytest.approx(1.8703, abs=1e-4)
    assert speculative_speedup(30.0, 20.0) == 1.5
    assert speculative_speedup(None, 20.0) is None and speculative_speedup(30.0, 0) is None


def test_latency_knee_by_hand():
    from llmbench.analysis.metrics import latency_knee_concurrency

    levels = [  # 1 -> 2: tok/s +90 %, p90 +10 %; 2 -> 4: +50 % vs +40 %; 4 -> 8: +10 % vs +100 %: knee at 4
        {"concurrency": 8, "output_tokens_per_s": 313.5, "e2e_ms_p90": 3080.0},
        {"concurrency": 1, "output_tokens_per_s": 100.0, "e2e_ms_p90": 1000.0},
        {"concurrency": 2, "output_tokens_per_s": 190.0, "e2e_ms_p90": 1100.0},
        {"concurrency": 4, "output_tokens_per_s": 285.0, "e2e_ms_p90": 1540.0},
    ]
    assert latency_knee_concurrency(levels) == 4
    # latency never outgrows throughput: no knee
    assert latency_knee_concurrency(levels[1:3]) is None
    # the first step already: the knee is the lowest level
    assert latency_knee_concurrency([{"concurrency": 1, "output_tokens_per_s": 10.0, "e2e_ms_p90": 100.0},
                                     {"concurrency": 2, "output_tokens_per_s": 11.0, "e2e_ms_p90": 200.0}]) == 1
    assert latency_knee_concurrency([{"concurrency": 1, "output_tokens_per_s": None, "e2e_ms_p90": 1.0}]) is None


def test_spec_decode_acceptance_by_hand():
    # EAGLE3 proposing 3 tokens a step over 8 steps (24 drafted), 16 of them accepted: 2/3
    assert metrics.spec_decode_acceptance_rate(16, 24) == pytest.approx(0.6666667)
    assert metrics.spec_decode_acceptance_rate(0, 24) == 0.0
    assert metrics.spec_decode_acceptance_rate(0, 0) is None  # no speculation happened
    assert metrics.spec_decode_acceptance_rate(None, 24) is None
    before, after = {"accepted_tokens": 1000.0, "draft_tokens": 1500.0}, {"accepted_tokens": 1016.0, "draft_tokens": 1524.0}
    assert metrics.spec_decode_level(before, after) == {
        "spec_decode_draft_tokens": 24.0, "spec_decode_accepted_tokens": 16.0,
        "spec_decode_acceptance_rate": 16 / 24, "spec_decode_note": None}
    idle = metrics.spec_decode_level(before, before)
    assert idle["spec_decode_acceptance_rate"] is None and idle["spec_decode_draft_tokens"] == 0
    assert "no draft tokens" in idle["spec_decode_note"]
    restarted = metrics.spec_decode_level(after, before)
    assert restarted["spec_decode_acceptance_rate"] is None and "restarted" in restarted["spec_decode_note"]
    unread = metrics.spec_decode_level(None, None, "SageMaker's runtime reaches only /invocations")
    assert unread == {"spec_decode_draft_tokens": None, "spec_decode_accepted_tokens": None,
                      "spec_decode_acceptance_rate": None, "spec_decode_note": "SageMaker's runtime reaches only /invocations"}


def _ev(stage, status, at, **extra):
    return {"stage": stage, "status": status, "at": f"2026-12-03T12:{at}+00:00", **extra}


def test_time_to_ready_by_hand():
    # created at 12:00:01.000, ready seen at 12:09:01.500: 540.5 s (seed 001's ~9 min to InService)
    events = [_ev("deploy", "started", "00:00.500000"),
              _ev("deploy", "created", "00:02.000000", deployed_at="2026-12-03T12:00:01+00:00", creates_endpoint=True),
              _ev("deploy", "succeeded", "00:02.100000"),
              _ev("wait_ready", "succeeded", "09:01.500000", waited_s=540.5),
              _ev("warm_up", "succeeded", "09:30.000000")]
    assert metrics.time_to_ready_s(events) == 540.5
    # a deploy retried after its first attempt failed: the cold start of the attempt that served
    retried = [_ev("deploy", "created", "00:01.000000", deployed_at="2026-12-03T12:00:01+00:00"),
               _ev("deploy", "failed", "00:05.000000"),
               _ev("deploy", "created", "01:00.000000", deployed_at="2026-12-03T12:01:00+00:00", creates_endpoint=True),
               _ev("wait_ready", "succeeded", "04:30.000000")]
    assert metrics.time_to_ready_s(retried) == 210.0
    attached = [_ev("deploy", "created", "00:00.000000", deployed_at="2026-12-03T12:00:00+00:00", creates_endpoint=False),
                _ev("wait_ready", "succeeded", "00:00.020000")]
    assert metrics.time_to_ready_s(attached) is None  # an openai endpoint: nothing started cold
    assert metrics.time_to_ready_s(events[:3]) is None  # never became ready
    assert metrics.time_to_ready_s([events[0], events[3]]) is None  # a run from before `created`


def test_first_request_ttft_is_the_one_sent_first():
    second, first = rec(50, [70, 80], 90, 2), rec(0, [900, 910], 920, 2)  # a cold first request: 900 ms
    assert metrics.first_request_ttft_ms([second, first]) == 900
    failed = rec(0, [], 30_000, 0, ok=False, kind="timeout")
    assert metrics.first_request_ttft_ms([second, failed]) is None  # the first failed: not served
    assert metrics.first_request_ttft_ms([]) is None


def _reading(running=0.0, hits=0.0, queries=0.0, queue_s=0.0, queued=0.0):
    return metrics.ServerReading(running, 0.0, 0.1, queries, hits, hits, queue_s, queued)


def test_server_metrics_level_counters_that_go_backwards_are_a_restart():
    cols = metrics.server_metrics_level(_reading(hits=500, queries=900), _reading(hits=10, queries=20), [], None)
    assert cols["server_metrics_note"] == "the counters went backwards: the server restarted"
    assert cols["prefix_cache_hit_rate"] is None


def test_server_metrics_level_without_lookups_has_no_hit_rate():
    cols = metrics.server_metrics_level(_reading(), _reading(running=2.0), [_reading(running=4.0)], None)
    assert cols["prefix_cache_hit_rate"] is None and cols["prefix_cache_hits_tokens"] == 0.0
    assert cols["server_requests_running_mean"] == 2.0 and cols["server_requests_running_max"] == 4.0
    assert cols["server_queue_time_ms_mean"] is None and cols["server_metrics_samples"] == 3


def test_client_minus_server_input_tokens_by_hand():
    import dataclasses

    a, b, c = rec(0, [10], 20, 1), rec(0, [10], 20, 1), rec(0, [10], 20, 1)  # the server counted 10 each
    counted = [dataclasses.replace(a, input_tokens_client=12), dataclasses.replace(b, input_tokens_client=9), c]
    failed = dataclasses.replace(rec(0, [], 30, 0, ok=False, kind="timeout"), input_tokens_client=50)
    # (12 - 10 + 9 - 10) / 2: the uncounted and the failed request (no server count) left out
    assert metrics.summarize_level([*counted, failed], 1)["input_tokens_client_minus_server_mean"] == 0.5
    assert metrics.summarize_level([a, b], 1)["input_tokens_client_minus_server_mean"] is None


def test_measuring_seconds_count_each_stages_successful_try_and_the_fraction_is_of_the_billed_time():
    """Issue 45: warm-up, quality and the sweep measure; a failed try, the deploy, the wait and
    teardown are overhead the user pays for."""
    def ev(stage, status, s):
        at = f"2026-11-30T00:{s // 60:02d}:{s % 60:02d}+00:00"
        return {"stage": stage, "status": status, "at": at}

    events = [ev("deploy", "started", 0), ev("deploy", "succeeded", 5), ev("wait_ready", "succeeded", 40),
              ev("warm_up", "started", 41), ev("warm_up", "succeeded", 51),
              ev("quality", "started", 52), ev("quality", "succeeded", 72),
              ev("sweep", "started", 73), ev("sweep", "failed", 83),  # a lost try: billed, measured nothing
              ev("sweep", "started", 90), ev("sweep", "succeeded", 190),
              ev("validate", "succeeded", 195), ev("teardown", "succeeded", 200)]
    assert metrics.measuring_seconds(events) == 10 + 20 + 100
    assert metrics.measuring_fraction(130.0, 200.0) == 0.65
    assert metrics.measuring_seconds(events[:3]) is None  # nothing measured
    assert metrics.measuring_fraction(130.0, None) is None and metrics.measuring_fraction(None, 200.0) is None
    assert metrics.measuring_fraction(130.0, 0.0) is None
