"""Great Expectations (GX Core 1.x, called directly) over the per-request and per-level frames. The
bounds are the metric classes' (analysis.metrics.types): a bound changes there, not here.

A failed expectation does not delete anything: it marks the target's rows validation_passed =
false, and the run's check task makes it loud. great_expectations is imported inside the
function: it takes ~12 s to import and the DAG file must stay light.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llmbench.analysis.metrics import types

if TYPE_CHECKING:
    from llmbench.analysis.metrics.types import Metric


def _bounds(gxe, column: str, m: type[Metric], settings: dict[str, float] | None = None) -> list:
    """A metric class's bounds (analysis.metrics.types) as Great Expectations expectations on `column`."""
    exps = [gxe.ExpectColumnValuesToNotBeNull(column=column)] if m.not_null else []
    upper = (settings or {}).get(m.max_setting) if m.max_setting else m.max_value
    if m.min_value is not None or upper is not None:
        exps.append(
            gxe.ExpectColumnValuesToBeBetween(
                column=column, min_value=m.min_value, max_value=upper, strict_min=m.strict_min
            )
        )
    if m.allowed is not None:
        exps.append(gxe.ExpectColumnValuesToBeInSet(column=column, value_set=list(m.allowed)))
    return exps


def _requests_suites(gxe) -> dict[str, list]:
    """Each request metric's bounds over the rows it is checked on (every attempted request, or the
    successful ones), the relation between two of them, and what a failed request must say."""
    suites: dict[str, list] = {"requests_all": [], "requests_ok": []}
    for m in types.REGISTRY.values():
        if issubclass(m, types.RequestMetric) and m.in_table:
            suites["requests_ok" if m.checked == "ok" else "requests_all"] += _bounds(gxe, m.tag, m)
    suites["requests_ok"].append(
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="e2e_ms", column_B="ttft_ms", or_equal=True, ignore_row_if="either_value_is_missing"
        )
    )
    # failed requests must say why; a server that reported token counts which cannot be true
    # (wire.check_usage) fails the target: its other counts are not to be trusted either
    suites["requests_failed"] = [
        gxe.ExpectColumnValuesToNotBeNull(column="error_kind"),
        gxe.ExpectColumnValuesToNotBeInSet(column="error_kind", value_set=["implausible_usage"]),
    ]
    return suites


def _levels_suite(gxe, levels: list[int], max_error_rate: float, rates: list[float] | None = None) -> list:
    """Every planned level is there (closed loop by concurrency, open loop by arrival rate); each
    level metric's bounds (error_rate's upper one is the run's max_error_rate; client_saturated must
    be false: a level that measured the load generator must not pass); and each checked
    distribution's p50 is there and its percentiles rise."""
    exps = [
        gxe.ExpectColumnDistinctValuesToEqualSet(column="arrival_rate_rps", value_set=rates)
        if rates
        else gxe.ExpectColumnDistinctValuesToEqualSet(column="concurrency", value_set=levels),
    ]
    settings = {"max_error_rate": max_error_rate}
    for m in types.REGISTRY.values():
        if issubclass(m, types.LevelMetric):
            exps += _bounds(gxe, m.tag, m, settings)
        elif issubclass(m, types.RequestMetric) and m.level_checked:
            exps.append(gxe.ExpectColumnValuesToNotBeNull(column=f"{m.tag}_p50"))
            for lo, hi in (("p50", "p90"), ("p90", "p99")):
                exps.append(
                    gxe.ExpectColumnPairValuesAToBeGreaterThanB(
                        column_A=f"{m.tag}_{hi}",
                        column_B=f"{m.tag}_{lo}",
                        or_equal=True,
                        ignore_row_if="either_value_is_missing",
                    )
                )
    return exps


