"""Issue 26 defect 12: a sweep whose --out fills its disk ends in one line (exit 1), the records
written so far kept. The disk is real: a 256 KiB tmpfs mounted for the test (root only; skipped
where mounting is not allowed), nearly filled, so the sweep's own writes hit ENOSPC. The server is
the paced test server (a real aiohttp process)."""

import json
import subprocess
import sys

import pytest

from llmbench.testing._serve import ServerProcess

from .conftest import ROOT

pytestmark = pytest.mark.integration


@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / "disk"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        (mnt / "fill").write_bytes(b"\0" * (232 << 10))  # 24 KiB left: a warm-up fits, a level does not
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_sweep_that_fills_its_disk_ends_in_one_line_and_keeps_its_records(small_disk):
    out = small_disk / "out"
    with ServerProcess("llmbench.testing.paced", "--ttft-ms", "2", "--itl-ms", "1", "--tokens", "16") as server:
        r = subprocess.run(
            [sys.executable, "-m", "llmbench.cli.main", "sweep", "--backend", "openai", "--url", server.url + "/v1",
             "--concurrency", "2", "--requests-per-level", "400", "--timeout", "10", "--out", str(out)],
            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stderr[-3000:]
    assert "Traceback" not in r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last == f"llmbench sweep: --out {out}: No space left on device; the records written so far stay in {out}"
    kept = [json.loads(line) for line in (out / "requests.jsonl").read_text().splitlines()[:-1]]
    assert kept and all(rec["ok"] for rec in kept)  # every complete line written before the disk filled
