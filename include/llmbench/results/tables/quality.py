"""The `quality` table and the quality columns of `targets`: each suite's score per target, its
interval, gate and baseline (quality_rows), and each target's verdict (quality_verdicts)."""

from __future__ import annotations

import json
from typing import Any

from llmbench.analysis import metrics
from llmbench.schemas.targets import ResolvedTarget, RunPlan

QUALITY_SUITES = ("tool_call", "exact")  # each has a targets column quality_score_<suite>


def _quality_summary(target: ResolvedTarget) -> dict[str, Any] | None:
    p = target.dir / "quality.json"
    return json.loads(p.read_text()) if p.exists() else None


def _quality_answers(target: ResolvedTarget) -> dict[tuple[str, str, int], bool]:
    """(suite, item, run) -> passed (the gate's grading), from the target's quality.jsonl."""
    p = target.dir / "quality.jsonl"
    if not p.exists():
        return {}
    out = {}
    for line in p.read_text().splitlines():
        a = json.loads(line)
        if "item" in a:
            out[(a["suite"], str(a["item"]), int(a["run"]))] = bool(a["passed"])
    return out


_SCORE_FIELDS = (
    "score_strict",
    "strict_ci_low",
    "strict_ci_high",
    "score_flexible",
    "flexible_ci_low",
    "flexible_ci_high",
    "detectable_drop",
)


def quality_rows(run: RunPlan) -> list[dict[str, Any]]:
    """One `quality` row per target and suite of the config's quality section: what the target
    scored (llmbench.quality: strict and flexible, with Wilson 95 % bounds), the minimum, and the
    drop below its baseline target measured on the same items (metrics.paired_drop) with its 95 %
    interval. A target whose quality stage never ran (it failed earlier) has rows with status
    "not_run"."""
    rows = []
    summaries = {t.target_id: _quality_summary(t) for t in run.targets}
    by_id = {t.target_id: t for t in run.targets}
    answers: dict[str, dict[tuple[str, str, int], bool]] = {}
    for target in run.targets:
        q = target.quality
        if q is None:
            continue
        summary = summaries[target.target_id] or {"suites": {}}
        judged = q.baseline is not None and q.baseline != target.target_id and q.baseline in by_id
        base = (summaries.get(q.baseline or "") or {"suites": {}}) if judged else {"suites": {}}
        if judged:
            for tid in (target.target_id, q.baseline):
                assert tid is not None
                answers.setdefault(tid, _quality_answers(by_id[tid]))
        for suite in q.suite_names:
            s = summary["suites"].get(suite) or {"status": "not_run", "score": None, "n": 0, "passed": 0}
            b = base["suites"].get(suite) or {}
            baseline_score = b.get("score") if judged else None
            drop, drop_low, drop_high = metrics.score_drop(baseline_score, s["score"]), None, None
            if judged and baseline_score is not None and s["score"] is not None:
                mine = {k: v for k, v in answers[target.target_id].items() if k[0] == suite}
                theirs = answers[q.baseline or ""]
                common = sorted(set(mine) & {k for k in theirs if k[0] == suite})
                paired = metrics.paired_drop([theirs[k] for k in common], [mine[k] for k in common])
                if paired is not None:
                    drop, drop_low, drop_high = paired
            rows.append(
                {
                    "run_key": run.run_key,
                    "target_id": target.target_id,
                    "suite": suite,
                    "status": s["status"],
                    "score": s["score"],
                    "n": int(s["n"]),
                    "n_passed": int(s["passed"]),
                    "runs": q.runs,
                    "min_score": q.min_score_of(suite),
                    "baseline_target_id": q.baseline,
                    "baseline_score": baseline_score,
                    "drop_vs_baseline": drop,
                    "reason": s.get("reason"),
                    "raw_path": str(target.dir / "quality.jsonl"),
                    "grade_on": q.grade_on,
                    **{k: s.get(k) for k in _SCORE_FIELDS},
                    "drop_ci_low": drop_low,
                    "drop_ci_high": drop_high,
                    "n_truncated": int(s.get("n_truncated") or 0),
                    "reasoning_tokens": s.get("reasoning_tokens"),
                }
            )
    return rows


def quality_verdicts(run: RunPlan, rows: list[dict[str, Any]]) -> dict[str, bool | None]:
    """Per target with a quality section: the gate (llmbench.results.validation.validate_quality, written
    to <target dir>/quality_validation.json). False when its quality stage never ran."""
    if not rows:
        return {}
    from llmbench.results.validation import validate_quality

    verdicts: dict[str, bool | None] = {}
    for target in run.targets:
        if target.quality is None:
            continue
        mine = [r for r in rows if r["target_id"] == target.target_id]
        if all(r["status"] == "not_run" for r in mine):
            verdicts[target.target_id] = False
            continue
        outcome = validate_quality(mine, target.quality.max_drop_vs_baseline, target.dir / "quality_validation.json")
        verdicts[target.target_id] = outcome["quality_passed"]
    return verdicts


def quality_columns(target: ResolvedTarget, rows: list[dict[str, Any]], passed: bool | None) -> dict[str, Any]:
    """A target's quality figures on its `targets` row (NULL without a quality section)."""
    mine = {r["suite"]: r["score"] for r in rows if r["target_id"] == target.target_id}
    scored = [r for r in rows if r["target_id"] == target.target_id and r["score"] is not None]
    # The interval of all the target's graded answers pooled (its suites' own are on `quality`).
    ci = metrics.wilson_interval(sum(r["n_passed"] for r in scored), sum(r["n"] for r in scored))
    return {
        "quality_score": metrics.quality_score([v for v in mine.values() if v is not None]),
        "quality_ci_low": ci[0] if ci else None,
        "quality_ci_high": ci[1] if ci else None,
        **{f"quality_score_{s}": mine.get(s) for s in QUALITY_SUITES},
        "quality_passed": passed,
    }