def validate_results(
    requests_path: Path,
    levels_path: Path,
    levels: list[int],
    max_error_rate: float,
    out_path: Path,
    rates: list[float] | None = None,
) -> dict[str, Any]:
    """Run the suites; write a JSON report to out_path; return {validation_passed, failures}."""
    import great_expectations as gx
    import great_expectations.expectations as gxe
    import pandas as pd

    from llmbench.loadgen.capacity import PROBE_INDEX_BASE

    # The sweep's levels are validated; the capacity search's probes are meant to find where the
    # SLO and the server break, so they are not held to the sweep's bounds.
    requests = pd.read_parquet(requests_path)
    requests = requests[requests["request_index"] < PROBE_INDEX_BASE]
    level_frame = pd.read_parquet(levels_path)
    if "capacity_probe" in level_frame.columns:
        level_frame = level_frame[level_frame["capacity_probe"].isna()]
    frames = {
        "requests_all": requests,
        "requests_ok": requests[requests["ok"]],
        "requests_failed": requests[~requests["ok"]],
        "levels": level_frame,
    }
    suites = _requests_suites(gxe)
    suites["levels"] = _levels_suite(gxe, levels, max_error_rate, rates)

    context = gx.get_context(mode="ephemeral")
    source = context.data_sources.add_pandas("llmbench")
    report: dict[str, Any] = {"suites": {}}
    failures: list[str] = []
    for name, expectations in suites.items():
        frame = frames[name].drop(columns=["itl_ms", "chunk_tokens"], errors="ignore").reset_index(drop=True)
        if frame.empty and name != "levels":
            report["suites"][name] = {"success": True, "skipped": "no rows"}
            continue
        suite = context.suites.add(gx.ExpectationSuite(name=name))
        for e in expectations:
            suite.add_expectation(e)
        batch = (
            source.add_dataframe_asset(name=name)
            .add_batch_definition_whole_dataframe("all")
            .get_batch(batch_parameters={"dataframe": frame})
        )
        result = batch.validate(suite)
        results = []
        for r in result.results:
            cfg = r.expectation_config
            assert cfg is not None  # every result of a suite's validation carries its expectation
            kwargs = {k: v for k, v in cfg.kwargs.items() if k != "batch_id"}
            entry = {"expectation": cfg.type, "kwargs": kwargs, "success": bool(r.success)}
            unexpected = (r.result or {}).get("unexpected_count")
            if unexpected is not None:
                entry["unexpected_count"] = unexpected
            if not r.success:
                failures.append(f"{name}: {cfg.type} {kwargs}")
            results.append(entry)
        report["suites"][name] = {"success": bool(result.success), "results": results}
    report["validation_passed"] = not failures
    report["failures"] = failures
    out_path.write_text(json.dumps(report, indent=2, default=str))
    return {"validation_passed": not failures, "failures": failures, "path": str(out_path)}


def validate_quality(rows: list[dict[str, Any]], max_drop_vs_baseline: float | None, out_path: Path) -> dict[str, Any]:
    """The quality gate of one target, over its `quality` rows (one per suite; llmbench.results.tables):
    each scored suite's score is at least its min_score and, with a baseline, at most
    max_drop_vs_baseline below the baseline target's score on that suite. Unsupported suites are
    not judged. Writes a JSON report to out_path; returns {quality_passed, failures} (quality_passed
    None when no suite was scored)."""
    import great_expectations as gx
    import great_expectations.expectations as gxe
    import pandas as pd

    frame = pd.DataFrame([r for r in rows if r["status"] == "scored"], columns=list(rows[0]) if rows else None)
    report: dict[str, Any] = {"suites": [r["suite"] for r in rows]}
    if frame.empty:
        report.update(quality_passed=None, failures=[], skipped="no suite was scored")
        out_path.write_text(json.dumps(report, indent=2, default=str))
        return {"quality_passed": None, "failures": [], "path": str(out_path)}
    frame = frame[["suite", "score", "min_score", "drop_vs_baseline"]].astype(
        {"score": float, "min_score": float, "drop_vs_baseline": float}
    )
    expectations = [
        gxe.ExpectColumnValuesToNotBeNull(column="score"),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="score", column_B="min_score", or_equal=True),
    ]
    if max_drop_vs_baseline is not None:
        # NULL where the baseline has no score on the suite (or is the target itself): not judged
        expectations.append(
            gxe.ExpectColumnValuesToBeBetween(column="drop_vs_baseline", max_value=max_drop_vs_baseline)
        )
    context = gx.get_context(mode="ephemeral")
    suite = context.suites.add(gx.ExpectationSuite(name="quality"))
    for e in expectations:
        suite.add_expectation(e)
    batch = (
        context.data_sources.add_pandas("llmbench")
        .add_dataframe_asset(name="quality")
        .add_batch_definition_whole_dataframe("all")
        .get_batch(batch_parameters={"dataframe": frame.reset_index(drop=True)})
    )
    result = batch.validate(suite, result_format="COMPLETE")
    failures, results = [], []
    for r in result.results:
        cfg = r.expectation_config
        assert cfg is not None
        kwargs = {k: v for k, v in cfg.kwargs.items() if k != "batch_id"}
        where = [i for i in (r.result or {}).get("unexpected_index_list") or [] if isinstance(i, int)]
        bad = sorted({str(frame["suite"].iloc[i]) for i in where})
        results.append({"expectation": cfg.type, "kwargs": kwargs, "success": bool(r.success), "suites": bad})
        if not r.success:
            failures.append(f"quality: {cfg.type} {kwargs} failed for suites {bad}")
    report.update(quality_passed=not failures, failures=failures, results=results, rows=frame.to_dict("records"))
    out_path.write_text(json.dumps(report, indent=2, default=str))
    return {"quality_passed": not failures, "failures": failures, "path": str(out_path)}
