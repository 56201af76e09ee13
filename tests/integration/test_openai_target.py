"""An `openai` target (an endpoint you already run) from a config, through every per-target task
and into the warehouse: nothing deployed or torn down, its $/hour from the config, its API key
from the platform and never in the handle that travels through XCom."""

import json

import yaml

from llmbench import pipeline, warehouse
from llmbench.backends.openai.backend import OpenAIBackend
from llmbench.planning.plan import plan
from llmbench.testing._serve import ServerProcess


def _config(tmp_path, base_url: str):
    cfg = yaml.safe_load(open(__import__("llmbench.paths").paths.CONFIG_DIR / "openai-example.yaml"))
    cfg["targets"][0]["serving"]["base_url"] = base_url
    cfg["workload"] = {"input_tokens": 32, "output_tokens": 20, "concurrency": [1, 2], "requests_per_level": 4,
                       "warmup_requests": 1}
    path = tmp_path / "openai.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_an_existing_endpoint_is_benchmarked_and_published(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path))  # the default DuckDB warehouse lands here
    with ServerProcess("llmbench.testing.calibration", "--ttft-ms", "20", "--itl-ms", "2",
                       "--tokens", "20") as server:
        run = plan(str(_config(tmp_path, server.url + "/v1")), "2026-12-03", runs_root=tmp_path / "runs")
        (target,) = run.targets
        assert target.backend.kind == "openai" and target.price.usd_per_hour == 1.861
        kwargs = {"api_key": "sk-test-secret"}  # what the DAG reads from the Airflow connection
        handle = pipeline.deploy(target, **kwargs)
        try:
            assert "sk-test-secret" not in json.dumps(handle)  # XCom never carries the key
            assert OpenAIBackend(**kwargs).endpoint(handle).headers == {"Authorization": "Bearer sk-test-secret"}
            pipeline.wait_ready(target, handle, **kwargs)
            pipeline.warm_up(target, handle, **kwargs)
            swept = pipeline.sweep(target, handle, **kwargs)
            assert pipeline.validate(target, swept)["validation_passed"]
        finally:
            torn = pipeline.teardown(target, handle, **kwargs)
    assert torn["endpoint_seconds"] is None  # nothing was deployed: no endpoint-time to charge
    run_dir = pipeline.run_dir_of(run.targets)
    pipeline.price_performance(run_dir)
    out = pipeline.publish(run_dir)
    assert out["asset_extra"]["warehouse"] == {"kind": "duckdb", "path": str(tmp_path / "warehouse.duckdb"),
                                               "conn_id": None}
    assert out["asset_extra"]["rows"]["runs"] == 1 and out["asset_extra"]["targets_replaced"] == [target.target_id]
    db = out["warehouse"]
    t = warehouse.query("SELECT backend, status, usd_per_hour, price_source FROM llmbench.targets", target=db)
    assert t.values.tolist() == [["openai", "succeeded", 1.861, "config"]]
    pp = warehouse.query("SELECT concurrency, usd_per_m_output_tokens FROM llmbench.price_performance "
                         "ORDER BY concurrency", target=db)
    assert pp["concurrency"].tolist() == [1, 2] and (pp["usd_per_m_output_tokens"] > 0).all()


def test_an_openai_target_without_a_price_plans_with_no_price_and_says_why(tmp_path):
    cfg = yaml.safe_load(_config(tmp_path, "http://127.0.0.1:9/v1").read_text())
    del cfg["targets"][0]["usd_per_hour"]
    (tmp_path / "unpriced.yaml").write_text(yaml.safe_dump(cfg))
    (t,) = plan(str(tmp_path / "unpriced.yaml"), "2026-12-03", runs_root=tmp_path / "runs").targets
    assert t.price.basis == "none" and t.price.usd_per_hour is None and t.estimated_usd is None
    assert "no usd_per_hour" in (t.price.note or "")
