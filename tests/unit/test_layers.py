"""Layering: the request record is defined once (records.RequestRecord) and the warehouse's
`requests` table agrees with it; every module imports on its own, and the record-building side
(wire, recordworker) never loads the load generator."""

import json
import os
import pkgutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

import llmbench
from llmbench import warehouse
from llmbench.records import COLUMNS, RequestRecord, request_schema

# What publish adds to each record in the warehouse's requests table.
PUBLISH_COLUMNS = {"run_key": "VARCHAR", "target_id": "VARCHAR", "validation_passed": "BOOLEAN"}
ARROW_TO_SQL = {pa.int32(): "INTEGER", pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.string(): "VARCHAR",
                pa.bool_(): "BOOLEAN", pa.list_(pa.float64()): "DOUBLE[]"}


def test_warehouse_requests_table_has_the_records_columns_and_types(tmp_path):
    con = warehouse.connect(tmp_path / "w.duckdb")  # a fresh file, every migration applied
    try:
        table = dict(con.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = 'llmbench' AND table_name = 'requests'").fetchall())
    finally:
        con.close()
    record = {f.name: ARROW_TO_SQL[f.type] for f in request_schema()}
    assert table == {**record, **PUBLISH_COLUMNS}


def test_the_parquet_schema_is_the_records_fields_in_order_and_a_json_line_round_trips():
    assert request_schema().names == list(COLUMNS) == list(RequestRecord.__dataclass_fields__)
    assert len(COLUMNS) == 24 and COLUMNS[-3:] == ("repeat", "arrival_rate_rps", "send_retried")
    rec = RequestRecord(
        concurrency=4, request_index=7, worker=-1, ok=True, error_kind=None, error_detail=None, http_status=200,
        send_ns=10, first_content_ns=20, end_ns=40, send_lag_ms=0.25, ttft_ms=1e-5, e2e_ms=3e-5, tpot_ms=1e-5,
        itl_ms=[1e-5, 1e-5], content_chunks=3, output_tokens=3, output_tokens_source="usage",
        output_tokens_counted=3, input_tokens=30, finish_reason="length", repeat=1, arrival_rate_rps=2.5,
        send_retried=False)
    assert RequestRecord.from_row(json.loads(json.dumps(rec.to_row()))) == rec
    assert RequestRecord(*rec.values()) == rec
    assert pa.Table.from_pylist([rec.to_row()], schema=request_schema()).to_pylist() == [rec.to_row()]


MODULES = sorted(m.name for m in pkgutil.walk_packages(llmbench.__path__, "llmbench."))
_PROBE = "import json, sys, {m}; print(json.dumps(sorted(k for k in sys.modules if k.startswith('llmbench'))))"


def _import_alone(module: str) -> tuple[str, int, str, list[str]]:
    r = subprocess.run([sys.executable, "-c", _PROBE.format(m=module)], capture_output=True, text=True, timeout=120)
    loaded = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else []
    return module, r.returncode, r.stderr, loaded


def test_every_module_imports_alone_and_record_building_never_loads_the_load_generator():
    assert {"llmbench.records", "llmbench.wire", "llmbench.loadgen", "llmbench.sweep"} <= set(MODULES)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:  # a fresh interpreter each
        results = {m: (rc, err, loaded) for m, rc, err, loaded in pool.map(_import_alone, MODULES)}
    failed = {m: err.strip().splitlines()[-1:] for m, (rc, err, _) in results.items() if rc != 0}
    assert not failed, failed
    loaded = {m: set(mods) for m, (_, _, mods) in results.items()}
    for m in ("llmbench.wire", "llmbench.recordworker"):
        assert not loaded[m] & {"llmbench.loadgen", "llmbench.sweep"}, (m, sorted(loaded[m]))
    assert loaded["llmbench.records"] == {"llmbench", "llmbench.records"}  # depends on nothing of ours
    assert "llmbench.sweep" not in loaded["llmbench.loadgen"]  # the driver does not know the sweep
