"""A run whose results store is S3 (issue 42): the six-path run of test_path_comparison planned
with LLMBENCH_RESULTS_URI=s3://<bucket>/llmbench, each target's raw results written by a task on
its local copy and uploaded (workspace.working, as every per-target task does), then
price_performance, publish, report and check from the store alone; a partial re-run inherits from
the store; a reprocess recomputes from it; retention prunes it. Nothing is left on the local disk
but the warehouse."""

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from llmbench import pipeline, warehouse
from llmbench.planning.plan import plan
from llmbench.results.retention import prune_store
from llmbench.results import workspace
from llmbench.results.union import UnionSourceMissing
from llmbench.store import ResultsStore

from tests.unit.results.test_path_comparison import CONFIG, DATE
from tests.unit.results.test_union import _measure

# The whole pipeline against moto's S3 server, GX validation included (about 17 s of a worker):
# `make test` runs it; test-fast keeps the store's own tests (test_store.py) against the same server.
pytestmark = pytest.mark.integration


@pytest.fixture
def env(tmp_path, monkeypatch, s3_env):
    home = tmp_path / "home"
    monkeypatch.setenv("LLMBENCH_HOME", str(home))
    monkeypatch.setenv("LLMBENCH_RESULTS_URI", f"s3://{s3_env}/llmbench")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(CONFIG))
    return cfg, home, ResultsStore(f"s3://{s3_env}/llmbench")


def _measured_in_store(run, concurrencies=(1, 2)):
    """Each target's raw results as its sweep task leaves them: written on a local copy, uploaded."""
    for t in run.targets:
        with workspace.working(t) as (local, _):
            _measure(run.model_copy(update={"targets": [local]}), concurrencies)


def _run(cfg, params=None, concurrencies=(1, 2)):
    run = plan(str(cfg), DATE, params)
    _measured_in_store(run, concurrencies)
    pipeline.price_performance(run.run_dir)
    out = pipeline.publish(run.run_dir)
    pipeline.report(run.run_dir)
    return run, out


def test_a_run_lives_in_the_store_and_a_partial_rerun_and_a_reprocess_read_it_there(env):
    cfg, home, store = env
    first, out = _run(cfg)
    attempt = store.key_of(first.run_dir)
    assert first.run_dir.startswith(f"s3://{store.root}/runs/date={DATE}/run_key=paths-compared-{DATE}/attempt=")
    keys = store.list_keys(attempt)
    for t in first.targets:  # every stage's objects, Hive-partitioned by target
        for name in ("requests.parquet", "levels.parquet", "validation.json", "events.jsonl"):
            assert f"{attempt}/target={t.target_id}/{name}" in keys, (t.target_id, name)
    assert {f"{attempt}/plan.json", f"{attempt}/report.html", f"{attempt}/published.json",
            f"{attempt}/tables/levels.parquet"} <= set(keys)
    db = out["warehouse"]
    raw = warehouse.query("SELECT target_id, raw_dir FROM llmbench.targets", [], db)
    assert all(d == store.uri(f"{attempt}/target={t}") for t, d in raw.values.tolist())  # rows name the objects
    (run_dir, report) = warehouse.query("SELECT run_dir, report_path FROM llmbench.runs", [], db).values.tolist()[0]
    assert run_dir == first.run_dir and report == f"{first.run_dir}/report.html"
    assert not (home / "runs").exists()  # nothing measured was kept on this disk
    assert pipeline.check(first.run_dir).startswith("all 6 target(s)")

    # A partial re-run, one target at one level: the others inherited from the first attempt, in the store.
    again, _ = _run(cfg, {"targets": ["local-cpu"], "concurrency": [1]}, concurrencies=(1,))
    levels = warehouse.query("SELECT target_id, count(*) AS n FROM llmbench.levels GROUP BY 1 ORDER BY 1", [], db)
    assert dict(levels.values.tolist()) == {"g6": 2, "local-cpu": 1, "mine": 2, "ml-g6": 2, "nova": 2, "nova-dear": 2}
    (attempts,) = warehouse.query("SELECT target_attempts FROM llmbench.runs", [], db)["target_attempts"]
    assert json.loads(attempts) == {t.target_id: (again.run_dir if t.target_id == "local-cpu" else first.run_dir)
                                    for t in first.targets}

    # The DAG's reprocess: plan finds the latest published attempt by listing the store.
    planned = pipeline.plan(str(cfg), DATE, {}, "reprocess")
    assert {t["run_dir"] for t in planned} == {again.run_dir}
    pipeline.price_performance(again.run_dir, "reprocess", str(cfg))
    pipeline.publish(again.run_dir)
    (computation,) = warehouse.query("SELECT computation FROM llmbench.runs", [], db)["computation"]
    assert computation == "reprocess"
    assert dict(warehouse.query("SELECT target_id, count(*) FROM llmbench.levels GROUP BY 1", [], db).values.tolist()) \
        == dict(levels.values.tolist())
    # the inherited targets were recomputed where they are: in the first attempt's folders
    assert store.exists(f"{attempt}/target=g6/levels.measured.parquet")

    # Retention in the store: an unpublished attempt goes whole; the two the latest publish reads
    # keep only their tombstone (plan, published record, pruned.json), which a partial re-run reads
    # and refuses in one line instead of replacing the other targets' rows with nothing.
    lost = plan(str(cfg), DATE, {"targets": ["g6"]})
    said: list[str] = []
    future = pd.Timestamp("2030-01-01", tz="UTC").to_pydatetime()
    assert sorted(prune_store(store, 1, future, say=said.append)) == sorted([lost.run_dir, first.run_dir, again.run_dir])
    assert not store.list_keys(store.key_of(lost.run_dir))
    assert {k.rsplit("/", 1)[-1] for k in store.list_keys(attempt)} == {"plan.json", "published.json", "pruned.json"}
    assert len([s for s in said if "to a tombstone" in s]) == 2
    assert prune_store(store, 1, future) == []  # a tombstone still read is left as it is
    third = plan(str(cfg), DATE, {"targets": ["local-cpu"]})
    _measured_in_store(third)
    with pytest.raises(UnionSourceMissing, match=r"^published target g6: its raw results in .* were pruned by retention"):
        pipeline.price_performance(third.run_dir)
    assert dict(warehouse.query("SELECT target_id, count(*) FROM llmbench.levels GROUP BY 1", [], db).values.tolist()) \
        == dict(levels.values.tolist())  # nothing was lost


