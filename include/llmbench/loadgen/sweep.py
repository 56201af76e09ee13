"""The sweep: a workload's levels, one after another, through the load generator's driver
(loadgen.run_level), into files. Closed loop: one level per concurrency; open loop (the
workload's arrival_rates_rps): one level per Poisson arrival rate, each with the in-flight cap
max_in_flight. Every record is appended to requests.jsonl the moment it completes, so nothing
measured is lost if the process dies mid-sweep; requests.parquet gets a row group per level and
levels.parquet (the metric rows, metrics.summarize_level) is rewritten as each level ends.
Warm-up requests (run_warmup before the sweep; with workload.warmup_each_level, a round at each
closed-loop level's concurrency just before it) go to warmup.jsonl, never into a level. Around each
level the server's speculative-decoding counters are read where the endpoint names its metrics
page (servermetrics), so the level's row carries its acceptance rate or why it has none.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmbench.analysis import metrics
from llmbench.backends import servermetrics
from llmbench.backends.base import Endpoint
from llmbench.loadgen import tokenizer
from llmbench.loadgen.driver import run_level, run_loop, thread_runqueue_s
from llmbench.loadgen.owner import claim, still_own
from llmbench.loadgen.processes import append_line, client_processes, run_level_split
from llmbench.loadgen.prompts import Prompt, dataset_prompt, draw_prefix, make_prompt, session_turn_prompt
from llmbench.loadgen.schedules import ClosedLoop, TraceArrivals, open_loop, session_turn_key
from llmbench.schemas.dataset import scan as dataset_scan
from llmbench.schemas.dataset import scan_trace
from llmbench.schemas.records import RequestRecord, request_schema, schema_problem, to_table
from llmbench.schemas.slo import Slo
from llmbench.schemas.workload import Workload, length_mean, sample_length

ProgressFn = Callable[[str], None]


@dataclass
class SweepResult:
    requests_path: Path
    levels_path: Path
    levels: list[dict[str, Any]]  # the level rows (metrics.summarize_level), as in levels.parquet


# One scan per dataset per process (the warm-up, each level's warm-up and the sweep share it).
_scan = functools.lru_cache(maxsize=4)(dataset_scan)


def _level_args(workload: Workload, endpoint: Endpoint) -> dict[str, Any]:
    spec = workload.dataset
    # The served model's token counts size generated and trace prompts where the server can
    # tokenize (measured before the levels); a dataset's or code-edit's prompts are what they are.
    sized = spec is None and workload.prompt_style == "words"
    return dict(
        sizing=tokenizer.sizing_for(
            endpoint,
            workload.seed,
            workload.shared_prefix_tokens,
            workload.prefix_count,
            *_probe_bounds(workload),
        )
        if sized
        else None,
        dataset=(spec, _scan(spec)) if spec is not None else None,
        input_tokens=workload.input_tokens,  # a number of tokens, or a distribution (workload.sample_length)
        output_tokens=workload.output_tokens,
        seed=workload.seed,
        timeout_s=workload.request_timeout_s,
        shared_prefix_tokens=workload.shared_prefix_tokens,
        prompt_style=workload.prompt_style,
        max_response_bytes=workload.max_response_bytes,
        prefixes=(workload.prefix_count, workload.prefix_draw, workload.prefix_zipf_s),
    )


def _dataset_counts(
    endpoint: Endpoint, workload: Workload, level_args: dict[str, Any], firsts: list[int], n: int
) -> dict[int, int]:
    """{request number (a session's turn: driver.session_turn_key): the served model's count of its
    prompt} for a count-bounded dataset level (n requests from each of `firsts`, its repeats; with
    multi_turn, the turns of its first n sessions, as at most n send one), counted before the level's
    clock starts, each row's prompt once, within one probe's bounds (tokenizer.count_prompts): the
    requests past what was counted in time carry no client count. Empty where the endpoint cannot
    tokenize. A code-edit level's prompts (no dataset: each request's own seeded code, which the
    tokenizer does not size) are counted the same way, each request's once."""
    if level_args["dataset"] is None:
        return _code_edit_counts(endpoint, workload, level_args, firsts, n)
    spec, index = level_args["dataset"]
    replacement = spec.sample == "with_replacement"
    multi_turn = workload.multi_turn
    numbers = [first + i for first in firsts for i in range(n)]

    def row_of(number: int) -> int:
        return index.row_of(workload.seed, number, replacement)

    def distinct_prompts() -> Iterator[tuple[tuple[int, int], Prompt]]:  # keyed by (row, turn)
        seen: set[int] = set()
        for number in numbers:
            row = row_of(number)
            if row in seen:
                continue
            seen.add(row)
            if multi_turn is None:
                yield (row, 0), dataset_prompt(spec, index, workload.seed, number, 1)  # its length is not counted
                continue
            conv = index.conversation(row)
            # history "model": a later turn carries answers not given yet, so only turn 0 is known
            for turn in range(1 if multi_turn.history == "model" else multi_turn.max_turns):
                prompt = session_turn_prompt(conv, turn, 1, spec)
                if prompt is None:
                    break
                yield (row, turn), prompt

    counted = tokenizer.count_prompts(endpoint, distinct_prompts(), *_probe_bounds(workload))
    if multi_turn is None:
        return {number: counted[key] for number in numbers if (key := (row_of(number), 0)) in counted}
    turns_of: dict[int, list[tuple[int, int]]] = {}  # row: its counted (turn, count)
    for (row, turn), count in counted.items():
        turns_of.setdefault(row, []).append((turn, count))
    return {
        session_turn_key(number, turn): count for number in numbers for turn, count in turns_of.get(row_of(number), [])
    }


