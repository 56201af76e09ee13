"""Issue 43: a partial re-run of a date replaces only the targets it ran. The six-path run of
test_path_comparison is published whole; then one target is re-run alone at one concurrency, and
the other five targets' rows must be exactly as they were, in every table, through a publish, a
reprocess of the date and retention; the run row says which attempt each target came from."""

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from llmbench import pipeline, warehouse
from llmbench.planning.plan import plan
from llmbench.results import retention, union
from llmbench.results.reprocess import reprocess_range
from llmbench.schemas.targets import RunPlan
from tests.unit.results.test_path_comparison import CONFIG, DATE, _measured

PER_TARGET = ("targets", "levels", "requests", "price_performance", "quality", "capacity", "break_even")


_measure = _measured  # each target's folder as a finished sweep leaves it (test_path_comparison)


def _rows(db: Path, table: str, target_ids) -> list[dict]:
    marks = ", ".join("?" * len(target_ids))
    frame = warehouse.query(f"SELECT * FROM llmbench.{table} WHERE target_id IN ({marks})", list(target_ids), db)
    key = [c for c in ("target_id", "concurrency", "suite", "request_index", "per_token_target_id")
           if c in frame.columns]
    return frame.sort_values(key).to_dict("records") if not frame.empty else []


def _diff(got: list[dict], want: list[dict]) -> list:
    """(row, column, got, want) of every cell that differs (NaN equals NaN), and a count mismatch."""
    if len(got) != len(want):
        return [("rows", len(got), len(want))]
    out = []
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        for k in sorted(set(g) | set(w)):
            a, b = g.get(k), w.get(k)
            if str(a) != str(b):  # NaN, arrays and timestamps compare by what they print
                out.append((i, k, a, b))
    return out


@pytest.fixture
def env(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("LLMBENCH_HOME", str(home))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(CONFIG))
    return cfg, home / "warehouse.duckdb"


def _run(cfg: Path, params: dict | None = None, concurrencies=(1, 2)) -> RunPlan:
    run = plan(str(cfg), DATE, params)
    _measure(run, concurrencies)
    pipeline.price_performance(run.run_dir)
    pipeline.publish(run.run_dir)
    return run


def test_a_partial_rerun_replaces_only_its_target_and_keeps_the_others_rows(env):
    cfg, db = env
    first = _run(cfg)
    run_key = first.run_key
    others = sorted(t.target_id for t in first.targets if t.target_id != "local-cpu")
    before = {t: _rows(db, t, others) for t in PER_TARGET}
    assert len(before["levels"]) == 2 * len(others) and before["break_even"]

    again = _run(cfg, {"targets": ["local-cpu"], "concurrency": [1]}, concurrencies=(1,))
    assert [t.target_id for t in again.targets] == ["local-cpu"]
    for table in PER_TARGET:  # every row of the other targets, every column, as published before
        assert _diff(_rows(db, table, others), before[table]) == [], table
    levels = warehouse.query("SELECT target_id, concurrency FROM llmbench.levels WHERE run_key = ? "
                             "AND target_id = 'local-cpu'", [run_key], db)
    assert levels["concurrency"].tolist() == [1]  # exactly its new level
    (run,) = warehouse.query("SELECT * FROM llmbench.runs WHERE run_key = ?", [run_key], db).to_dict("records")
    assert run["run_dir"] == again.run_dir and run["targets_planned"] == 6
    assert json.loads(run["targets_replaced"]) == ["local-cpu"]
    attempts = json.loads(run["target_attempts"])
    assert attempts == {"local-cpu": again.run_dir, **{t: first.run_dir for t in others}}
    raw = warehouse.query("SELECT target_id, raw_dir FROM llmbench.targets WHERE run_key = ?", [run_key], db)
    assert {r["target_id"]: str(Path(r["raw_dir"]).parent) for r in raw.to_dict("records")} == attempts
    record = union.latest_published(Path(again.run_dir).parent)
    assert record is not None and record.run_dir == again.run_dir and record.targets == attempts
    # check judges the targets this run ran; the kept ones are named
    assert pipeline.check(again.run_dir).startswith("all 1 target(s) succeeded")

    # A reprocess of the date recomputes the union, each target in the attempt it came from.
    outcomes = reprocess_range(db, DATE, DATE, str(cfg))
    assert [o.status for o in outcomes] == ["reprocessed"]
    assert all((Path(first.run_dir) / t / "levels.measured.parquet").exists() for t in others)  # recomputed there
    for table in ("levels", "price_performance", "quality", "break_even"):
        assert _diff(_rows(db, table, others), before[table]) == [], table
    after = warehouse.query("SELECT target_id, count(*) AS n FROM llmbench.levels WHERE run_key = ? "
                            "GROUP BY target_id", [run_key], db)
    assert dict(zip(after["target_id"], after["n"], strict=True)) == {"local-cpu": 1, **dict.fromkeys(others, 2)}
    (computation,) = warehouse.query("SELECT computation FROM llmbench.runs WHERE run_key = ?", [run_key], db)[
        "computation"]
    assert computation == "reprocess"
    # ... and the DAG's reprocess mode finds the same published attempt
    planned = pipeline.plan(str(cfg), DATE, {}, "reprocess")
    assert [t["run_dir"] for t in planned] == [again.run_dir]


