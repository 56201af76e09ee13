"""Prompts sized with the served model's own tokenizer (issue 28 item 6), on the real llama-server
with SmolLM2: the seed presets' input lengths land on what was asked, as the server itself counts
them (usage.prompt_tokens), within 1 %; each record keeps the client's count beside the server's
and the level their mean difference. A server without a tokenize endpoint keeps the words ~
tokens sizing and records no client count. A dataset's rows, sent as they are, are counted with the
same tokenizer before the level: each record keeps both counts (tokenizer.count_prompts)."""

from pathlib import Path

import pandas as pd
import pytest

from llmbench.backends.base import Endpoint
from llmbench.backends.local.models import LocalServing
from llmbench.loadgen.sweep import run_sweep
from llmbench.schemas.workload import Workload, sample_length
from llmbench.testing._serve import ServerProcess

from .shared_server import SharedLlamaServer

CONVERSATIONS = Path(__file__).resolve().parents[2] / "include" / "llmbench" / "config" / "traffic" / "conversations.jsonl"


@pytest.fixture(scope="module")
def long_context_server(tmp_path_factory):
    # seed 000's 2048-token prompts need more context than the session's shared server has
    serving = LocalServing(name="test-tokens", parallel=2, threads=2, ctx_per_slot=2304)
    server = SharedLlamaServer(serving, tmp_path_factory.mktemp("tokens-server"))
    try:
        server.wait_ready(120)
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize(("preset", "requests"), [("seed-000", 2), ("seed-002", 8)])
def test_seed_presets_land_on_their_input_lengths_in_the_servers_count(long_context_server, tmp_path, preset, requests):
    # the presets' input lengths; a short answer, since only the prompt is under test
    workload = Workload.model_validate(
        {
            "preset": preset,
            "output_tokens": 4,
            "concurrency": [2],
            "requests_per_level": requests,
            "warmup_requests": 0,
            "request_timeout_s": 300,
        }
    )
    url = long_context_server.handle["base_url"] + "/v1/chat/completions"
    result = run_sweep(Endpoint(url), workload, tmp_path)
    long_context_server.check("during this test")
    rq = pd.read_parquet(result.requests_path).sort_values("request_index")
    assert rq["ok"].all(), rq["error_detail"].tolist()
    asked = [
        sample_length(workload.input_tokens, workload.seed, i, "input") + workload.shared_prefix_tokens
        for i in rq["request_index"]
    ]
    served = rq["input_tokens"].tolist()
    if preset == "seed-002":
        assert len(set(asked)) > 3  # really the preset's distribution
    misses = [abs(s - a) / a for s, a in zip(served, asked, strict=True)]
    assert max(misses) <= 0.01, list(zip(asked, served, strict=True))
    assert rq["input_tokens_client"].tolist() == served  # the client counted what the server did
    (level,) = result.levels
    assert level["input_tokens_client_minus_server_mean"] == 0.0 and level["prompt_sizing"] == "tokenizer"
    print(f"{preset}: asked {asked}, served {served}, max miss {max(misses):.4%}")


def test_a_server_without_tokenize_keeps_the_words_estimate(tmp_path):
    workload = Workload.model_validate(
        {"input_tokens": 200, "output_tokens": 4, "concurrency": [1], "requests_per_level": 2, "request_timeout_s": 30}
    )
    with ServerProcess("llmbench.testing.calibration", "--ttft-ms", "5", "--itl-ms", "1") as server:
        result = run_sweep(Endpoint(server.url + "/v1/chat/completions", keep_alive=True), workload, tmp_path)
    rq = pd.read_parquet(result.requests_path)
    assert rq["ok"].all() and rq["input_tokens_client"].isna().all()
    assert result.levels[0]["input_tokens_client_minus_server_mean"] is None
    assert result.levels[0]["prompt_sizing"] == "words"


def _counted_sweep(server, tmp_path, workload: dict, requests: int, label: str) -> tuple[pd.DataFrame, dict]:
    """A count-bounded sweep of `workload` (at concurrency 2, 4-token answers, no warm-up) on the
    long-context server: its requests, in order, all ok and each carrying the client's count
    equal to the server's; and its one level, whose mean difference is then 0."""
    common = {"output_tokens": 4, "concurrency": [2], "warmup_requests": 0, "request_timeout_s": 120}
    url = server.handle["base_url"] + "/v1/chat/completions"
    result = run_sweep(Endpoint(url), Workload.model_validate({**common, **workload}), tmp_path)
    server.check("during this test")
    rq = pd.read_parquet(result.requests_path).sort_values("request_index")
    assert rq["ok"].all() and len(rq) == requests, rq["error_detail"].tolist()
    print(f"{label}: turns {rq['turn_index'].tolist()}, server {rq['input_tokens'].tolist()}, "
          f"client {rq['input_tokens_client'].tolist()}")  # fmt: skip
    assert rq["input_tokens_client"].notna().all()
    assert rq["input_tokens_client"].tolist() == rq["input_tokens"].tolist()  # the client counted what the server did
    (level,) = result.levels
    assert level["input_tokens_client_minus_server_mean"] == 0.0
    return rq, level


@pytest.mark.parametrize("sample", ["with_replacement", "without_replacement"])
def test_a_datasets_rows_carry_the_clients_count_beside_the_servers(long_context_server, tmp_path, sample):
    dataset = {"path": str(CONVERSATIONS), "format": "openai", "sample": sample, "max_input_chars": 3000}
    _, level = _counted_sweep(long_context_server, tmp_path, {"dataset": dataset, "requests_per_level": 12,
                                                              "repeats": 2}, 24, f"dataset ({sample})")  # fmt: skip
    assert level["prompt_sizing"] == "dataset"


def test_a_sessions_turns_carry_the_clients_count_of_their_whole_history(long_context_server, tmp_path):
    dataset = {"path": str(CONVERSATIONS), "format": "openai", "max_input_chars": 1500}
    workload = {"dataset": dataset, "multi_turn": {"max_turns": 3}, "requests_per_level": 12}
    rq, level = _counted_sweep(long_context_server, tmp_path, workload, 12, "sessions")
    assert (rq["turn_index"] > 0).any()  # later turns, carrying their history, were counted too
    assert level["prompt_sizing"] == "dataset"


def test_code_edit_prompts_carry_the_clients_count_beside_the_servers(long_context_server, tmp_path):
    """A code-edit prompt is what it is (seeded code, not sized by the tokenizer), but a
    count-bounded level counts each before its clock starts, shared system prompt included."""
    workload = {"prompt_style": "code-edit", "input_tokens": {"dist": "uniform", "min": 200, "max": 600},
                "shared_prefix_tokens": 64, "requests_per_level": 6}  # fmt: skip
    rq, _ = _counted_sweep(long_context_server, tmp_path, workload, 6, "code-edit")
    assert rq["input_tokens"].nunique() > 1  # each request's own code, not one prompt counted six times