def _code_edit_counts(
    endpoint: Endpoint, workload: Workload, level_args: dict[str, Any], firsts: list[int], n: int
) -> dict[int, int]:
    """_dataset_counts for a count-bounded code-edit level: {request number: the served model's
    count of its prompt}, built as the driver builds it (prompts.make_prompt, style code-edit)."""
    seed, numbers = workload.seed, [first + i for first in firsts for i in range(n)]

    def prompts() -> Iterator[tuple[int, Prompt]]:
        for number in numbers:
            length = sample_length(workload.input_tokens, seed, number, "input")
            prefix = draw_prefix(seed, number, *level_args["prefixes"])
            yield number, make_prompt(seed, number, length, 1, workload.shared_prefix_tokens, "code-edit", prefix)

    return tokenizer.count_prompts(endpoint, prompts(), *_probe_bounds(workload))


def _probe_bounds(workload: Workload) -> tuple[float, int]:
    """(seconds, bytes a reply) a tokenizer probe may take: bounded as a request is, so a flooding
    or trickling server costs one timeout, then words."""
    return (
        min(tokenizer.PROBE_BUDGET_S, workload.request_timeout_s),
        min(tokenizer.PROBE_MAX_BYTES, workload.max_response_bytes),
    )


def _prompt_sizing(workload: Workload, level_args: dict[str, Any]) -> str:
    """What sized a level's prompts (levels.prompt_sizing): the served model's tokenizer, the
    words ~ tokens estimate, or a dataset's own text."""
    return "dataset" if workload.dataset else "tokenizer" if level_args["sizing"] is not None else "words"


def _models(workload: Workload | dict, slo: Slo | dict | None = None) -> tuple[Workload, Slo | None]:
    # Interim: pipeline.py still hands over its target's workload and SLO as dicts (validated here
    # once, so the models' defaults stay the only ones).
    if isinstance(workload, dict):
        workload = Workload.model_validate(workload)
    if isinstance(slo, dict):
        slo = Slo.model_validate(slo)
    return workload, slo


WARMUP_FILE = "warmup.jsonl"  # every warm-up record: {"phase": "initial" | "level", **record}
# A level's warm-up request numbers: negative (the initial warm-up has -n..-1), a block of a
# million per level, so no warm-up sends the prompt of a timed request (no cache hit it paid for).
LEVEL_WARMUP_STRIDE = 10**6
# What a level's row holds that only the sweep measures (not derivable from its request records):
# a reprocess keeps them as measured.
SWEEP_ONLY_COLUMNS = (
    "level_warmup_requests",
    "spec_decode_draft_tokens",
    "spec_decode_accepted_tokens",
    "spec_decode_acceptance_rate",
    "spec_decode_note",
    *metrics.SERVER_METRIC_COLUMNS,
    "offered_as_scheduled",
    "shared_prefix_fraction",
    "capacity_probe",  # the capacity search's probe number (loadgen.capacity); None for the sweep's levels
    "prompt_sizing",
)


