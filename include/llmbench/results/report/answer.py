"""The answer at the top of the report: which level of which target is cheapest under the SLO,
the runner-up, and why the others are not in the running (answer, answer_html)."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from llmbench.results.report.cells import fmt, headline, level_name, missing, pick, table


@dataclass(frozen=True)
class Answer:
    """What the top of the report says: the winner, the runner-up (another target) and why others
    are not in the running. `sentence` is plain text (the browser test reads it)."""

    sentence: str
    winner: str | None
    rows: Any  # the small table: winner and runner-up
    excluded: list[str]


def _quality_text(row: Any, frame: Any, quality: Any = None) -> str:
    """The level's quality in words: the score, its interval when a stage computed one, and the
    gate it passed (a score of 0 that passed a gate of 0 is said, not left to a reader to puzzle)."""
    q = pick(frame, "quality")
    if q is None or missing(row.get(q)):
        return ""
    lo, hi = pick(frame, "quality_low"), pick(frame, "quality_high")
    text = f"quality {float(row[q]):.2f}"
    if lo and hi and not missing(row.get(lo)) and not missing(row.get(hi)):
        text += f" (95 % CI {float(row[lo]):.2f}–{float(row[hi]):.2f})"
    if quality is not None and not quality.empty and {"target_id", "min_score"} <= set(quality.columns):
        gate = quality[quality["target_id"] == row.get("target_id")]["min_score"].dropna()
        if not gate.empty:
            text += f", passing its gate of {float(gate.max()):.2f}"
    return text


def _eligible(pp: Any, cost: str) -> Any:
    """Levels that may win: meet the SLO, passed validation and the quality gate, have a price."""
    ok = pp[cost].notna()
    if "meets_slo" in pp.columns:
        ok &= pp["meets_slo"].fillna(False).astype(bool)
    for gate in ("validation_passed", "quality_passed"):
        if gate in pp.columns:
            ok &= pp[gate].map(lambda v: missing(v) or bool(v)).astype(bool)
    return pp[ok]


def _excluded(targets: Any, pp: Any, cost: str) -> list[str]:
    """Each target not in the running, with the reason in words."""
    out = []
    for t in targets.to_dict("records"):
        tid = str(t["target_id"])
        if t.get("status") not in (None, "succeeded"):
            stage = f" at {t['failed_stage']}" if not missing(t.get("failed_stage")) else ""
            err = f": {t['error']}" if not missing(t.get("error")) else ""
            out.append(f"{tid} failed{stage}{err}")
        elif not missing(t.get("validation_passed")) and not bool(t["validation_passed"]):
            out.append(f"{tid} failed validation (its results do not add up; see validation.json)")
        elif not missing(t.get("quality_passed")) and not bool(t["quality_passed"]):
            score = "" if missing(t.get("quality_score")) else f" (score {float(t['quality_score']):.2f})"
            out.append(f"{tid} failed the quality gate{score}: fast but wrong cannot win")
        else:
            mine = pp[pp["target_id"] == tid] if "target_id" in pp.columns else pp.iloc[0:0]
            if mine.empty:
                out.append(f"{tid} has no price-performance rows")
            elif mine[cost].isna().all():
                note = (
                    ""
                    if "price_note" not in mine or mine["price_note"].isna().all()
                    else mine["price_note"].dropna().iloc[0]
                )
                out.append(f"{tid} has no price{': ' + str(note) if note else ''}")
            elif "meets_slo" in mine.columns and not mine["meets_slo"].fillna(False).astype(bool).any():
                best = mine["ttft_ms_p90"].min() if "ttft_ms_p90" in mine else None
                lat = "" if missing(best) else f" (its best TTFT p90 was {fmt(best, 'ms')} ms)"
                out.append(f"{tid} met the SLO at no level{lat}")
    return out


def answer(frames: dict[str, Any]) -> Answer:
    """The answer to the question a reader comes with: which path is cheapest at the SLO, with what
    latency and quality, the runner-up (the cheapest level of another target) and the margin."""
    import pandas as pd

    pp, targets = frames["price_performance"], frames["targets"]
    if pp.empty:
        return Answer(
            "No level was measured: there is no price-performance to compare.",
            None,
            pp,
            _excluded(targets, pp, "usd_per_m_output_tokens"),
        )
    cost, label = headline(pp)
    excluded = _excluded(targets, pp, cost)
    ok = _eligible(pp, cost).sort_values(cost, kind="stable")
    if ok.empty:
        return Answer(
            "No path met the SLO: no level met it, passed validation and the quality gate, and had a price; "
            "why each target is out: below.",
            None,
            ok,
            excluded,
        )
    win = ok.iloc[0]
    others = ok[ok["target_id"] != win["target_id"]]
    run = others.iloc[0] if not others.empty else None
    lat = f"TTFT p90 {fmt(win.get('ttft_ms_p90'), 'ms')} ms, TPOT p90 {fmt(win.get('tpot_ms_p90'), 'ms')} ms"
    q = _quality_text(win, pp, frames.get("quality"))
    s = (
        f"Cheapest path meeting the SLO: {win['target_id']} at {level_name(win)}, "
        f"{fmt(win[cost], 'usd')} {label.replace('$ per million', 'per million')} ({lat}{', ' + q if q else ''})."
    )
    if run is not None:
        margin = float(run[cost]) / float(win[cost]) - 1 if float(win[cost]) else float("nan")
        s += (
            f" Runner-up: {run['target_id']} at {fmt(run[cost], 'usd')}, "
            f"{fmt(margin, 'pct')} more ({fmt(float(run[cost]) - float(win[cost]), 'usd')} per million)."
        )
    else:
        s += " No other target met the SLO."
    rows = pd.DataFrame([r for r in (win, run) if r is not None]).assign(
        rank=["winner", "runner-up"][: 1 + (run is not None)],
        level=lambda d: [level_name(r) for r in d.to_dict("records")],
    )
    return Answer(s, str(win["target_id"]), rows, excluded)


def _traffic(frames: dict[str, Any]) -> str:
    """The traffic-profile sentence (results.traffic.traffic_headline: one definition), when the run
    has a traffic_cost table: the cheapest path meeting the SLO for the stated traffic, and what the
    runner-up costs."""
    from llmbench.results.traffic import traffic_headline

    sentence = traffic_headline(frames.get("traffic_cost"))
    return f"<p class='answer' id='traffic'>{html.escape(sentence)}</p>" if sentence else ""


def answer_html(frames: dict[str, Any]) -> str:
    a = answer(frames)
    pp = frames["price_performance"]
    cost = headline(pp)[0] if not pp.empty else "usd_per_m_output_tokens"
    cols = ["rank", "target_id", "level", cost, "ttft_ms_p90", "tpot_ms_p90", "output_tokens_per_s"]
    for role in ("quality", "quality_low", "quality_high", "capacity"):
        c = pick(pp, role) if not pp.empty else None
        if c:
            cols.append(c)
    small = table(a.rows, cols) if a.winner else ""
    why = (
        "<p><b>Not in the running:</b></p><ul>" + "".join(f"<li>{html.escape(e)}</li>" for e in a.excluded) + "</ul>"
        if a.excluded
        else "<p>Every target measured, validated and passed its gates.</p>"
    )
    win = f' data-winner="{html.escape(a.winner)}"' if a.winner else ""
    return (
        f'<section class="answer"><p class="headline" id="headline"{win}>{html.escape(a.sentence)}</p>'
        f"{_traffic(frames)}{small}{why}</section>"
    )
