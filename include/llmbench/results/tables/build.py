"""The run's tables put together from its raw results and written as Parquet (build_tables), and
read back (load_tables)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from llmbench import __version__
from llmbench.analysis import metrics
from llmbench.results import traffic
from llmbench.results.codeversion import Computation
from llmbench.results.tables.comparison import REFERENCE_COLUMNS, compare_paths, reference_rows
from llmbench.results.tables.prices import price_rows, speculative_speedups
from llmbench.results.tables.quality import quality_columns, quality_rows, quality_verdicts
from llmbench.results.tables.targets import target_row
from llmbench.results.union import union_plan
from llmbench.schemas.targets import RunPlan
from llmbench.warehouse.store import TABLES

TABLE_NAMES = TABLES  # the warehouse's tables, in publish order (one list: warehouse.store)


def build_tables(run_dir: str, locate: Callable[[str], str] | None = None) -> dict[str, Any]:
    """Every table of the run key's published result, from the raw results and prices; written
    under <run_dir>/tables/ and returned as frames. The run's own targets, and every other target
    of its run key from the attempt it was last published from (llmbench.results.union): a partial
    run replaces only the targets it ran, and the run-level tables are over the union."""
    import pandas as pd

    own = RunPlan.load(run_dir)
    run, attempts = union_plan(own)
    at = locate or (lambda p: p)  # a task's local copy of an object store: rows name the objects
    quality = quality_rows(run)
    verdicts = quality_verdicts(run, quality)
    targets, levels, requests, prices = _target_rows(run, quality, verdicts)
    break_even = compare_paths(run, {t["target_id"]: t["status"] for t in targets}, prices, verdicts)
    speculative_speedups(run, prices)
    pp = pd.DataFrame(prices)
    if not pp.empty:
        pp["best_under_slo"] = _best_under_slo(pp)
    tdf = pd.DataFrame(targets)
    runs = _runs_row(run_dir, run, own, attempts, tdf, at)
    if locate is not None:
        tdf["raw_dir"] = tdf["raw_dir"].map(at)
        for row in quality:
            row["raw_path"] = at(row["raw_path"])
    tables = Path(run_dir) / "tables"
    tables.mkdir(exist_ok=True)
    frames = {
        "runs": runs,
        "targets": tdf,
        "levels": pd.concat(levels, ignore_index=True) if levels else pd.DataFrame(),
        "requests": pd.concat(requests, ignore_index=True) if requests else pd.DataFrame(),
        "price_performance": pp,
        "break_even": pd.DataFrame(break_even),
        "reference": pd.DataFrame(reference_rows(run), columns=list(REFERENCE_COLUMNS)),
        "quality": pd.DataFrame(quality),
        "capacity": pd.DataFrame(traffic.capacity_rows(run)),
        "traffic_cost": pd.DataFrame(traffic.traffic_cost_rows(run, targets, prices)),
    }
    for name, frame in frames.items():
        frame.to_parquet(tables / f"{name}.parquet", index=False)
    return frames


def _target_rows(
    run: RunPlan, quality: list[dict[str, Any]], verdicts: dict[str, bool | None]
) -> tuple[list[dict[str, Any]], list[Any], list[Any], list[dict[str, Any]]]:
    """Per target: its targets row, its levels and requests frames (keyed by run and target) and
    its price rows (with the target's quality figures)."""
    import pandas as pd

    targets, levels, requests = [], [], []
    prices: list[dict[str, Any]] = []
    for target in run.targets:
        row = target_row(run, target)
        row.update(quality_columns(target, quality, verdicts.get(target.target_id)))
        targets.append(row)
        d = target.dir
        if not (d / "levels.parquet").exists():
            continue
        lv = pd.read_parquet(d / "levels.parquet")
        rq = pd.read_parquet(d / "requests.parquet")
        for frame in (lv, rq):
            frame.insert(0, "target_id", target.target_id)
            frame.insert(0, "run_key", run.run_key)
            frame["validation_passed"] = row["validation_passed"]
        levels.append(lv)
        requests.append(rq)
        # Per target, over its closed-loop levels: the knee and how much latency the highest
        # level costs (an open-loop curve is over arrival rates, not concurrency).
        level_rows = [r for r in lv.to_dict("records") if not r.get("arrival_rate_rps")]
        row["knee_concurrency"] = metrics.knee_concurrency(level_rows)
        row["e2e_ms_p50_degradation"] = metrics.latency_degradation(level_rows)
        row["latency_knee_concurrency"] = metrics.latency_knee_concurrency(level_rows)
        quality_figures = {k: row[k] for k in ("quality_score", "quality_ci_low", "quality_ci_high", "quality_passed")}
        prices.extend(
            {**r, **quality_figures} for r in price_rows(run, target, lv.to_dict("records"), row["validation_passed"])
        )
    return targets, levels, requests, prices


def _best_under_slo(pp: Any) -> Any:
    """Best configuration per model: the cheapest tokens, on the run's price basis (per output or
    per total token: usd_per_m_headline), among levels that meet the SLO, of targets that passed
    the quality gate or had none (fast but wrong must not win) and passed validation (as
    v_best_under_slo asks: a level of a target whose errors failed it is no answer)."""
    passed_quality = pp["quality_passed"].map(lambda v: v is None or v != v or bool(v))
    validated = pp["validation_passed"].map(lambda v: v is not None and v == v and bool(v))
    ok = pp[pp["meets_slo"] & pp["usd_per_m_headline"].notna() & passed_quality & validated]
    best = ok.loc[ok.groupby("model")["usd_per_m_headline"].idxmin()] if not ok.empty else ok
    return pp.index.isin(best.index)


def _runs_row(
    run_dir: str, run: RunPlan, own: RunPlan, attempts: dict[str, str], tdf: Any, at: Callable[[str], str]
) -> Any:
    """The one `runs` row: the run's status over the union of targets, its counts and cost, which
    targets this attempt replaced, and which code computed the tables."""
    import pandas as pd

    failed = int((tdf["status"] == "failed").sum())
    invalid = int((tdf["validation_passed"] == False).sum())  # noqa: E712 (None is not False)
    wrong = int((tdf["quality_passed"] == False).sum())  # noqa: E712
    costs = [c for c in tdf["benchmark_cost_usd"] if c is not None and c == c]
    computed = Computation.of_run(run_dir)
    status = (
        "succeeded" if failed == 0 and invalid == 0 and wrong == 0 else "failed" if failed == len(tdf) else "partial"
    )
    runs = pd.DataFrame(
        [
            {
                "run_key": run.run_key,
                "config_name": run.config_name,
                "logical_date": run.logical_date,
                "run_dir": at(run_dir),
                "report_path": at(str(Path(run_dir) / "report.html")),
                "planned_at": run.planned_at,
                "published_at": datetime.now(UTC).isoformat(),
                "status": status,
                "targets_planned": len(tdf),
                # which targets this attempt ran (it replaced their rows), and the attempt folder
                # each published target's raw results come from (the others were inherited)
                "targets_replaced": json.dumps([t.target_id for t in own.targets]),
                "target_attempts": json.dumps({k: at(v) for k, v in attempts.items()}, sort_keys=True),
                "targets_failed": failed,
                "targets_validation_failed": invalid,
                "targets_quality_failed": wrong,
                "benchmark_cost_usd": sum(costs) if costs else None,
                "llmbench_version": __version__,
                # which code computed these tables, when, and whether from a reprocess of the raw results
                "computed_by": computed.computed_by,
                "computed_at": computed.computed_at,
                "computation": computed.computation,
                "reprocess_prices": computed.prices,
            }
        ]
    )
    for col in ("planned_at", "published_at", "computed_at"):
        runs[col] = pd.to_datetime(runs[col], utc=True)
    return runs


def load_tables(run_dir: str) -> dict[str, Any]:
    """The tables build_tables wrote for this run, as frames."""
    import pandas as pd

    # a run built before a table existed (capacity, traffic_cost) has none: an empty frame
    files = {t: Path(run_dir) / "tables" / f"{t}.parquet" for t in TABLE_NAMES}
    return {t: pd.read_parquet(f) if f.exists() else pd.DataFrame() for t, f in files.items()}