def _warmup_sink(out_dir: Path | None, phase: str) -> Callable[[RequestRecord], None]:
    """Where warm-up records go: appended to out_dir/warmup.jsonl with their phase (none without out_dir)."""
    if out_dir is None:
        return lambda _r: None
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / WARMUP_FILE

    def sink(rec: RequestRecord) -> None:
        with open(path, "a") as f:
            f.write(json.dumps({"phase": phase, **rec.to_row()}) + "\n")

    return sink


def read_warmup(out_dir: Path) -> dict[str, list[RequestRecord]]:
    """out_dir/warmup.jsonl by phase ("initial": before the sweep; "level": before each level),
    in the order written; a line cut by a kill is skipped."""
    phases: dict[str, list[RequestRecord]] = {}
    path = out_dir / WARMUP_FILE
    if not path.exists():
        return phases
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
            phases.setdefault(row["phase"], []).append(RequestRecord.from_row(row))
        except (ValueError, KeyError, TypeError):
            continue
    return phases


def run_warmup(
    endpoint: Endpoint, workload: Workload, progress: ProgressFn | None = None, out_dir: Path | None = None
) -> dict[str, Any]:
    """Requests whose timings stay out of every level: the first requests pay for lazy loading,
    cache allocation and compilation. With out_dir, their records go to out_dir/warmup.jsonl
    (phase "initial"; the first is the target's first request: targets.first_request_ttft_ms).
    Raises if every warm-up request failed: the endpoint is unusable."""
    workload, _ = _models(workload)
    n = workload.warmup_requests
    if n == 0:
        return {"warmup_requests": 0, "failed": 0}
    (progress or (lambda _m: None))(f"warm-up: {n} request(s), timings discarded")
    recs, _ = run_loop(
        run_level(
            endpoint,
            ClosedLoop(1),
            n_requests=n,
            first_index=-n,
            on_record=_warmup_sink(out_dir, "initial"),
            **_level_args(workload, endpoint),
        )
    )
    failed = [r for r in recs if not r.ok]
    if len(failed) == n:
        raise RuntimeError(f"every warm-up request failed; first: {failed[0].error_kind}: {failed[0].error_detail}")
    return {"warmup_requests": n, "failed": len(failed)}


# What run_sweep writes, in this order (the CLI's SWEEP_FILES is every file a sweep folder may hold).
SWEEP_OUTPUTS = ("requests.jsonl", "requests.parquet", "levels.parquet")


