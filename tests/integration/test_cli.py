"""`llmbench sweep` against a real llama-server through the OpenAI-compatible API."""

import subprocess

import pandas as pd

from .conftest import BIN


def test_cli_sweep_writes_real_measurements(local_server, tmp_path):
    out = tmp_path / "sweep"
    r = subprocess.run(
        [str(BIN / "llmbench"), "sweep", "--backend", "openai", "--url", local_server["base_url"] + "/v1",
         "--concurrency", "1,2", "--requests-per-level", "3", "--input-tokens", "64", "--output-tokens", "16",
         "--warmup", "1", "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "level 2/2: concurrency 2" in r.stderr  # progress
    assert "output_tokens_per_s" in r.stdout  # summary table
    req = pd.read_parquet(out / "requests.parquet")
    lv = pd.read_parquet(out / "levels.parquet")
    assert len(req) == 6 and req["ok"].all()
    assert {"concurrency", "ok", "error_kind", "ttft_ms", "e2e_ms", "output_tokens"} <= set(req.columns)
    assert (req["ttft_ms"] > 0).all() and (req["e2e_ms"] > req["ttft_ms"]).all()
    assert (req["output_tokens"] == 16).all()  # ignore_eos: exactly what was asked
    assert (req["output_tokens_source"] == "usage").all()
    assert (req["input_tokens"] > 32).all()
    assert sorted(lv["concurrency"]) == [1, 2]
    for col in ("requests_ok", "requests_failed", "error_rate", "ttft_ms_p50", "ttft_ms_p99", "itl_ms_mean",
                "itl_ms_p50", "tpot_ms_p50", "e2e_ms_p50", "output_tokens_per_s", "requests_per_s"):
        assert col in lv.columns
    assert (lv["output_tokens_per_s"] > 0).all() and (lv["error_rate"] == 0).all()
    assert (lv["achieved_concurrency"] > lv["concurrency"] * 0.5).all()


def test_cli_refuses_bad_levels(tmp_path):
    r = subprocess.run([str(BIN / "llmbench"), "sweep", "--url", "http://127.0.0.1:9/v1", "--concurrency", "0",
                        "--out", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 2 and ">= 1" in r.stderr


def test_cli_plan_refuses_bad_configs_in_one_line(tmp_path):
    import yaml

    from llmbench import paths

    cases = {
        "instance_type": lambda c: c["targets"][0].update(instance_type="ml.z9.huge"),
        "concurrency": lambda c: c["workload"].update(concurrency=[0]),
        "colour": lambda c: c.update(colour="blue"),
    }
    for field, mutate in cases.items():
        cfg = yaml.safe_load((paths.CONFIG_DIR / "local.yaml").read_text())
        mutate(cfg)
        p = tmp_path / f"{field}.yaml"
        p.write_text(yaml.safe_dump(cfg))
        r = subprocess.run([str(BIN / "llmbench"), "plan", "--config", str(p)], capture_output=True, text=True)
        assert r.returncode == 2, r.stdout + r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and field in lines[0], r.stderr
    r = subprocess.run([str(BIN / "llmbench"), "plan", "--config", "sagemaker-seed-000"], capture_output=True, text=True)
    assert r.returncode == 0 and "estimated total" in r.stdout and r.stdout.count("ml.g") >= 8
