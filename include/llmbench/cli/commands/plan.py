"""`llmbench plan`: resolve a config and Params into targets, each with its checks and estimated
cost, or say in one line what is wrong (ConfigError, exit status 2)."""

from __future__ import annotations

import argparse
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

from llmbench.cli.output import ints


def add_parser(sub: Any) -> None:
    pl = sub.add_parser("plan", help="resolve a config and Params into targets, or say what is wrong")
    pl.add_argument("--config", default="local")
    pl.add_argument("--date", default=date.today().isoformat())
    pl.add_argument("--targets", type=lambda s: [x for x in s.split(",") if x])
    pl.add_argument("--concurrency", type=ints)
    pl.add_argument("--requests-per-level", type=int)
    pl.add_argument(
        "--check-vllm-args",
        action="store_true",
        help="parse every vLLM target's launch arguments with the vLLM `make vllm` installed (~20 s)",
    )
    pl.set_defaults(func=run)


def price_label(price) -> str:
    """A target's price as the plan prints it: $/hour, $/M input and output tokens, or none."""
    if price.basis == "per_hour":
        return f"${price.usd_per_hour:.4f}/h"
    if price.basis == "per_token":
        return f"${price.usd_per_m_input_tokens:g}/${price.usd_per_m_output_tokens:g} per M"
    return "no price"


def price_basis_line(basis: str, input_mean: float, output_mean: float) -> str:
    """What the run's $/M figures count (config `price_basis`), as the plan prints it."""
    ratio = (input_mean + output_mean) / output_mean if output_mean else 1.0
    if basis == "total":
        return (
            f"price basis: $/M total tokens (input + output: ~{input_mean:.0f} + ~{output_mean:.0f} per request), "
            f"which ranks best_under_slo and heads the report; {ratio:.2f}x the tokens, so ~1/{ratio:.2f} of $/M "
            "per output token (also on every row)"
        )
    return (
        f"price basis: $/M output tokens, which ranks best_under_slo and heads the report; $/M total tokens "
        f"(~{input_mean:.0f} in + ~{output_mean:.0f} out per request) is on every row too"
    )


def traffic_lines(t) -> list[str]:
    """What a target's traffic is, where it is more than generated prompts: its dataset or trace
    (path, format, sha256, rows, filter, draw), its sessions, its arrivals, its shared prefixes."""
    w, d, lines = t.workload, t.dataset, []
    if d is not None:
        lines.append(
            f"data {d.path} ({d.format}, sha256 {d.sha256}): {d.rows_used} of {d.rows_total} rows used"
            f" (filter: {d.filter or 'none'}), {d.sample.replace('_', ' ')}, output length from {d.output}"
        )
    if w.multi_turn is not None:
        lines.append(
            f"multi-turn: each row a session on one stream, up to {w.multi_turn.max_turns} turns, "
            f"{w.multi_turn.think_time_s:g} s think time, history from the {w.multi_turn.history}, "
            f"concurrency {w.concurrency}, "
            f"{w.requests_per_level} turns/level"
        )
    if w.trace is not None:
        lines.append(
            f"trace replay: open loop at its own times x {w.trace.time_scale:g}, at most {w.max_in_flight} "
            f"in flight; not offered as scheduled if send lateness p99 > {w.trace.max_lateness_ms_p99:g} ms"
        )
    if w.arrival_rates_rps:
        shape = f" of burstiness {w.burstiness:g}" if w.arrivals == "gamma" else ""
        lines.append(f"open loop: {w.arrivals} arrivals{shape} at {w.arrival_rates_rps} req/s")
        if w.rate_shape is not None:
            step_s, mult = w.rate_shape.steps()
            lines.append(
                f"rate shape: x{', x'.join(f'{m:g}' for m in mult[:12])}{' ...' if len(mult) > 12 else ''}"
                f" every {step_s:g} s (the last holds)"
            )
    if w.prefix_count > 1:
        lines.append(f"{w.prefix_count} shared prefixes of {w.shared_prefix_tokens} tokens, {w.prefix_draw} draw")
    return lines


def _usd(usd: float | None) -> str:
    """An estimated cost: cents for most targets, more digits below a cent (per-token APIs)."""
    if usd is None:
        return "-"
    return f"{usd:.2f}" if usd >= 0.01 or usd == 0 else f"{usd:.4f}"


