"""The real vLLM server for integration tests: one per module, started by the local backend itself
(serving.kind vllm, the venv and model `make vllm` built), stopped as a process group after.
Absent venv: every test that needs it is skipped with one line saying why (CI builds it)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from llmbench.backends.local import vllm
from llmbench.backends.local.backend import LocalBackend, group_members
from llmbench.schemas.targets import VllmServing


def need_vllm() -> None:
    why = vllm.missing()
    if why:
        pytest.skip(f"vLLM tests skipped: {why}")


class VllmServer:
    """A running vLLM: its handle, base URL and startup seconds."""

    def __init__(self, serving: VllmServing, work_dir: Path):
        self.backend = LocalBackend()
        t0 = time.monotonic()
        self.handle = self.backend.start_vllm(serving, work_dir, die_with_parent=True)
        try:
            self.backend.wait_ready(self.handle, 300)
        except BaseException:
            self.stop()
            raise
        self.ready_s = time.monotonic() - t0
        self.base_url = self.handle["base_url"]

    def stop(self) -> None:
        self.backend.teardown(self.handle)
        assert not group_members(self.handle["pgid"])


def small_vllm(**knobs) -> VllmServing:
    return VllmServing(name="test-vllm", max_model_len=2048, max_num_seqs=4, **knobs)
