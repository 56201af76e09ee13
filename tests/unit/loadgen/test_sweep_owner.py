"""Issue 43: a sweep run again in its folder (a retry, a clear after a lost worker) never counts a
request twice. The newer try claims the folder; an older try still running stops at its next
level, and what it still appends goes to files the newer try has unlinked."""

import json

import pandas as pd
import pytest

from llmbench.backends.base import Endpoint
from llmbench.loadgen import owner, sweep
from llmbench.schemas.workload import Workload
from llmbench.testing import calibration
from llmbench.testing._serve import BackgroundServer

WORKLOAD = {"input_tokens": 8, "output_tokens": 4, "concurrency": [1, 2], "requests_per_level": 3,
            "request_timeout_s": 10, "warmup_requests": 0}


def _lines(path) -> int:
    return len(path.read_text().splitlines())


def test_a_sweep_run_twice_in_its_folder_keeps_the_second_tries_records_once(tmp_path):
    w = Workload.model_validate(WORKLOAD)
    with BackgroundServer(calibration.make_app(ttft_ms=2, itl_ms=1, tokens=4)) as server:
        endpoint = Endpoint(server.url + "/v1/chat/completions", keep_alive=True)
        sweep.run_sweep(endpoint, w, tmp_path)
        first_owner = (tmp_path / owner.OWNER_FILE).read_text()
        stale = (tmp_path / "requests.jsonl").open("ab")  # an older try's handle, still open
        result = sweep.run_sweep(endpoint, w, tmp_path)
        stale.write(b'{"late": "record"}\n')  # lands in the unlinked file, not the new one
        stale.close()
    assert (tmp_path / owner.OWNER_FILE).read_text() != first_owner
    assert _lines(tmp_path / "requests.jsonl") == 3 + 3
    assert len(pd.read_parquet(result.requests_path)) == 6
    assert pd.read_parquet(result.levels_path)["requests_attempted"].tolist() == [3, 3]
    assert not list(tmp_path.glob("*.tmp"))


def test_an_older_try_stops_at_its_next_level_once_a_newer_one_claimed_the_folder(tmp_path):
    w = Workload.model_validate(WORKLOAD)
    claimed = []

    def newer_try_starts(_record) -> None:  # as a retry on another worker would, mid-level
        if not claimed:
            claimed.append(owner.own(tmp_path))

    with BackgroundServer(calibration.make_app(ttft_ms=2, itl_ms=1, tokens=4)) as server:
        endpoint = Endpoint(server.url + "/v1/chat/completions", keep_alive=True)
        with pytest.raises(owner.SweepSuperseded, match=r"a newer try of this sweep .* took over its folder"):
            sweep.run_sweep(endpoint, w, tmp_path, record_hook=newer_try_starts)
    assert not (tmp_path / "levels.parquet").exists()  # it wrote no level after losing the folder
    assert json.loads((tmp_path / "requests.jsonl").read_text().splitlines()[0])["concurrency"] == 1
