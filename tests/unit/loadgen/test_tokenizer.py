"""Prompts sized in the served model's own tokens: the word table is measured from a tokenizer,
checked against its count of a probe, and sizes prompts (generated and trace rows) to the asked
length by a binary search over the word count. A small tokenizer of our own stands in for the
model's here (the real one, llama-server's, is tests/integration/test_prompt_tokens.py): it counts
some words as two tokens, so sizing cannot get away with words = tokens."""

import json

import pytest

from llmbench.backends.base import Endpoint
from llmbench.backends.deadline import Bounded
from llmbench.loadgen.prompts import WORDS, Prompt, WordSizing, make_prompt, trace_prompt
from llmbench.loadgen.tokenizer import NoTokenizeEndpoint, count_each, count_prompts, measure_word_sizing, sizing_for
from llmbench.schemas.dataset import TraceSpec, scan_trace

TWO_TOKEN_WORDS = {"water", "window", "between", "people", "school", "during", "paper", "chair"}
TEMPLATE_TOKENS, SYSTEM_TURN_TOKENS = 11, 4


class WordPieceTokenizer:
    """Splits at spaces (as a BPE pre-tokenizer does); some words are two tokens, the rest one; a
    chat template of fixed size around the turns. Counts what it is given, nothing cached."""

    def count_text(self, text: str) -> int:
        return sum(2 if w in TWO_TOKEN_WORDS else 1 for w in text.split())

    def count_prompt(self, prompt: Prompt) -> int:
        system = SYSTEM_TURN_TOKENS + self.count_text(prompt.system) if prompt.system else 0
        return TEMPLATE_TOKENS + system + self.count_text(prompt.text)


class MergingTokenizer(WordPieceTokenizer):
    """Merges every pair of words into one token across the space: counts do not add up per word."""

    def count_prompt(self, prompt: Prompt) -> int:
        return TEMPLATE_TOKENS + (len(prompt.text.split()) + 1) // 2


def test_the_word_table_is_measured_from_the_tokenizer():
    sizing = measure_word_sizing(WordPieceTokenizer(), seed=3, shared_prefix_tokens=40, prefix_count=2)
    assert {w for w, n in sizing.table.items() if n == 2} == TWO_TOKEN_WORDS & set(WORDS)
    instruction = len("Continue this list of words with more words:".split())
    assert sizing.base_tokens == TEMPLATE_TOKENS + instruction
    tok = WordPieceTokenizer()
    for k in (0, 1):  # each shared prefix's system turn: its framing and its own words' tokens
        system = make_prompt(3, 0, 1, 1, 40, prefix_id=k).system
        assert sizing.system_tokens[k] == SYSTEM_TURN_TOKENS + tok.count_text(system)


def test_counts_that_do_not_add_up_are_refused():
    with pytest.raises(ValueError, match="do not add up"):
        measure_word_sizing(MergingTokenizer(), seed=3, shared_prefix_tokens=0, prefix_count=1)


@pytest.mark.parametrize("shared", [0, 478])
def test_generated_prompts_land_on_their_length_in_the_tokenizers_count(shared):
    tok = WordPieceTokenizer()
    sizing = measure_word_sizing(tok, seed=0, shared_prefix_tokens=shared, prefix_count=3)
    for i, asked in enumerate((60, 222, 522, 822, 2048)):
        prompt = make_prompt(0, i, asked, 8, shared, prefix_id=i % 3 if shared else 0, sizing=sizing)
        counted = tok.count_prompt(prompt)
        assert prompt.input_tokens_client == counted  # the client's count is the tokenizer's
        # within one token of the whole prompt asked (a two-token word may not fit the last slot)
        assert asked + shared - 1 <= counted <= asked + shared, (asked, counted)
    # the same seed and index, the same prompt; words were not taken as tokens
    again = make_prompt(0, 3, 822, 8, shared, sizing=sizing)
    assert again == make_prompt(0, 3, 822, 8, shared, sizing=sizing)
    unsized = make_prompt(0, 3, 822, 8, shared)
    assert unsized.input_tokens_client is None and len(again.text.split()) != len(unsized.text.split())


def test_the_binary_search_takes_the_longest_run_of_words_within_the_target():
    sizing = WordSizing(base_tokens=10, system_tokens=(), word_tokens=tuple(2 if w == "water" else 1 for w in WORDS))
    words = ["the", "water", "of", "water", "and"]  # running sums from 10: 11, 13, 14, 16, 17
    assert sizing.fit(words, 14, 10) == (3, 14)
    assert sizing.fit(words, 15, 10) == (3, 14)  # the next word is two tokens: it would pass 15
    assert sizing.fit(words, 100, 10) == (5, 17)
    assert sizing.fit(words, 5, 10) == (1, 11)  # at least one word


