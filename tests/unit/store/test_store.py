"""The results store (issue 42 item 5), on the local disk and on a real S3 wire (moto's server,
reached through s3fs and the standard AWS environment): listing, whole-or-absent writes, a
missing object in one line."""

import pytest

from llmbench.store import HIVE, LEGACY, ObjectMissing, ResultsStore, StoreError


@pytest.fixture(params=["local", "s3"])
def store(request, tmp_path):
    if request.param == "local":
        return ResultsStore(tmp_path / "results")
    bucket = request.getfixturevalue("s3_env")
    return ResultsStore(f"s3://{bucket}/llmbench")


def test_put_get_list_and_delete(store):
    assert store.list_keys() == [] and store.list_dirs("runs") == []
    store.put_text("runs/a/1/plan.json", '{"x": 1}')
    store.put_bytes("runs/a/1/t/requests.parquet", b"PAR1")
    store.put_text("runs/a/2/plan.json", "{}")
    assert store.list_keys("runs/a") == ["runs/a/1/plan.json", "runs/a/1/t/requests.parquet", "runs/a/2/plan.json"]
    assert store.list_dirs("runs/a") == ["runs/a/1", "runs/a/2"]
    assert store.get_text("runs/a/1/plan.json") == '{"x": 1}' and store.exists("runs/a/2/plan.json")
    assert store.key_of(store.uri("runs/a/1")) == "runs/a/1"
    assert store.delete("runs/a/1") == 2
    assert store.list_keys() == ["runs/a/2/plan.json"]


def test_a_write_that_fails_half_way_leaves_no_object_and_keeps_the_last_one(store):
    with store.writer("t/levels.parquet") as f:
        f.write(b"first, whole")
    with pytest.raises(RuntimeError, match="disk full"), store.writer("t/levels.parquet") as f:
        f.write(b"half a Parq")
        raise RuntimeError("disk full")
    with pytest.raises(RuntimeError), store.writer("t/requests.parquet") as f:
        f.write(b"half")
        raise RuntimeError("killed")
    assert store.get_bytes("t/levels.parquet") == b"first, whole"
    assert not store.exists("t/requests.parquet") and store.list_keys("t") == ["t/levels.parquet"]


def test_a_missing_object_is_one_line_naming_it(store):
    with pytest.raises(ObjectMissing) as e:
        store.get_text("runs/k/a/plan.json")
    assert str(e.value) == f"{store.uri('runs/k/a/plan.json')}: no such object in the results store"
    with pytest.raises(StoreError, match="is not in the results store"):
        store.key_of("s3://elsewhere/x" if store.remote else "/elsewhere/x")


def test_the_layouts():
    assert LEGACY.attempt("local-2026-12-06", "20261207T0") == "runs/local-2026-12-06/20261207T0"
    attempt = HIVE.attempt("local-2026-12-06", "20261207T0")
    assert attempt == "runs/date=2026-12-06/run_key=local-2026-12-06/attempt=20261207T0"
    assert HIVE.target(attempt, "t1").endswith("/attempt=20261207T0/target=t1")
    assert HIVE.name_of(HIVE.target(attempt, "t1")) == "t1" and LEGACY.name_of("runs/k/a/t1") == "t1"


def test_an_object_store_is_laid_out_for_athena(s3_env):
    assert ResultsStore(f"s3://{s3_env}/p").layout is HIVE and ResultsStore("/tmp/x").layout is LEGACY