def run_sweep(
    endpoint: Endpoint,
    workload: Workload,
    out_dir: Path,
    slo: Slo | None = None,
    progress: ProgressFn | None = None,
    record_hook: Callable[[RequestRecord], None] | None = None,
) -> SweepResult:
    """Every level of the workload (warm-up is run_warmup's job); writes out_dir/requests.jsonl
    (each record as it completes), requests.parquet (a row group per level, written when the level
    ends) and levels.parquet (rewritten as each level ends, so a sweep that fails part-way keeps
    its finished levels). Only the current level's records are held in memory. With an SLO, each
    level's row carries its goodput. record_hook, if given, sees each record after it was written."""
    import pyarrow.parquet as pq

    workload, slo = _models(workload, slo)
    out_dir.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda _msg: None)
    levels, rates, n, trace, mode, prefix_fraction = _sweep_levels(workload)
    duration_s = workload.level_duration_s
    stride = 10**6 if n is None else n
    repeats = workload.repeats
    common = _level_args(workload, endpoint)
    prompt_sizing = _prompt_sizing(workload, common)
    jsonl_path, requests_path, levels_path = (out_dir / f for f in SWEEP_OUTPUTS)
    level_rows: list[dict[str, Any]] = []

    owner = claim(out_dir, jsonl_path, requests_path)
    # O_APPEND, unbuffered: each record one write, and a split level's processes append to it too
    with open(jsonl_path, "ab", buffering=0) as jsonl, pq.ParquetWriter(requests_path, request_schema()) as writer:
        sink = jsonl.fileno()

        def on_record(rec: RequestRecord) -> None:
            append_line(sink, rec.to_row())
            if record_hook is not None:
                record_hook(rec)

        def hook_only(rec: RequestRecord) -> None:  # a split level's processes wrote it already
            if record_hook is not None:
                record_hook(rec)

        for li, c in enumerate(levels):
            still_own(out_dir, owner)
            rate = rates[li] if rates else None
            extras: dict[str, Any] = {"level_warmup_requests": 0, "shared_prefix_fraction": prefix_fraction}
            extras["prompt_sizing"] = prompt_sizing
            if workload.warmup_each_level and not rate:
                extras["level_warmup_requests"] = _warm_level(endpoint, workload, li, c, out_dir, say)
            firsts = [(li * repeats + rep) * stride for rep in range(repeats)]
            # a count-bounded dataset or code-edit level's prompts, counted before its clock starts
            own_text = workload.dataset is not None or (workload.prompt_style == "code-edit" and trace is None)
            dataset_counts = _dataset_counts(endpoint, workload, common, firsts, n) if own_text and n else None
            watch = _ServerWatch(endpoint)
            load = f"{mode} arrivals at {rate:g} req/s, at most {c} in flight, " if rate else f"concurrency {c}, "
            say(f"level {li + 1}/{len(levels)}: {load}" + (f"{duration_s:g} s" if duration_s else f"{n} requests"))
            # open loop and multi-turn sessions: one process (a session's turns share its stream)
            procs = 1 if rate or workload.multi_turn else client_processes(c, workload.client_processes)
            # a split level's loops run in processes of their own: their wait for a core is not this thread's
            runqueue0 = thread_runqueue_s() if procs == 1 else None
            hooks = (on_record, hook_only)
            recs, cpu_s = _run_repeats(
                endpoint, workload, c, rate, n, firsts, trace, dataset_counts, procs, hooks, jsonl_path, common
            )
            extras.update(watch.stop())
            if workload.trace is not None:  # offered as scheduled? (its send lateness p99 within the bound)
                lags = metrics.distribution((r.send_lag_ms for r in recs), "send_lag_ms")
                bound_ms = workload.trace.max_lateness_ms_p99
                extras["offered_as_scheduled"] = metrics.offered_as_scheduled(lags["send_lag_ms_p99"], bound_ms)
            runqueue_s = _since(runqueue0, thread_runqueue_s())
            row = level_row(recs, c, rate, slo, cpu_s, procs, extras, mode, runqueue_s)
            level_rows.append(row)
            still_own(out_dir, owner)
            writer.write_table(to_table(recs))
            _write_levels(levels_path, level_rows)
            say(
                f"level {li + 1}/{len(levels)}: concurrency {c}: {row['requests_ok']}/{row['requests_attempted']} ok, "
                f"{_fmt(row['output_tokens_per_s'])} output tok/s, TTFT p50 {_fmt(row['ttft_ms_p50'])} ms"
            )

    return SweepResult(requests_path, levels_path, level_rows)


