"""A short `llmbench sweep` against the independent aiohttp server (testing.paced) held against
its schedule: the deficit and the turnaround columns are computed and sane. No timing targets
here (the machine may be shared): those are the bench's (benchmarks/offered_load.py)."""

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from llmbench.analysis import metrics
from llmbench.testing import paced
from llmbench.testing._serve import ServerProcess

from .conftest import BIN

ROOT = Path(__file__).resolve().parents[2]
TTFT_MS, ITL_MS, TOKENS = 40.0, 4.0, 32
STREAMS, REQUESTS = 16, 64


def _sweep(server, out, *flags):
    return subprocess.run(
        [str(BIN / "llmbench"), "sweep", "--backend", "openai", "--url", server.url + "/v1",
         "--concurrency", str(STREAMS), "--requests-per-level", str(REQUESTS), "--input-tokens", "16",
         "--output-tokens", str(TOKENS), "--warmup", "1", "--out", str(out), *flags],
        capture_output=True, text=True, timeout=300,
    )


def test_a_short_sweep_is_held_against_the_schedule(tmp_path):
    out = tmp_path / "sweep"
    with ServerProcess("llmbench.testing.paced", "--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS),
                       "--tokens", "999") as server:  # the request's max_tokens must win over the default
        r = _sweep(server, out)
        assert r.returncode == 0, r.stdout + r.stderr
        served = paced.fetch_record(server.url)["requests"]
    assert len(served) == REQUESTS + 1 and all(s["tokens"] == TOKENS for s in served)  # + the warm-up
    # One connection per stream, kept for its requests (the openai backend's default), + the warm-up's.
    assert len({s["port"] for s in served}) == STREAMS + 1

    lv = pd.read_parquet(out / "levels.parquet").iloc[0]
    records = [SimpleNamespace(**json.loads(line)) for line in (out / "requests.jsonl").open()]
    assert len(records) == REQUESTS and all(x.ok and x.output_tokens == TOKENS for x in records)
    row = metrics.offered_load(records, STREAMS, TTFT_MS, ITL_MS, TOKENS, float(lv["output_tokens_per_s"]),
                               float(lv["achieved_concurrency"]))
    ideal = STREAMS * TOKENS / ((TTFT_MS + (TOKENS - 1) * ITL_MS) / 1000)
    assert row["schedule_output_tokens_per_s"] == ideal
    # Below the schedule (a real client and server take time the schedule does not), but not absurdly.
    assert 0 < row["output_tokens_per_s"] <= ideal * 1.02
    assert -2 <= row["schedule_deficit_pct"] < 50
    assert row["schedule_deficit_pct"] == 100 * (1 - row["output_tokens_per_s"] / ideal)
    assert STREAMS / 2 < row["achieved_concurrency"] <= STREAMS + 0.01
    # Every stream sent REQUESTS / STREAMS requests: one turnaround between each consecutive pair.
    assert row["turnarounds"] == REQUESTS - STREAMS == len(metrics.turnaround_ms(records))
    assert 0 <= row["turnaround_ms_p50"] <= row["turnaround_ms_p99"] <= row["turnaround_ms_max"]
    e2e_min = min(x.e2e_ms for x in records)
    assert row["turnaround_ms_max"] < e2e_min  # turning a request round takes less than serving one
    assert {x.worker for x in records} == set(range(STREAMS))


def test_no_keep_alive_opens_a_connection_per_request(tmp_path):
    with ServerProcess("llmbench.testing.paced", "--ttft-ms", "5", "--itl-ms", "1", "--tokens", "8") as server:
        r = _sweep(server, tmp_path / "sweep", "--no-keep-alive")
        assert r.returncode == 0, r.stdout + r.stderr
        served = paced.fetch_record(server.url)["requests"]
    assert len(served) == REQUESTS + 1 and len({s["port"] for s in served}) == REQUESTS + 1


def test_the_bench_writes_its_table_without_peers(tmp_path):
    """benchmarks/offered_load.py end to end at a small size, peers off: its row carries the
    schedule, the deficit and the turnaround."""
    out = tmp_path / "ol"
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "offered_load.py"), "--streams", "8", "--requests", "24",
         "--runs", "1", "--peers", "none", "--no-close-row", "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    result = json.loads(Path(str(out) + ".json").read_text())
    row, floor = result["rows"]  # llmbench, then the floor (benchmarks/reference_client.py) in turn
    assert row["client"] == "llmbench sweep" and row["requests_failed"] == 0
    assert floor["client"] == "reference: aiohttp closed loop" and floor["requests_failed"] == 0
    assert -2 <= floor["deficit_pct"] < 50 and floor["server_cpu_pct"] is not None
    assert result["server_loop"] == "uvloop"
    for r in (row, floor):  # the server's handler starts after the send, and not absurdly late
        assert 0 < r["server_admit_ms_p50"] <= r["server_admit_ms_p90"] < 1000
    assert row["schedule_tps"] == round(metrics.schedule_output_tokens_per_s(8, 100, 10, 256), 1)
    assert row["deficit_pct"] is not None and -2 <= row["deficit_pct"] < 50
    assert 0 <= row["turnaround_ms_p50"] <= row["turnaround_ms_max"]
    assert "| llmbench sweep | 8 |" in Path(str(out) + ".md").read_text()