def test_a_full_rerun_replaces_every_target(env):
    cfg, db = env
    first = _run(cfg)
    second = _run(cfg, concurrencies=(1, 2))
    (run,) = warehouse.query("SELECT * FROM llmbench.runs", [], db).to_dict("records")
    assert json.loads(run["target_attempts"]) == {t.target_id: second.run_dir for t in second.targets}
    assert len(json.loads(run["targets_replaced"])) == len(first.targets)


def test_retention_prunes_what_a_publish_reads_to_a_tombstone_and_a_partial_rerun_then_refuses(env):
    """Retention bounds storage: old raw results go even when published. The attempts the latest
    publish reads keep a tombstone, so the next partial re-run knows the other targets were
    published and stops in one line, publishing nothing, instead of replacing their rows with
    nothing; a reprocess skips the date in one line; a later full run makes the tombstones go."""
    cfg, db = env
    first = _run(cfg)
    again = _run(cfg, {"targets": ["local-cpu"], "concurrency": [1]}, concurrencies=(1,))
    lost = plan(str(cfg), DATE, {"targets": ["g6"]})  # planned, never published
    said: list[str] = []
    future = pd.Timestamp("2030-01-01", tz="UTC").to_pydatetime()
    runs_root = Path(first.run_dir).parent.parent
    assert retention.expired_attempts(1, runs_root, future, said.append) == sorted(
        Path(r.run_dir) for r in (first, again, lost))
    removed = retention.prune_raw_results(1, runs_root, future, say=said.append)
    assert sorted(removed) == sorted(Path(r.run_dir) for r in (first, again, lost))
    assert not Path(lost.run_dir).exists()
    for r in (first, again):
        assert sorted(p.name for p in Path(r.run_dir).iterdir()) == ["plan.json", "pruned.json", "published.json"]
    assert sorted(s for s in said if "tombstone" in s) == sorted(
        f"retention: pruned {r.run_dir} to a tombstone: the run key's published rows came from it" for r in (first, again))
    assert retention.expired_attempts(1, runs_root, future) == []  # a tombstone still read stays

    levels = warehouse.query("SELECT target_id, count(*) AS n FROM llmbench.levels GROUP BY 1 ORDER BY 1", [], db)
    third = plan(str(cfg), DATE, {"targets": ["local-cpu"]})
    _measure(third)
    with pytest.raises(union.UnionSourceMissing, match=r"^published target g6: its raw results in .* were pruned by "
                                                       r"retention; run that target too \(or the whole date\)"):
        pipeline.price_performance(third.run_dir)
    assert warehouse.query("SELECT target_id, count(*) AS n FROM llmbench.levels GROUP BY 1 ORDER BY 1", [],
                           db).equals(levels)
    (skipped,) = reprocess_range(db, DATE, DATE, str(cfg))  # skipped, in one line, rows as they were
    assert (skipped.status, skipped.detail) == ("skipped", f"raw results gone: {again.run_dir} was pruned by "
                                                           "retention; its published rows stay")

    # a whole run of the date replaces every target: nothing reads the tombstones any more, they go
    whole = _run(cfg)
    assert sorted(retention.expired_attempts(1, runs_root, future)) == sorted(
        Path(r.run_dir) for r in (first, again, third, whole))


