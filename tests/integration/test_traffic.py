"""The user's traffic through the real load generator against the calibration server (a process
of its own): multi-turn sessions turn by turn on one stream with their history, and a trace
replayed at its own times with each request's schedule recorded."""

import json

import pandas as pd

from llmbench.backends.base import Endpoint
from llmbench.loadgen.sweep import run_sweep
from llmbench.testing import calibration
from llmbench.testing._serve import ServerProcess


def _conversations(path, n=20, turns=3):
    with path.open("w") as f:
        for k in range(n):
            msgs = [{"role": "system", "content": "be brief"}]
            for t in range(turns):
                msgs += [
                    {"role": "user", "content": f"question {t} of row {k} " + "word " * (5 + k)},
                    {"role": "assistant", "content": f"answer {t} " + "x" * 40},
                ]
            f.write(json.dumps({"messages": msgs}) + "\n")


def test_sessions_go_turn_by_turn_on_one_stream_carrying_their_history(tmp_path):
    _conversations(tmp_path / "c.jsonl")
    workload = {
        "output_tokens": 8,
        "concurrency": [2],
        "requests_per_level": 12,
        "warmup_requests": 0,
        "seed": 4,
        "dataset": {"path": str(tmp_path / "c.jsonl"), "format": "openai"},
        "multi_turn": {"think_time_s": 0.05, "max_turns": 3},
    }
    with ServerProcess("llmbench.testing.calibration", "--ttft-ms", "20", "--itl-ms", "2", "--tokens", "8") as server:
        result = run_sweep(Endpoint(server.url + "/v1/chat/completions", keep_alive=True), workload, tmp_path / "o")
        record = calibration.fetch_record(server.url)
    (level,) = result.levels
    assert level["requests_ok"] == 12 and record["requests"] == 12
    df = pd.read_parquet(tmp_path / "o" / "requests.parquet").sort_values("send_ns")
    assert (df["session"] >= 0).all()
    for _, turns in df.groupby("session"):
        assert turns["worker"].nunique() == 1  # one stream per session
        assert list(turns["turn_index"]) == list(range(len(turns)))  # in order
        assert turns["history_chars"].is_monotonic_increasing and turns["history_chars"].iloc[0] == 0
        assert turns["input_tokens"].is_monotonic_increasing  # the server saw the history grow
        # the next turn waits for the previous answer and the think time (the event loop's timers
        # are millisecond-grained: uvloop may wake up to a millisecond early)
        ends, sends = turns["end_ns"].to_numpy()[:-1], turns["send_ns"].to_numpy()[1:]
        assert ((sends - ends) >= 0.048e9).all()
    assert df.groupby("session").size().max() == 3


def test_a_trace_is_replayed_at_its_own_times_and_each_request_keeps_its_schedule(tmp_path):
    rows = [
        {"timestamp": t, "input_length": 60, "output_length": 4, "hash_ids": [1]} for t in (0, 0, 100, 400, 410, 900)
    ]
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    workload = {
        "trace": {"path": str(tmp_path / "t.jsonl"), "time_scale": 0.5, "block_tokens": 16, "max_lateness_ms_p99": 500},
        "max_in_flight": 8,
        "warmup_requests": 0,
    }
    with ServerProcess("llmbench.testing.calibration", "--ttft-ms", "10", "--itl-ms", "1", "--tokens", "4") as server:
        result = run_sweep(Endpoint(server.url + "/v1/chat/completions", keep_alive=True), workload, tmp_path / "o")
    (level,) = result.levels
    assert level["load_mode"] == "trace" and level["requests_ok"] == 6 and level["offered_as_scheduled"]
    assert level["arrival_rate_rps"] == 6 / 0.45
    df = pd.read_parquet(tmp_path / "o" / "requests.parquet").sort_values("request_index")
    assert list(df["scheduled_ms"]) == [0, 0, 50, 200, 205, 450]
    sent_ms = (df["send_ns"] - df["send_ns"].min()) / 1e6
    assert ((sent_ms - df["scheduled_ms"]).abs() < 100).all()  # sent at the trace's (scaled) times
    assert level["shared_prefix_fraction"] == 5 * 16 / (6 * 60)