class _ServerWatch:
    """The server's own counters over a level: speculative decoding's, read as the level starts
    and as it ends, and those a LevelSampler samples while it runs."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.before, self.why_not = servermetrics.spec_decode_counters(
            endpoint.metrics_url, endpoint.headers, endpoint.metrics_note
        )
        self.sampler = servermetrics.LevelSampler(endpoint.metrics_url, endpoint.headers, endpoint.metrics_note).start()

    def stop(self) -> dict[str, Any]:
        """The level's server columns (metrics.spec_decode_level and the sampler's)."""
        e = self.endpoint
        after, why_not_after = (
            servermetrics.spec_decode_counters(e.metrics_url, e.headers)
            if self.before is not None
            else (None, self.why_not)
        )
        out = dict(metrics.spec_decode_level(self.before, after, self.why_not or why_not_after))
        out.update(self.sampler.stop())
        return out


def _write_levels(levels_path: Path, level_rows: list[dict[str, Any]]) -> None:
    """levels.parquet, whole or absent: written beside it, then renamed over it."""
    import pandas as pd

    partial = levels_path.with_suffix(".parquet.tmp")
    pd.DataFrame(level_rows).to_parquet(partial, index=False)
    partial.replace(levels_path)


def _sweep_levels(
    workload: Workload,
) -> tuple[list[int], list[float], int | None, TraceArrivals | None, str, float | None]:
    """(each level's concurrency or in-flight cap, each open-loop level's rate, requests per level
    (None: timed), the trace's arrivals (one level) or None, the arrival mode, the shared-prefix
    fraction of the prompts or None)."""
    rates = workload.arrival_rates_rps or []
    levels = [workload.max_in_flight] * len(rates) if rates else list(workload.concurrency)
    # A timed level has no request count; request numbers stay apart across levels all the same.
    n = None if workload.level_duration_s else workload.requests_per_level
    trace = None
    if workload.trace is not None:  # one open-loop level: the trace at its own (scaled) times
        spec = workload.trace
        trace = TraceArrivals(scan_trace(spec), spec.time_scale, workload.max_in_flight, spec.block_tokens)
        levels, rates, n = [workload.max_in_flight], [trace.arrival_rate_rps], len(trace.trace)
    mode = "trace" if trace is not None else workload.arrivals
    prefix_fraction = (
        metrics.trace_shared_fraction(trace.trace.hash_ids, trace.trace.input_lengths, trace.block_tokens)
        if trace is not None
        else metrics.shared_prefix_fraction(workload.shared_prefix_tokens, length_mean(workload.input_tokens))
        if workload.dataset is None
        else None  # a dataset's own prompts: what they share is theirs, not measured here
    )
    return levels, rates, n, trace, mode, prefix_fraction


def _run_repeats(
    endpoint: Endpoint,
    workload: Workload,
    c: int,
    rate: float | None,
    n: int | None,
    firsts: list[int],
    trace: TraceArrivals | None,
    dataset_counts: dict[int, int] | None,
    procs: int,
    hooks: tuple[Callable[[RequestRecord], None], Callable[[RequestRecord], None]],
    jsonl_path: Path,
    common: dict[str, Any],
) -> tuple[list[RequestRecord], float]:
    """A level's records and client CPU seconds over its repeats (confidence intervals): each in
    this process, or (closed loop, procs > 1) split over client processes that append to
    requests.jsonl themselves. hooks: (for a record this process writes, for one a split level's
    processes wrote already)."""
    on_record, hook_only = hooks
    duration_s = workload.level_duration_s
    recs: list[RequestRecord] = []
    cpu_s = 0.0
    for rep, first in enumerate(firsts):  # repeated runs of the level: confidence intervals
        kwargs = dict(n_requests=n, first_index=first, on_record=on_record, duration_s=duration_s, repeat=rep, **common)
        if dataset_counts is not None:
            kwargs["dataset_counts"] = dataset_counts
        if workload.multi_turn is not None:
            kwargs["multi_turn"] = workload.multi_turn
        if procs > 1:  # closed loop only; each process appends to requests.jsonl itself
            r_recs, r_cpu = run_level_split(
                endpoint,
                ClosedLoop(c),
                processes=procs,
                jsonl_path=jsonl_path,
                **{**kwargs, "on_record": hook_only},
            )
        else:
            schedule = (
                trace
                if trace is not None
                else open_loop(
                    workload.arrivals,
                    rate,
                    c,
                    workload.seed,
                    first,
                    workload.burstiness,
                    workload.rate_shape.steps() if workload.rate_shape else None,
                )
                if rate
                else ClosedLoop(c)
            )
            r_recs, r_cpu = run_loop(run_level(endpoint, schedule, **kwargs))
        recs.extend(r_recs)
        cpu_s += r_cpu
    return recs, cpu_s


def _since(before: float | None, after: float | None) -> float | None:
    """A counter's growth across a level; None when either reading is missing."""
    return None if before is None or after is None else after - before


def _warm_level(endpoint: Endpoint, workload: Workload, li: int, c: int, out_dir: Path, say: ProgressFn) -> int:
    """Seed 003's per-level warm-up: each of the level's c streams sends workload.warmup_each_level
    requests at the level's own concurrency (one process), their records to warmup.jsonl (phase
    "level"), none to the level. Returns how many were sent."""
    n = c * workload.warmup_each_level
    say(f"level {li + 1}: warm-up at concurrency {c}: {n} request(s), kept out of the level")
    recs, _ = run_loop(
        run_level(
            endpoint,
            ClosedLoop(c),
            n_requests=n,
            first_index=-(li + 1) * LEVEL_WARMUP_STRIDE,
            on_record=_warmup_sink(out_dir, "level"),
            **_level_args(workload, endpoint),
        )
    )
    return len(recs)


