"""What a sweep learns beside its own requests, against a vLLM stand-in of our own
(testing.specdecode: the paced OpenAI server plus vLLM's /version and /metrics): seed 003's
per-level warm-up (sent at the level's concurrency, recorded, in no level metric), speculative
decoding's acceptance rate from vLLM's counters read around each level, the engine version, and
cold start on the targets row, through the pipeline into the warehouse."""

import json

import yaml

from llmbench import pipeline, warehouse
from llmbench.backends import servermetrics
from llmbench.backends.openai.backend import OpenAIBackend
from llmbench.loadgen.sweep import WARMUP_FILE, read_jsonl_records, read_warmup, run_sweep, run_warmup
from llmbench.planning.plan import plan
from llmbench.schemas.workload import Workload
from llmbench.testing import specdecode
from llmbench.testing._serve import ServerProcess

# 6 output tokens, 3 drafted and 2 accepted per step: 2 steps per request, 6 draft tokens and 4
# accepted: 2/3 of the draft tokens accepted, whatever the number of requests.
SERVER = ("--ttft-ms", "5", "--itl-ms", "1", "--tokens", "6", "--draft", "3", "--accepted", "2")
WORKLOAD = {"input_tokens": 16, "output_tokens": 6, "concurrency": [1, 2], "requests_per_level": 4,
            "warmup_requests": 1, "warmup_each_level": 2, "request_timeout_s": 30}


def _served(url: str) -> float:
    return servermetrics.parse_prometheus(servermetrics.fetch(url + "/metrics").decode())[
        "vllm:request_success_total"]


def test_level_warmups_are_sent_recorded_and_kept_out_and_the_acceptance_rate_is_read(tmp_path):
    with ServerProcess("llmbench.testing.specdecode", *SERVER) as server:
        backend = OpenAIBackend()
        handle = backend.attach(server.url + "/v1")
        endpoint = backend.endpoint(handle)
        assert endpoint.metrics_url == server.url + "/metrics"
        assert backend.engine_version(handle).version == specdecode.VERSION
        workload = Workload.model_validate(WORKLOAD)
        run_warmup(endpoint, workload, out_dir=tmp_path)
        levels = run_sweep(endpoint, workload, tmp_path).levels
        served = _served(server.url)
    # 1 initial warm-up, then before each level 2 per stream (2 at C=1, 4 at C=2), then 4 timed each
    assert served == 1 + 2 + 4 + 4 + 4
    assert [lv["level_warmup_requests"] for lv in levels] == [2, 4]
    assert [lv["requests_attempted"] for lv in levels] == [4, 4]  # no warm-up in the level
    for lv in levels:
        assert (lv["spec_decode_draft_tokens"], lv["spec_decode_accepted_tokens"]) == (4 * 6, 4 * 4)
        assert lv["spec_decode_acceptance_rate"] == 16 / 24 and lv["spec_decode_note"] is None
    warm = read_warmup(tmp_path)
    assert len(warm["initial"]) == 1 and [r.concurrency for r in warm["level"]] == [1, 1, 2, 2, 2, 2]
    assert all(r.ok for rs in warm.values() for r in rs)
    timed = {r.request_index for r in read_jsonl_records(tmp_path / "requests.jsonl")[0]}
    warm_ix = [r.request_index for rs in warm.values() for r in rs]
    assert len(set(warm_ix)) == len(warm_ix) and not timed & set(warm_ix) and max(warm_ix) < 0
    assert (tmp_path / WARMUP_FILE).read_text().count('"phase": "level"') == 6


def test_a_server_without_spec_decode_counters_gives_null_with_the_reason(tmp_path):
    with ServerProcess("llmbench.testing.specdecode", *SERVER, "--no-spec-decode") as server:
        endpoint = OpenAIBackend().endpoint(OpenAIBackend().attach(server.url + "/v1"))
        w = Workload.model_validate({**WORKLOAD, "concurrency": [1], "warmup_each_level": 0})
        (lv,) = run_sweep(endpoint, w, tmp_path).levels
    assert lv["level_warmup_requests"] == 0 and lv["requests_attempted"] == 4
    assert lv["spec_decode_acceptance_rate"] is None and lv["spec_decode_draft_tokens"] is None
    assert "no vllm:spec_decode_num_draft_tokens_total" in lv["spec_decode_note"]


def test_an_openai_target_publishes_its_server_facts(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path))
    cfg = yaml.safe_load(open(__import__("llmbench.paths").paths.CONFIG_DIR / "openai-example.yaml"))
    with ServerProcess("llmbench.testing.specdecode", *SERVER) as server:
        cfg["targets"][0]["serving"]["base_url"] = server.url + "/v1"
        cfg["workload"] = WORKLOAD
        (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
        run = plan(str(tmp_path / "c.yaml"), "2026-12-03", runs_root=tmp_path / "runs")
        (target,) = run.targets
        handle = pipeline.deploy(target)
        try:
            pipeline.wait_ready(target, handle)
            pipeline.warm_up(target, handle)
            assert pipeline.validate(target, pipeline.sweep(target, handle))["validation_passed"]
        finally:
            pipeline.teardown(target, handle)
    created = [e for e in map(json.loads, (target.dir / "events.jsonl").read_text().splitlines())
               if e["status"] == "created"]
    assert created == [{**created[0], "stage": "deploy", "creates_endpoint": False}]
    run_dir = pipeline.run_dir_of(run.targets)
    pipeline.price_performance(run_dir)
    db = pipeline.publish(run_dir)["warehouse"]
    t = warehouse.query("SELECT time_to_ready_s, first_request_ttft_ms, engine_version, engine_version_source, "
                        "model_revision FROM llmbench.targets", target=db).to_dict("records")[0]
    assert t["time_to_ready_s"] is None or t["time_to_ready_s"] != t["time_to_ready_s"]  # NULL: nothing deployed
    first = read_warmup(target.dir)["initial"][0]
    assert t["first_request_ttft_ms"] == first.ttft_ms > 0
    assert (t["engine_version"], t["engine_version_source"]) == (specdecode.VERSION, f"GET {server.url}/version")
    assert t["model_revision"] is None
    lv = warehouse.query("SELECT concurrency, level_warmup_requests, spec_decode_acceptance_rate FROM llmbench.levels "
                         "ORDER BY concurrency", target=db)
    assert lv.values.tolist() == [[1, 2, 16 / 24], [2, 4, 16 / 24]]
    pp = warehouse.query("SELECT spec_decode_acceptance_rate FROM llmbench.price_performance", target=db)
    assert pp["spec_decode_acceptance_rate"].tolist() == [16 / 24, 16 / 24]