def test_an_inherited_targets_missing_raw_results_are_refused_in_one_line(env):
    import shutil

    cfg, db = env
    first = _run(cfg)
    shutil.rmtree(Path(first.run_dir) / "g6")
    run = plan(str(cfg), DATE, {"targets": ["local-cpu"]})
    _measure(run)
    with pytest.raises(union.UnionSourceMissing, match=r"^published target g6: its raw results .* are gone"):
        pipeline.price_performance(run.run_dir)
    # nothing was published: the first attempt's rows stand
    (n,) = warehouse.query("SELECT count(*) AS n FROM llmbench.levels", [], db)["n"]
    assert n == 12


def test_the_asset_extra_says_exactly_what_landed_and_the_warehouse_holds_it(env):
    """Issue 43 item 3: publish's Asset extra (the contract, llmbench.schemas.asset) names the run
    key, date, config, every published target and those replaced, rows per table, the status and
    the warehouse without credentials; check_landed holds the warehouse to it, and an older event
    of the same run key no longer matches once a newer publish replaced a target."""
    from llmbench.schemas.asset import PublishedAsset

    cfg, db = env
    first = plan(str(cfg), DATE)
    _measure(first)
    pipeline.price_performance(first.run_dir)
    full = PublishedAsset.model_validate(pipeline.publish(first.run_dir)["asset_extra"])
    ids = sorted(t.target_id for t in first.targets)
    assert (full.run_key, full.logical_date, full.config) == (first.run_key, DATE, "paths-compared")
    assert sorted(full.targets) == sorted(full.targets_replaced) == ids
    assert full.rows["levels"] == 12 and full.rows["runs"] == 1 and full.rows["requests"] == 18
    assert full.warehouse.model_dump() == {"kind": "duckdb", "conn_id": None, "path": str(db)}
    assert full.status == "succeeded"
    assert warehouse.check_landed(full, db).startswith(f"{first.run_key}: succeeded, 6 target(s) (6 replaced)")

    again = plan(str(cfg), DATE, {"targets": ["nova"], "concurrency": [1]})
    _measure(again, (1,))
    pipeline.price_performance(again.run_dir)
    part = PublishedAsset.model_validate(pipeline.publish(again.run_dir)["asset_extra"])
    assert sorted(part.targets) == ids and part.targets_replaced == ["nova"] and part.rows["levels"] == 11
    assert warehouse.check_landed(part, db).endswith("11 level(s), as the Asset says")
    with pytest.raises(warehouse.LandedMismatch, match=r"rows \(warehouse, Asset\) differ: .*'levels': \(11, 12\)"):
        warehouse.check_landed(full, db)
    # never credentials: a PostgreSQL warehouse is named by its connection id
    with pytest.raises(ValueError, match="named by conn_id"):
        PublishedAsset.model_validate({**part.model_dump(), "warehouse": {"kind": "postgres", "path": "x"}})


def test_a_reprocess_keeps_what_the_client_measured_bit_for_bit(env):
    """The client's CPU and run-queue shares are measured while a level runs: a reprocess keeps
    them as measured, not as a round trip through seconds (which moved them by a last bit and
    made a reprocessed kept target's rows differ from what was published)."""
    from llmbench.results.reprocess import recompute_levels

    cfg, _ = env
    run = plan(str(cfg), DATE, {"targets": ["local-cpu"]})
    _measure(run)
    (t,) = run.targets
    lv = pd.read_parquet(t.dir / "levels.parquet")
    windows = lv["window_s"].tolist()
    # a share that a round trip through seconds (share * window / 100, then back) moves, at every level
    pct = next(p for p in (x / 7 for x in range(1, 10_000)) if all(100.0 * (p * w / 100.0) / w != p for w in windows))
    lv["client_cpu_pct"], lv["client_runqueue_pct"] = pct, pct / 3
    lv.to_parquet(t.dir / "levels.parquet", index=False)
    assert recompute_levels(t)
    after = pd.read_parquet(t.dir / "levels.parquet")
    assert after["client_cpu_pct"].tolist() == [pct] * len(lv)
    assert after["client_runqueue_pct"].tolist() == [pct / 3] * len(lv)