def test_trace_rows_are_sized_to_their_input_length_and_keep_their_shared_blocks(tmp_path):
    path = tmp_path / "trace.jsonl"
    rows = [
        {"timestamp": 0, "input_length": 300, "output_length": 5, "hash_ids": [1, 2]},
        {"timestamp": 10, "input_length": 300, "output_length": 5, "hash_ids": [1, 3]},
        {"timestamp": 20, "input_length": 97, "output_length": 5},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    trace = scan_trace(TraceSpec(path=str(path)))
    tok = WordPieceTokenizer()
    sizing = measure_word_sizing(tok, seed=0, shared_prefix_tokens=0, prefix_count=1)
    p0, p1, p2 = (trace_prompt(0, trace, k, 64, sizing) for k in range(3))
    for p, asked in ((p0, 300), (p1, 300), (p2, 97)):
        assert p.input_tokens_client == tok.count_prompt(p) and asked - 1 <= tok.count_prompt(p) <= asked
    head = len("Continue this list of words with more words:".split())
    assert p0.text.split()[head : head + 64] == p1.text.split()[head : head + 64]  # block 1, shared
    assert trace_prompt(0, trace, 0, 64).input_tokens_client is None


def test_paths_that_cannot_tokenize_keep_the_words_estimate_without_asking():
    # a wire of its own or a signed runtime has no tokenize endpoint: no request is made at all
    assert sizing_for(Endpoint("http://127.0.0.1:9/invocations", wire="sagemaker"), 0, 0, 1) is None
    assert sizing_for(Endpoint("http://127.0.0.1:9/v1/chat/completions", signer=object()), 0, 0, 1) is None
    # nothing listens on the discard port: refused, so words ~ tokens
    assert sizing_for(Endpoint("http://127.0.0.1:9/v1/chat/completions"), 0, 0, 1) is None


# -- vLLM's /tokenize, and the client's count of a dataset's prompts --------------------------------


class VllmStub:
    """A server with vLLM's tokenize API only (POST /tokenize: {model, messages, add_generation_prompt}
    or {model, prompt}; {"count", "tokens", "max_model_len"}), counting as WordPieceTokenizer does;
    everything else 404, as vLLM answers llama-server's /apply-template. Keeps the bodies it was sent.
    `refuse`: a user text it answers 400 for; `delay_s`: each reply's wait."""

    def __init__(self, refuse: str | None = None, delay_s: float = 0.0):
        import http.server
        import threading
        import time

        tok, bodies = WordPieceTokenizer(), []
        self.bodies = bodies

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *_args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                bodies.append((self.path, body))
                time.sleep(delay_s)
                if self.path != "/tokenize":
                    return self._send(404, {"detail": "Not Found"})
                if "messages" in body:
                    turns = {m["role"]: m["content"] for m in body["messages"]}
                    if refuse is not None and turns["user"] == refuse:
                        return self._send(400, {"error": "refused"})
                    count = tok.count_prompt(Prompt(0, turns["user"], 1, turns.get("system")))
                else:
                    count = tok.count_text(body["prompt"])
                self._send(200, {"count": count, "tokens": list(range(count)), "max_model_len": 2048})

            def _send(self, status, reply):
                raw = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def endpoint(self, tokenize_api=None):
        url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/chat/completions"
        return Endpoint(url, model="served-name", tokenize_api=tokenize_api)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def vllm_stub():
    stub = VllmStub()
    yield stub
    stub.close()


def test_vllms_tokenize_sizes_prompts_where_the_backend_names_it(vllm_stub):
    sizing = sizing_for(vllm_stub.endpoint("vllm"), 0, 40, 2)
    assert sizing == measure_word_sizing(WordPieceTokenizer(), 0, 40, 2)  # the server's counts, not words
    paths = {path for path, _ in vllm_stub.bodies}
    assert paths == {"/tokenize"}  # no llama-server endpoint was asked
    chat = next(b for _, b in vllm_stub.bodies if "messages" in b)
    text = next(b for _, b in vllm_stub.bodies if "prompt" in b)
    assert chat["model"] == "served-name" and chat["add_generation_prompt"] is True
    assert text["add_special_tokens"] is False


def test_an_unnamed_server_without_llama_servers_endpoints_is_asked_vllms(vllm_stub):
    assert sizing_for(vllm_stub.endpoint(), 0, 0, 1) == measure_word_sizing(WordPieceTokenizer(), 0, 0, 1)
    assert vllm_stub.bodies[0][0] == "/apply-template"  # llama-server's first: absent (404), then vLLM's
    # named llama-server: its API only, so a vLLM server is not sized
    assert sizing_for(vllm_stub.endpoint("llama-server"), 0, 0, 1) is None


def _prompts(texts):
    return [(k, Prompt(k, text, 1)) for k, text in enumerate(texts)]


def test_count_prompts_counts_each_and_leaves_out_what_the_server_refuses():
    stub = VllmStub(refuse="bad prompt here")
    try:
        # unnamed: the first prompt finds llama-server's endpoint absent and is counted by vLLM's
        counts = count_prompts(stub.endpoint(), _prompts(["one two", "bad prompt here", "water water the"]))
    finally:
        stub.close()
    tok = WordPieceTokenizer()
    assert counts == {0: TEMPLATE_TOKENS + 2, 2: TEMPLATE_TOKENS + tok.count_text("water water the")}


def test_count_prompts_keeps_what_it_counted_within_its_budget():
    stub = VllmStub(delay_s=0.2)
    try:
        counts = count_prompts(stub.endpoint("vllm"), _prompts(["a b"] * 50), budget_s=0.7)
    finally:
        stub.close()
    assert 1 <= len(counts) <= 4 and list(counts) == list(range(len(counts)))  # the first ones, in order


def test_count_each_stops_at_the_first_broken_bound_and_raises_only_an_absent_first_endpoint():
    class Flaky(WordPieceTokenizer):
        def __init__(self, fail_at, error):
            self.calls, self.fail_at, self.error = 0, fail_at, error

        def count_prompt(self, prompt):
            self.calls += 1
            if self.calls == self.fail_at:
                raise self.error
            return super().count_prompt(prompt)

    prompts = _prompts(["a", "b c", "d", "e"])
    assert count_each(Flaky(3, TimeoutError("deadline")), prompts) == {0: 12, 1: 13}
    assert count_each(Flaky(2, Bounded("response_too_large", "flood")), prompts) == {0: 12}
    assert count_each(Flaky(2, ValueError("HTTP 400")), prompts) == {0: 12, 2: 12, 3: 12}
    with pytest.raises(NoTokenizeEndpoint):
        count_each(Flaky(1, NoTokenizeEndpoint("HTTP 404")), prompts)
    assert count_each(Flaky(2, NoTokenizeEndpoint("HTTP 404")), prompts) == {0: 12}


def test_a_dataset_levels_requests_are_counted_once_a_row_before_the_level(tmp_path, vllm_stub):
    from llmbench.loadgen.sweep import _dataset_counts, _level_args
    from llmbench.schemas.workload import Workload

    path = tmp_path / "rows.jsonl"
    texts = ["water the of", "one", "people school and", "two three"]
    path.write_text("".join(json.dumps({"messages": [{"role": "user", "content": t}]}) + "\n" for t in texts))
    workload = Workload.model_validate(
        {"dataset": {"path": str(path), "format": "openai"}, "concurrency": [1], "requests_per_level": 12}
    )
    endpoint = vllm_stub.endpoint("vllm")
    args = _level_args(workload, endpoint)
    counts = _dataset_counts(endpoint, workload, args, [0, 100], 12)
    spec, index = args["dataset"]
    tok = WordPieceTokenizer()
    assert set(counts) == set(range(12)) | set(range(100, 112))
    for idx, counted in counts.items():  # each request's count is its own row's
        row = index.row_of(workload.seed, idx, True)
        assert counted == TEMPLATE_TOKENS + tok.count_text(texts[row])
    asked = [b for p, b in vllm_stub.bodies if "messages" in b]
    assert len(asked) == len({json.dumps(b) for b in asked}) <= len(texts)  # a row once


def test_a_multi_turn_levels_session_turns_are_counted_each_with_its_history(tmp_path, vllm_stub):
    from llmbench.loadgen.prompts import session_turn_prompt
    from llmbench.loadgen.schedules import session_turn_key
    from llmbench.loadgen.sweep import _dataset_counts, _level_args
    from llmbench.schemas.workload import Workload

    path = tmp_path / "rows.jsonl"
    rows = [["water the of", "one", "two three four"], ["people"], ["school and", "the end"]]
    path.write_text(
        "".join(
            json.dumps({"messages": [m for t in turns for m in ({"role": "user", "content": t},
                                                              {"role": "assistant", "content": "ok"})]}) + "\n"
            for turns in rows
        )
    )  # fmt: skip
    workload = Workload.model_validate(
        {
            "dataset": {"path": str(path), "format": "openai"},
            "multi_turn": {"max_turns": 2},
            "concurrency": [1],
            "requests_per_level": 5,
        }
    )
    endpoint = vllm_stub.endpoint("vllm")
    args = _level_args(workload, endpoint)
    counts = _dataset_counts(endpoint, workload, args, [0], 5)
    spec, index = args["dataset"]
    tok = WordPieceTokenizer()
    expected = {}
    for s in range(5):  # at most 5 sessions send a turn; each at most max_turns of its row's
        conv = index.conversation(index.row_of(workload.seed, s, True))
        for turn in range(2):
            prompt = session_turn_prompt(conv, turn, 1, spec)
            if prompt is not None:
                expected[session_turn_key(s, turn)] = tok.count_prompt(prompt)  # the stub counts the last user turn
    assert counts == expected and len(expected) > 5