def level_row(
    recs: list[RequestRecord],
    concurrency: int,
    rate: float | None,
    slo: Slo | None = None,
    client_cpu_s: float | None = None,
    client_processes: int | None = None,
    measured: dict[str, Any] | None = None,
    arrivals: str = "poisson",
    client_runqueue_s: float | None = None,
) -> dict[str, Any]:
    """One row of levels.parquet from a level's records (every repeat): metrics.summarize_level,
    the 95 % confidence intervals over its repeats, and how it was driven. The sweep, a rebuild
    after a crash and a reprocess all build level rows here. The client's CPU and process count
    are measured while the level runs, not derivable from its records: None where unknown; so are
    `measured`'s SWEEP_ONLY_COLUMNS (the level's warm-up count, the server's speculative-decoding
    counters), NULL where not given."""
    # by request number: the sweep holds records in completion order, a reprocess reads them back
    # numbered, and a mean summed in another order differs in its last bit
    recs = sorted(recs, key=lambda r: (r.repeat, r.request_index))
    row = metrics.summarize_level(
        recs, concurrency, client_cpu_s=client_cpu_s, slo=slo, client_runqueue_s=client_runqueue_s
    )
    repeats = sorted({r.repeat for r in recs})
    row["repeats"] = len(repeats)
    per_repeat = [metrics.summarize_level([r for r in recs if r.repeat == k], concurrency) for k in repeats]
    for metric in ("output_tokens_per_s", "ttft_ms_p50"):
        row[f"{metric}_ci95_low"], row[f"{metric}_ci95_high"] = metrics.confidence_interval(
            [r[metric] for r in per_repeat]
        )
    row["client_processes"] = client_processes
    # open loop: the offered load is the level's key, concurrency its in-flight cap
    # open loop: load_mode names the arrivals' gaps (workload.arrivals: poisson, gamma, constant)
    row["load_mode"], row["arrival_rate_rps"] = (arrivals, rate) if rate else ("closed", 0.0)
    row.update({k: (measured or {}).get(k) for k in SWEEP_ONLY_COLUMNS})
    return row


def records_by_level(records: list[RequestRecord]) -> dict[tuple[float, int], list[RequestRecord]]:
    """Records grouped into their levels, told apart by (arrival rate, concurrency), in the order
    their requests were numbered."""
    groups: dict[tuple[float, int], list[RequestRecord]] = {}
    for rec in sorted(records, key=lambda r: r.request_index):
        groups.setdefault((rec.arrival_rate_rps, rec.concurrency), []).append(rec)
    return groups


def read_jsonl_records(jsonl_path: Path) -> tuple[list[RequestRecord], int]:
    """(every whole record of a requests.jsonl, lines skipped): a last line cut by a kill is skipped,
    and so is a record that does not fit the requests table (written before the record builder
    checked every record: a server's 10^12 token count would end the rebuild as it ended the sweep)."""
    records: list[RequestRecord] = []
    skipped = 0
    with jsonl_path.open() as f:
        for line in f:
            try:
                record = RequestRecord.from_row(json.loads(line))
            except (ValueError, KeyError, TypeError):
                skipped += 1
                continue
            if schema_problem(record) is not None:
                skipped += 1
                continue
            records.append(record)
    return records, skipped


def read_records(requests_path: Path) -> list[RequestRecord]:
    """Every record of a requests.parquet, as written."""
    import pyarrow.parquet as pq

    table = pq.read_table(requests_path)
    return [RequestRecord.from_row(row) for row in table.to_pylist()]


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def rebuild(out_dir: Path) -> tuple[SweepResult, int]:
    """requests.parquet and levels.parquet again from out_dir/requests.jsonl: what a killed sweep
    leaves is its records (appended as each completed), not its tables. A last line cut by the
    kill is skipped. Levels are told apart by (arrival rate, concurrency), in the order their
    requests were numbered; a level cut short counts what completed. Returns (the result, lines
    skipped). Client CPU and the SLO's goodput are not known here (left empty)."""
    import pandas as pd

    records, skipped = read_jsonl_records(out_dir / "requests.jsonl")
    groups = records_by_level(records)
    level_rows = [level_row(recs, c, rate) for (rate, c), recs in groups.items()]
    requests_path, levels_path = out_dir / "requests.parquet", out_dir / "levels.parquet"
    write_requests(requests_path, groups)
    pd.DataFrame(level_rows).to_parquet(levels_path, index=False)
    return SweepResult(requests_path, levels_path, level_rows), skipped


def write_requests(requests_path: Path, groups: dict[tuple[float, int], list[RequestRecord]]) -> None:
    """requests.parquet from records grouped by level (records_by_level): a row group per level,
    as the sweep writes it."""
    import pyarrow.parquet as pq

    with pq.ParquetWriter(requests_path, request_schema()) as writer:
        for recs in groups.values():
            writer.write_table(to_table(recs))
