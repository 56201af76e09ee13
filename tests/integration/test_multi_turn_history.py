"""multi_turn.history "model": a session's next turn carries the model's own answers to its earlier
turns, not the row's assistant turns. Against the calibration server (its answers are known: " tok"
per token) and against the real llama-server (its answer asked for again, greedy, with the same
turn-1 messages)."""

import json
import urllib.request

import pandas as pd

from llmbench.backends.base import Endpoint
from llmbench.backends.local.backend import LocalBackend
from llmbench.loadgen.sweep import run_sweep
from llmbench.schemas.workload import Workload
from llmbench.testing._serve import ServerProcess

DATA_ANSWER = "an answer from the data, never what the model said " * 10  # 510 characters


def _conversations(path, n, turns):
    rows = []
    for k in range(n):
        msgs = [{"role": "system", "content": "You are brief."}]
        for t in range(turns):
            msgs += [
                {"role": "user", "content": f"Question {t} of row {k}: name a colour " + "please " * t},
                {"role": "assistant", "content": DATA_ANSWER},
            ]
        rows.append(msgs)
    path.write_text("".join(json.dumps({"messages": m}) + "\n" for m in rows))
    return rows


def _workload(path, history, requests_per_level, max_turns):
    return Workload.model_validate(
        {
            "output_tokens": 8,
            "concurrency": [1],
            "requests_per_level": requests_per_level,
            "warmup_requests": 0,
            "seed": 5,
            "request_timeout_s": 60,
            "dataset": {"path": str(path), "format": "openai"},
            "multi_turn": {"think_time_s": 0.02, "max_turns": max_turns, "history": history},
        }
    )


def _user_chars(msgs, turn):
    """Characters of a row's user turns before turn `turn`."""
    return sum(len(m["content"]) for m in [m for m in msgs if m["role"] == "user"][:turn])


def test_calibration_sessions_carry_the_models_answers_and_data_history_is_unchanged(tmp_path):
    rows = _conversations(tmp_path / "c.jsonl", n=1, turns=3)
    answer_chars = len(" tok") * 8  # the calibration server answers max_tokens " tok"s
    with ServerProcess("llmbench.testing.calibration", "--ttft-ms", "5", "--itl-ms", "1", "--tokens", "8") as server:
        endpoint = Endpoint(server.url + "/v1/chat/completions", keep_alive=True)
        for history in ("model", "data"):
            run_sweep(endpoint, _workload(tmp_path / "c.jsonl", history, 6, 3), tmp_path / history)
    for history, per_answer in (("model", answer_chars), ("data", len(DATA_ANSWER))):
        df = pd.read_parquet(tmp_path / history / "requests.parquet").sort_values("send_ns")
        assert (df["error_kind"].isna()).all() and len(df) == 6
        for _, turns in df.groupby("session"):
            expected = [_user_chars(rows[0], t) + t * per_answer for t in range(len(turns))]
            assert list(turns["history_chars"]) == expected, history


def test_llama_server_turn_two_carries_the_models_turn_one_answer(local_server, tmp_path):
    (msgs,) = _conversations(tmp_path / "c.jsonl", n=1, turns=2)
    endpoint = LocalBackend().endpoint(local_server)
    run_sweep(endpoint, _workload(tmp_path / "c.jsonl", "model", 2, 2), tmp_path / "o")
    df = pd.read_parquet(tmp_path / "o" / "requests.parquet").sort_values("turn_index")
    assert df["error_kind"].isna().all(), df["error_detail"].tolist()
    assert list(df["turn_index"]) == [0, 1] and df["session"].nunique() == 1
    # The model's turn-1 answer, asked for again as the load generator asked (greedy, the same
    # length): what turn 2 must have carried instead of the row's 510-character answer.
    body = {"model": endpoint.model, "messages": msgs[:2], "max_tokens": 8, "temperature": 0.0, "ignore_eos": True}
    request = urllib.request.Request(endpoint.url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        answer = json.load(response)["choices"][0]["message"]["content"]
    assert answer and answer != DATA_ANSWER
    assert df["history_chars"].tolist() == [0, len(msgs[1]["content"]) + len(answer)]
    # the server saw the short history: the whole prompt is far fewer tokens than the row's answer alone
    assert df["input_tokens"].iloc[1] < len(DATA_ANSWER) / 4
