"""issue 18 #3: a server that streams bytes as fast as it can (llmbench.testing.flood) cannot
take the load generator's memory, nor hold a request past its deadline: each request ends as
response_too_large past the workload's byte budget, or as timeout at its deadline, and the
client's peak RSS stays bounded."""

import json
import subprocess
import sys

import pandas as pd
import pytest

from llmbench.testing._serve import ServerProcess

pytestmark = pytest.mark.integration

# The sweep runs in a process of its own so that its peak RSS (and its record builder's) is its own.
# Peak RSS of this process image: /proc's VmHWM, not getrusage's ru_maxrss, which a child inherits
# from the process that forked it (a pytest process that loaded Airflow before reported 460 MB here).
PEAK_RSS = """
def peak_rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
"""

SWEEP = PEAK_RSS + """
import json, resource, sys, time
from pathlib import Path
from llmbench.backends.base import Endpoint
from llmbench.loadgen.sweep import run_sweep
from llmbench.schemas.workload import Workload
url, out, spec = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3])
t0 = time.monotonic()
run_sweep(Endpoint(url + "/v1/chat/completions"), Workload.model_validate(spec), out)
print(json.dumps({"wall_s": time.monotonic() - t0,
                  "rss_mb": peak_rss_mb(),
                  "children_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def _sweep(url, tmp_path, **workload):
    spec = {"input_tokens": 8, "output_tokens": 4, "warmup_requests": 0, **workload}
    p = subprocess.run([sys.executable, "-c", SWEEP, url, str(tmp_path), json.dumps(spec)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1]), pd.read_parquet(tmp_path / "requests.parquet")


def test_an_unthrottled_flood_ends_each_request_at_the_byte_budget(tmp_path):
    with ServerProcess("llmbench.testing.flood") as flood:
        stats, rq = _sweep(flood.url, tmp_path, concurrency=[1, 4], requests_per_level=4, request_timeout_s=5,
                           max_response_bytes=4 << 20)
    assert len(rq) == 8
    assert set(rq["error_kind"]) <= {"response_too_large", "timeout"}
    assert (rq["error_kind"] == "response_too_large").sum() >= 1
    assert (rq["e2e_ms"].dropna() <= 5_000 + 500).all()
    # before: 2.36 GB at 50 MB/s; now a few budgets in flight at most
    assert stats["rss_mb"] < 500 and stats["children_rss_mb"] < 500, stats


def test_the_deadline_holds_however_fast_bytes_arrive(tmp_path):
    with ServerProcess("llmbench.testing.flood", "--mb-per-s", "20") as flood:
        stats, rq = _sweep(flood.url, tmp_path, concurrency=[1, 2], requests_per_level=2, request_timeout_s=2,
                           max_response_bytes=64 << 20)
    assert list(rq["error_kind"]) == ["timeout"] * 4
    # before: one request ran 6.4 s past a 5 s timeout
    ends = (rq["end_ns"] - rq["send_ns"]) / 1e9
    assert (ends <= 2 + 0.5).all(), ends.tolist()
    assert stats["wall_s"] < 3 * 2 + 6, stats  # three rounds of 2 s, and what a timed-out record keeps is bounded
    assert stats["rss_mb"] < 800, stats


# The quality stage's requests (llmbench.quality.ask, non-streaming) are bounded the same way: before,
# it read the whole body with r.read() and only urllib's per-read timeout, so a flood took memory
# and time without end.
ASK = PEAK_RSS + """
import json, sys, time
from llmbench.backends.base import Endpoint
from llmbench.quality.runner import run_quality
from llmbench.schemas.targets import QualitySettings
from pathlib import Path
url, out, timeout_s, max_bytes = sys.argv[1], Path(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
t0 = time.monotonic()
settings = QualitySettings(suites=["exact"], runs=1, max_tokens=8, request_timeout_s=timeout_s, concurrency=1)
s = run_quality(Endpoint(url + "/v1/chat/completions"), settings, out, max_response_bytes=max_bytes)
print(json.dumps({"wall_s": time.monotonic() - t0, "summary": s,
                  "rss_mb": peak_rss_mb()}))
"""


def _quality(url, tmp_path, timeout_s, max_bytes, items):
    p = subprocess.run([sys.executable, "-c", ASK, url, str(tmp_path), str(timeout_s), str(max_bytes)],
                       capture_output=True, text=True, timeout=30 + items * timeout_s * 3)
    assert p.returncode == 0, p.stderr[-3000:]
    lines = [json.loads(x) for x in (tmp_path / "quality.jsonl").read_text().splitlines()]
    return json.loads(p.stdout.strip().splitlines()[-1]), lines


def test_quality_requests_end_at_the_byte_budget(tmp_path):
    from llmbench import quality

    items = len(quality.EXACT_ITEMS)
    with ServerProcess("llmbench.testing.flood") as flood:
        stats, lines = _quality(flood.url, tmp_path, 30, 4 << 20, items)
    exact = stats["summary"]["suites"]["exact"]
    assert len(lines) == items and {k: exact[k] for k in ("status", "score", "n", "passed", "reason")} == {
        "status": "scored", "score": 0.0, "n": items, "passed": 0, "reason": None}
    for x in lines:
        assert x["error"] == f"response_too_large: more than {4 << 20} bytes", x["error"]
        assert x["reason"] == f"request failed: {x['error']}" and not x["passed"]
        assert len(x["raw"]) <= 2000  # what is kept of it is bounded too
    assert stats["wall_s"] < items * 5, stats  # each ends at 4 MiB, not at its 30 s deadline
    assert stats["rss_mb"] < 300, stats


@pytest.mark.parametrize("close", [False, True], ids=["keep-alive", "connection-close"])
def test_quality_requests_end_at_their_deadline_however_fast_bytes_arrive(tmp_path, close):
    """With `Connection: close`, http.client lets go of the connection's socket while the response
    still reads from it: the deadline must reach that socket too."""
    from llmbench import quality

    items = len(quality.EXACT_ITEMS)
    with ServerProcess("llmbench.testing.flood", "--mb-per-s", "20", *(["--close"] if close else [])) as flood:
        stats, lines = _quality(flood.url, tmp_path, 0.5, 1 << 30, items)
    assert len(lines) == items
    assert all(x["error"] == "timeout: no complete response within 0.5 s" for x in lines), lines[0]["error"]
    assert all(x["seconds"] <= 0.5 + 0.3 for x in lines), [x["seconds"] for x in lines]
    assert stats["rss_mb"] < 300, stats  # 0.5 s at 20 MB/s: 10 MB per request at most


# The tokenizer probe (loadgen.tokenizer, prompts sized with the served model's own counts) asks
# the server before a sweep's levels: it is bounded as a request is. Reverted once (stop 36) because
# it read a flooding reply whole and the sweep's process was SIGKILLed.
PROBE = PEAK_RSS + """
import json, sys, time
from llmbench.backends.base import Endpoint
from llmbench.loadgen.tokenizer import sizing_for
url, budget_s, max_bytes = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
t0 = time.monotonic()
sizing = sizing_for(Endpoint(url + "/v1/chat/completions"), 0, 0, 1, budget_s=budget_s, max_bytes=max_bytes)
print(json.dumps({"wall_s": time.monotonic() - t0, "sized": sizing is not None, "rss_mb": peak_rss_mb()}))
"""


@pytest.mark.parametrize(("mb_per_s", "budget_s", "max_bytes"), [(0, 30, 4 << 20), (20, 1.5, 1 << 30)],
                         ids=["flood-at-the-byte-budget", "trickle-at-the-deadline"])
def test_the_tokenizer_probe_gives_up_on_a_flood_within_its_bounds(mb_per_s, budget_s, max_bytes):
    stats = _against_a_flood(PROBE, mb_per_s, budget_s, max_bytes)
    assert not stats["sized"]  # words ~ tokens stands


def _against_a_flood(script: str, mb_per_s: float, budget_s: float, max_bytes: int) -> dict:
    """Run `script` in a fresh process against a flood server (0: as fast as it can, else that many
    MB/s) and hold it to its bounds: the flood, one reply past max_bytes ends it at once; the
    trickle, the one deadline, not one per request; memory under 300 MB. Returns what it printed."""
    with ServerProcess("llmbench.testing.flood", "--mb-per-s", str(mb_per_s)) as flood:
        p = subprocess.run([sys.executable, "-c", script, flood.url, str(budget_s), str(max_bytes)],
                           capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-3000:]
    stats = json.loads(p.stdout.strip().splitlines()[-1])
    assert stats["wall_s"] < (5 if mb_per_s == 0 else budget_s + 0.5), stats
    assert stats["rss_mb"] < 300, stats
    return stats


# A dataset level's prompts are counted the same way before the level (tokenizer.count_prompts):
# one budget for all of them, not one per prompt.
COUNT = PEAK_RSS + """
import json, sys, time
from llmbench.backends.base import Endpoint
from llmbench.loadgen.prompts import Prompt
from llmbench.loadgen.tokenizer import count_prompts
url, budget_s, max_bytes = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
prompts = ((k, Prompt(k, "a row of a dataset", 4)) for k in range(1000))
t0 = time.monotonic()
counts = count_prompts(Endpoint(url + "/v1/chat/completions"), prompts, budget_s=budget_s, max_bytes=max_bytes)
print(json.dumps({"wall_s": time.monotonic() - t0, "counted": len(counts), "rss_mb": peak_rss_mb()}))
"""


@pytest.mark.parametrize(("mb_per_s", "budget_s", "max_bytes"), [(0, 30, 4 << 20), (20, 1.5, 1 << 30)],
                         ids=["flood-at-the-byte-budget", "trickle-at-the-deadline"])
def test_counting_a_datasets_prompts_gives_up_on_a_flood_within_its_bounds(mb_per_s, budget_s, max_bytes):
    stats = _against_a_flood(COUNT, mb_per_s, budget_s, max_bytes)
    assert stats["counted"] == 0  # no client count: the records keep NULL