def run(a: argparse.Namespace) -> int:
    from llmbench.planning.plan import plan_checked

    params = {"targets": a.targets or [], "concurrency": a.concurrency or []}
    if a.requests_per_level is not None:
        params["requests_per_level"] = a.requests_per_level
    with tempfile.TemporaryDirectory() as tmp:  # a dry plan leaves no run folder behind
        planned, checks = plan_checked(  # ConfigError: exit 2
            a.config, a.date, params, runs_root=Path(tmp), check_vllm_args=a.check_vllm_args
        )
    from llmbench.schemas.workload import length_mean, length_range

    w = planned.targets[0].workload

    def tokens(spec) -> str:  # "128", or "~1000 (700-1300)" for a distribution
        lo, hi = length_range(spec)
        return str(lo) if lo == hi else f"~{length_mean(spec):.0f} ({lo}-{hi})"

    prefix = f" + {w.shared_prefix_tokens} shared prefix" if w.shared_prefix_tokens else ""
    print(
        f"run key {planned.run_key} ({', '.join(planned.backends)}): {len(planned.targets)} target(s), concurrency "
        f"{w.concurrency}, {w.requests_per_level} requests/level, {tokens(w.input_tokens)} in{prefix}"
        f" / {tokens(w.output_tokens)} out; every check passed"
    )
    print(
        price_basis_line(
            planned.price_basis, length_mean(w.input_tokens) + w.shared_prefix_tokens, length_mean(w.output_tokens)
        )
    )
    for line in quality_lines(planned.targets[0].quality):
        print(line)
    for t in planned.targets:
        print(f"\n  {t.target_id} ({t.backend_kind}, {t.region}): {t.label}")
        for line in traffic_lines(t):
            print(f"    {line}")
        for outcome in checks[t.target_id]:
            print(f"    {outcome}")
        cost = f"${_usd(t.estimated_usd)}" if t.estimated_usd is not None else "- (no price)"
        basis = {"per_hour": "endpoint-hours x $/h", "per_token": "tokens at list price", "none": "no price"}
        print(f"    estimated cost: {cost} ({basis[t.price.basis]})")
    print()
    print(
        f"  {'target':<24} {'backend':<9} {'instance':<18} {'serving':<26} {'prec':<6} {'price':>20} "
        f"{'roofline tok/s':>14} {'est. hours':>10} {'est. $':>8}"
    )
    for t in planned.targets:
        roof = f"{t.roofline_tokens_per_s:.0f}" if t.roofline_tokens_per_s else "-"
        usd = f"{_usd(t.estimated_usd):>8}"
        print(
            f"  {t.target_id:<24} {t.backend_kind:<9} {t.instance_type:<18} {t.serving_config:<26} "
            f"{t.precision:<6} {price_label(t.price):>20} {roof:>14} {t.estimated_endpoint_hours:>10.2f} {usd}"
        )
    unpriced = [t.target_id for t in planned.targets if t.estimated_usd is None]
    print(
        f"  estimated total: {planned.estimated_endpoint_hours:.2f} endpoint-hours, ${planned.estimated_usd:.2f} "
        "(deploy + InService + warm-up + sweep at 60 % of the bandwidth roofline; per-token targets: "
        "every request's tokens at list price; an estimate, not a quote)"
        + (f"; without {', '.join(unpriced)} (no price)" if unpriced else "")
    )
    for warning in planned.warnings:
        print(f"  WARNING {warning}")
    return 0


def quality_lines(q: Any) -> list[str]:
    """Per suite of the quality section: its answers (items x runs) and the smallest drop the
    gate can see at 95 % for that size (metrics.detectable_drop): a buyer knows before paying
    whether the suite can tell a one-point drop from noise."""
    if q is None:
        return []
    from llmbench.analysis import metrics
    from llmbench.quality.suites import build_suite

    lines = [f"quality: gate on the {q.grade_on} score, {q.concurrency} request(s) at a time"]
    for spec in q.suites:
        n = len(build_suite(spec)) * q.runs
        drop = metrics.detectable_drop(n) or 0.0
        lines.append(
            f"  suite {spec.name} ({spec.kind}): {n} answers, min score {q.min_score_of(spec.name):.2f}; "
            f"smallest drop detectable at 95 %: {100 * drop:.1f} points"
        )
    return lines
