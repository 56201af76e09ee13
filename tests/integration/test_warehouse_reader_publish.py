"""issue 18 #5, end to end: a run's publish while a BI tool holds the DuckDB file fails in one
line naming the holder; the documented recovery (`llmbench publish RUN_DIR`) then publishes, and
runs.report_path names a report that exists."""

from pathlib import Path

import pytest

from llmbench import cli, pipeline, warehouse
from llmbench.planning.plan import plan
from llmbench.testing._serve import ServerProcess
from tests.integration.test_openai_target import _config
from tests.unit.warehouse.test_warehouse_readers import Reader

pytestmark = pytest.mark.integration


def test_publish_blocked_by_a_reader_then_recovered_with_its_report(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path))
    monkeypatch.setattr(warehouse.store, "LOCK_WAIT_S", 1.0)
    with ServerProcess("llmbench.testing.calibration", "--ttft-ms", "5", "--itl-ms", "1", "--tokens", "20") as server:
        run = plan(str(_config(tmp_path, server.url + "/v1")), "2026-12-03", runs_root=tmp_path / "runs")
        (target,) = run.targets
        kwargs = {"api_key": "k"}
        handle = pipeline.deploy(target, **kwargs)
        try:
            pipeline.wait_ready(target, handle, **kwargs)
            pipeline.warm_up(target, handle, **kwargs)
            pipeline.validate(target, pipeline.sweep(target, handle, **kwargs))
        finally:
            pipeline.teardown(target, handle, **kwargs)
    run_dir = pipeline.run_dir_of(run.targets)
    pipeline.price_performance(run_dir)
    db = tmp_path / "warehouse.duckdb"
    warehouse.connect(db).close()  # the file a dashboard opened
    with Reader(db, "ro") as reader:
        with pytest.raises(warehouse.WarehouseBusy, match=rf"\(PID {reader.proc.pid}\)"):
            pipeline.publish(run_dir)
        assert cli.main(["show", "--warehouse", str(db)]) == 1  # nothing published yet: said in one line
    capsys.readouterr()
    (Path(run_dir) / "report.html").unlink(missing_ok=True)  # as if the report task never ran
    assert cli.main(["publish", run_dir]) == 0
    report_path = warehouse.query("SELECT report_path FROM llmbench.runs", target=db)["report_path"][0]
    assert Path(report_path).is_file() and Path(report_path).stat().st_size > 1000
    assert cli.main(["show", "--warehouse", str(db)]) == 0