def test_a_task_uploads_what_it_wrote_even_when_it_fails(env):
    cfg, _, store = env
    run = plan(str(cfg), DATE, {"targets": ["mine"]})
    (t,) = run.targets
    with pytest.raises(RuntimeError, match="lost the endpoint"), workspace.working(t) as (local, _):
        local.dir.mkdir(parents=True)
        (local.dir / "requests.jsonl").write_text('{"request_index": 0}\n')
        raise RuntimeError("lost the endpoint")
    key = f"{store.key_of(run.run_dir)}/target=mine/requests.jsonl"
    assert store.get_text(key) == '{"request_index": 0}\n'
    # the next task's copy starts from it, and a file it removes is removed from the store
    with workspace.working(t) as (local, _):
        assert (local.dir / "requests.jsonl").exists()
        (local.dir / "requests.jsonl").unlink()
    assert not store.exists(key)
    assert not Path(local.run_dir).exists()  # the local copy is gone once the task ends


def test_the_history_page_goes_to_the_store(env):
    cfg, _, store = env
    _, out = _run(cfg)
    where = pipeline.history(out["warehouse"])
    assert where == store.uri("history.html") and "<html" in store.get_text("history.html").lower()


def test_a_deploy_reaps_what_an_earlier_attempt_left_by_listing_the_store(env):
    """A worker lost after deploy leaves a handle without a teardown in the store; the next
    attempt's deploy, on any host, finds it by listing the run key's prefix and tears it down,
    recording it there. (The `openai` path: its teardown deletes nothing, the record is the point.)"""
    cfg, _, store = env
    earlier = plan(str(cfg), DATE, {"targets": ["mine"]})
    handle = pipeline.deploy(earlier.targets[0])  # its worker then dies: no teardown
    folder = f"{store.key_of(earlier.run_dir)}/target=mine"
    assert store.exists(f"{folder}/handle.json") and not store.exists(f"{folder}/teardown.json")
    again = plan(str(cfg), DATE, {"targets": ["mine"]})
    pipeline.deploy(again.targets[0])
    record = json.loads(store.get_text(f"{folder}/teardown.json"))
    assert record["reaped_by"] == again.run_dir and handle["deployed_at"]
    events = store.get_text(f"{store.key_of(again.run_dir)}/target=mine/events.jsonl")
    assert '"reaped"' in events and store.uri(folder) in events
