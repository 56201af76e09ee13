"""issue 18 #2: kill -9 of a sweep whose level is split over load-generator processes: the
children (and their record builders) die with it, the server sees no request after, and every
record that completed before the kill is in requests.jsonl."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from llmbench.testing import calibration
from llmbench.testing._serve import ServerProcess

pytestmark = pytest.mark.integration

SWEEP = """
import sys
from pathlib import Path
from llmbench.backends.base import Endpoint
from llmbench.loadgen.sweep import run_sweep
from llmbench.schemas.workload import Workload
w = Workload.model_validate({"input_tokens": 16, "output_tokens": 10, "concurrency": [8], "requests_per_level": 100000,
                             "request_timeout_s": 30, "client_processes": 2, "warmup_requests": 0})
run_sweep(Endpoint(sys.argv[1] + "/v1/chat/completions", keep_alive=True), w, Path(sys.argv[2]))
"""


def descendants(pid: int) -> set[int]:
    """Every live process below pid, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    rest = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if rest[0] != "Z":
                children.setdefault(int(rest[1]), []).append(int(entry))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.add(c)
            todo.append(c)
    return out


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_for(cond, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(what)


def test_kill_9_of_a_split_sweep_takes_its_load_generators_with_it(tmp_path):
    out = tmp_path / "out"
    with ServerProcess("llmbench.testing.calibration", "--ttft-ms", "30", "--itl-ms", "3", "--tokens", "10") as server:
        sweep = subprocess.Popen([sys.executable, "-c", SWEEP, server.url, str(out)])
        kids: set[int] = set()
        try:
            jsonl = out / "requests.jsonl"
            # records reach requests.jsonl as they complete, from the child processes themselves
            wait_for(lambda: jsonl.exists() and len(jsonl.read_text().splitlines()) >= 16, 120,
                     "no records in requests.jsonl")
            kids = descendants(sweep.pid)
            assert len(kids) >= 2  # the two load generators (and their record builders)
            sweep.send_signal(signal.SIGKILL)
            sweep.wait(10)
            wait_for(lambda: not any(alive(k) for k in kids), 10,
                     f"orphans still alive: {[k for k in kids if alive(k)]}")
            seen = calibration.fetch_record(server.url)["requests"]
            time.sleep(1.5)
            assert calibration.fetch_record(server.url)["requests"] == seen  # nothing sent after
        finally:
            for k in kids | {sweep.pid}:  # reap what the test spawned, whatever happened
                if alive(k):
                    os.kill(k, signal.SIGKILL)
    lines = jsonl.read_text().splitlines()
    rows = [json.loads(x) for x in lines[:-1]]  # the last line may be cut by the kill
    assert len(rows) >= 15 and all("request_index" in r for r in rows)
    assert not list(out.glob("requests.part*"))
    # issue 18 #10: the tables the kill left unwritten are rebuilt from requests.jsonl
    import pandas as pd

    from llmbench import cli

    assert cli.main(["rebuild", str(out)]) == 0
    (level,) = pd.read_parquet(out / "levels.parquet").to_dict("records")
    assert level["concurrency"] == 8 and level["requests_ok"] >= len(rows) and level["requests_failed"] == 0
    assert len(pd.read_parquet(out / "requests.parquet")) == level["requests_ok"]
