"""Offered load at the limit: is the load we offer the load we meant? llmbench, AIPerf and
GuideLLM, one after another in the same run, drive the same independent server
(include/llmbench/testing/paced.py: plain aiohttp.web, OpenAI chat-completions streaming, TTFT
100 ms, ITL 10 ms, 256 tokens, pinned to core 0) with the same closed loop (256 streams, 1,024
requests, 32 input tokens), each client pinned to core 1. Every row is held against the schedule:
the ideal throughput of a closed loop of C streams against a server with fixed TTFT T,
inter-token latency I and N output tokens is C * N / (T + (N - 1) * I) tok/s (24,730.6 here),
and the deficit is how far below it the client stayed. Targets for llmbench (issue 17): output
tok/s within 1 % of the schedule, TTFT p50 at most 5 ms above the server's 100 ms, ITL mean within
0.5 % of 10 ms. Writes benchmarks/results/offered_load.{json,md}.

The peers are installed on first use, each in a venv of its own under the cache
($LLMBENCH_CACHE/peers/<name>-<version>, never in the project's lock), with a local word-level
tokenizer (built with `tokenizers`; no model hub). A peer that cannot be installed or run gets a
row saying why; the bench goes on.

  .venv/bin/python benchmarks/offered_load.py [--streams 256] [--requests 1024] [--runs 3]
                                              [--peers aiperf,guidellm | --peers none]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from llmbench.analysis import metrics
from llmbench.paths import cache_home
from llmbench.testing import paced
from llmbench.testing._serve import ServerProcess

RESULTS = Path(__file__).resolve().parent / "results"
BIN = Path(sys.executable).parent
TTFT_MS, ITL_MS, TOKENS, INPUT_TOKENS = 100.0, 10.0, 256, 32
TARGETS = {"deficit_pct": 1.0, "ttft_p50_excess_ms": 5.0, "itl_mean_error_pct": 0.5}
PEERS = {"aiperf": "0.13.0", "guidellm": "0.8.1"}
SERVER_CORE, CLIENT_CORE = 0, 1

# A word-level tokenizer folder that AutoTokenizer loads from disk: every generated token (" tok")
# is one token to it, and the peers' synthetic prompts (words it does not know) count one per word.
MAKE_TOKENIZER = r"""
import json, os, sys
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
words = ["[UNK]", "[PAD]", "<s>", "</s>", "tok"] + [f"w{i}" for i in range(2000)]
tok = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
tok.decoder = decoders.WordPiece(prefix="##")
tok.save(os.path.join(out, "tokenizer.json"))
json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]", "pad_token": "[PAD]",
           "bos_token": "<s>", "eos_token": "</s>", "model_max_length": 1000000},
          open(os.path.join(out, "tokenizer_config.json"), "w"))
json.dump({"model_type": "llama"}, open(os.path.join(out, "config.json"), "w"))
"""

def pinned(cmd: list[str]) -> list[str]:
    return ["taskset", "-c", str(CLIENT_CORE), *cmd] if (os.cpu_count() or 1) >= 2 else cmd


SERVER_PID: int | None = None  # the paced server's process, once started (its CPU is not "others'")


def _busy_s() -> float:
    """CPU seconds every core of the machine spent busy since boot (/proc/stat)."""
    fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")  # less idle, iowait


def _server_cpu_s() -> float:
    if SERVER_PID is None:
        return 0.0
    import psutil

    t = psutil.Process(SERVER_PID).cpu_times()
    return t.user + t.system


def timed(cmd: list[str], log: Path, env: dict[str, str] | None = None, timeout_s: float = 900) -> dict[str, Any]:
    """Run a client to completion: exit code, wall seconds, CPU seconds of it and every process it
    waited for (getrusage of the children), the load average as it started, and the CPU the rest
    of the machine used meanwhile (every core's busy time less the client's and the server's, in %
    of one core: the machine may be shared, and what others run is on the server's core too)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    busy0, server0 = _busy_s(), _server_cpu_s()
    t0 = time.monotonic()
    with log.open("w") as f:
        try:
            rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, timeout=timeout_s).returncode
        except subprocess.TimeoutExpired:
            rc = -1
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    server = _server_cpu_s() - server0
    others = (_busy_s() - busy0) - cpu - server
    return {"rc": rc, "wall_s": wall, "cpu_s": cpu, "loadavg_1m": load, "others_cpu_pct": 100 * max(0.0, others) / wall,
            "server_cpu_pct": 100 * server / wall}


def tail(log: Path, n: int = 3) -> str:
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    return " / ".join(lines[-n:])[-400:]


def row(client: str, streams: int, requests: int, run: dict[str, Any], **figures: Any) -> dict[str, Any]:
    """One table row: the client's figures held against the schedule and the targets."""
    ideal = metrics.schedule_output_tokens_per_s(streams, TTFT_MS, ITL_MS, TOKENS)
    tps, ttft50, ttft99, itl = (figures.get(k) for k in ("output_tps", "ttft_ms_p50", "ttft_ms_p99", "itl_ms_mean"))
    out: dict[str, Any] = {
        "client": client,
        "streams": streams,
        "requests": requests,
        "requests_failed": figures.get("requests_failed"),
        "output_tps": _r(tps, 1),
        "schedule_tps": round(ideal, 1),
        "deficit_pct": _r(metrics.schedule_deficit_pct(tps, ideal), 2),
        "achieved_concurrency": _r(figures.get("achieved_concurrency"), 1),
        "ttft_p50_excess_ms": _r(ttft50 - TTFT_MS if ttft50 is not None else None, 1),
        "ttft_p99_excess_ms": _r(ttft99 - TTFT_MS if ttft99 is not None else None, 1),
        "itl_mean_error_pct": _r(100 * (itl / ITL_MS - 1) if itl is not None else None, 2),
        "turnaround_ms_p50": _r(figures.get("turnaround_ms_p50"), 2),
        "turnaround_ms_p99": _r(figures.get("turnaround_ms_p99"), 2),
        "turnaround_ms_max": _r(figures.get("turnaround_ms_max"), 2),
        "client_cpu_s": _r(run.get("cpu_s"), 1),
        "client_cpu_pct": _r(100 * run["cpu_s"] / run["wall_s"] if run.get("wall_s") else None, 1),
        "wall_s": _r(run.get("wall_s"), 1),
        "loadavg_1m": _r(run.get("loadavg_1m"), 2),
        "others_cpu_pct": _r(run.get("others_cpu_pct"), 1),
        "server_cpu_pct": _r(run.get("server_cpu_pct"), 1),
        "server_ttft_ms_p50": _r(figures.get("server_ttft_ms_p50"), 1),
        "server_admit_ms_p50": _r(figures.get("server_admit_ms_p50"), 1),
        "server_admit_ms_p90": _r(figures.get("server_admit_ms_p90"), 1),
        "note": figures.get("note", ""),
    }
    out["within_targets"] = (
        None
        if tps is None
        else bool(
            out["deficit_pct"] <= TARGETS["deficit_pct"]
            and out["ttft_p50_excess_ms"] <= TARGETS["ttft_p50_excess_ms"]
            and abs(out["itl_mean_error_pct"]) <= TARGETS["itl_mean_error_pct"]
        )
    )
    return out


def _r(v: float | None, nd: int) -> float | None:
    return None if v is None else round(float(v), nd)


def server_figures(url: str, sends_ns: list[int] | None = None) -> dict[str, Any]:
    """The server's own record since the last reset: its TTFT p50 (handler start -> first token)
    and, given the client's send stamps, its admission lag p50 / p90: how long after a send the
    server's handler started, the k-th send matched with the k-th handler start of the level (a
    TTFT's share spent in the server's queue and parser, out of any client's reach)."""
    served = paced.fetch_record(url)["requests"]
    reqs = [r for r in served if r["first"] is not None]
    out = {"server_ttft_ms_p50": metrics.distribution(((r["first"] - r["start"]) * 1000 for r in reqs), "t")["t_p50"]}
    if sends_ns:
        starts = sorted(r["start"] for r in served)[-len(sends_ns) :]  # the level's, after any warm-up
        lags = (start * 1000 - send / 1e6 for start, send in zip(starts, sorted(sends_ns), strict=False))
        admit = metrics.distribution(lags, "a")
        out.update(server_admit_ms_p50=admit["a_p50"], server_admit_ms_p90=admit["a_p90"])
    return out


def sweep_figures(out: Path, streams: int) -> dict[str, Any]:
    """A llmbench sweep folder's level against the schedule, turnaround from requests.jsonl."""
    import pandas as pd

    lv = pd.read_parquet(out / "levels.parquet").iloc[0]
    records = [SimpleNamespace(**json.loads(line)) for line in (out / "requests.jsonl").open()]
    load = metrics.offered_load(records, streams, TTFT_MS, ITL_MS, TOKENS, float(lv["output_tokens_per_s"]))
    return {
        "output_tps": float(lv["output_tokens_per_s"]),
        "requests_failed": int(lv["requests_failed"]),
        "achieved_concurrency": float(lv["achieved_concurrency"]),
        "ttft_ms_p50": float(lv["ttft_ms_p50"]),
        "ttft_ms_p99": float(lv["ttft_ms_p99"]),
        "itl_ms_mean": float(lv["itl_ms_mean"]),
        "turnaround_ms_p50": load["turnaround_ms_p50"],
        "turnaround_ms_p99": load["turnaround_ms_p99"],
        "turnaround_ms_max": load["turnaround_ms_max"],
        "level_client_cpu_pct": float(lv["client_cpu_pct"]),
    }


def run_llmbench(url: str, streams: int, requests: int, work: Path, keep_alive: bool = True) -> dict[str, Any]:
    """`llmbench sweep --backend openai` as a user runs it: a connection kept per stream (the
    default), or with --no-keep-alive a fresh one per request (what the CLI did before)."""
    out = work / ("llmbench" if keep_alive else "llmbench-close")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [str(BIN / "llmbench"), "sweep", "--backend", "openai", "--url", url + "/v1",
           "--concurrency", str(streams), "--requests-per-level", str(requests), "--input-tokens",
           str(INPUT_TOKENS), "--output-tokens", str(TOKENS), "--warmup", "2", "--out", str(out)]  # fmt: skip
    name = "llmbench sweep"
    if not keep_alive:
        cmd.append("--no-keep-alive")
        name += " --no-keep-alive"
    paced.fetch_record(url, reset=True)
    run = timed(pinned(cmd), work / (out.name + ".log"))
    if run["rc"] != 0:
        return row(name, streams, requests, run, note=f"exit {run['rc']}: {tail(work / (out.name + '.log'))}")
    records = [json.loads(line) for line in (out / "requests.jsonl").open()]
    figures = {**sweep_figures(out, streams), **server_figures(url, [r["send_ns"] for r in records])}
    return row(name, streams, requests, run, **figures)


REFERENCE = "reference: aiohttp closed loop"
# Why the floor's turnaround column reads 0: nothing runs between its end stamp and its next send stamp.
REFERENCE_STAMPS = (
    "send stamped before aiohttp's post: its turnaround is 0 by construction, its client work is in its TTFT"
)


def run_reference(url: str, streams: int, requests: int, work: Path) -> dict[str, Any]:
    """The floor: benchmarks/reference_client.py (the smallest closed loop, keep-alive) on the
    same server, core and run, its four stamps per request read the way llmbench's records are."""
    out = work / "reference.json"
    cmd = [sys.executable, str(Path(__file__).resolve().parent / "reference_client.py"), url, str(streams),
           str(requests), str(INPUT_TOKENS), str(TOKENS)]  # fmt: skip
    paced.fetch_record(url, reset=True)
    run = timed(pinned(cmd), out)
    try:
        recs = json.loads(out.read_text())["records"] if run["rc"] == 0 else None
    except ValueError as e:
        return row(REFERENCE, streams, requests, run, note=f"its output: {e}"[:300])
    if recs is None:
        return row(REFERENCE, streams, requests, run, note=f"exit {run['rc']}: {tail(out)}")
    window_s = (max(r["end_ns"] for r in recs) - min(r["send_ns"] for r in recs)) / 1e9
    ok = [r for r in recs if r["first_ns"] is not None]
    ttft = metrics.distribution(((r["first_ns"] - r["send_ns"]) / 1e6 for r in ok), "t")
    gaps = sum(r["tokens"] - 1 for r in ok if r["tokens"] > 1)
    as_records = [SimpleNamespace(repeat=0, worker=r["stream"], send_ns=r["send_ns"], end_ns=r["end_ns"]) for r in recs]
    tps = sum(r["tokens"] for r in ok) / window_s
    load = metrics.offered_load(as_records, streams, TTFT_MS, ITL_MS, TOKENS, tps)
    return row(REFERENCE, streams, requests, run, output_tps=tps, requests_failed=requests - len(ok),
               achieved_concurrency=sum(r["end_ns"] - r["send_ns"] for r in recs) / 1e9 / window_s,
               ttft_ms_p50=ttft["t_p50"], ttft_ms_p99=ttft["t_p99"],
               itl_ms_mean=sum(r["gaps_ns"] for r in ok) / gaps / 1e6 if gaps else None,
               turnaround_ms_p50=load["turnaround_ms_p50"], turnaround_ms_p99=load["turnaround_ms_p99"],
               turnaround_ms_max=load["turnaround_ms_max"], note=REFERENCE_STAMPS,
               **server_figures(url, [r["send_ns"] for r in recs]))  # fmt: skip


def peer_venv(name: str, version: str) -> tuple[Path | None, str]:
    """The peer's venv under the cache, installed on first use (uv, else pip). (bin folder, '') or
    (None, why not)."""
    venv = cache_home() / "peers" / f"{name}-{version}"
    done = venv / ".installed"
    if done.exists():
        return venv / "bin", ""
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    uv = BIN / "uv"
    if uv.exists():
        py = str(venv / "bin" / "python")
        steps = [[str(uv), "venv", "-q", "--python", sys.executable, str(venv)],
                 [str(uv), "pip", "install", "-q", "--python", py, f"{name}=={version}"]]  # fmt: skip
    else:
        steps = [[sys.executable, "-m", "venv", str(venv)],
                 [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", f"{name}=={version}"]]  # fmt: skip
    print(f"offered_load: installing {name}=={version} into {venv}", flush=True)
    for step in steps:
        r = subprocess.run(step, capture_output=True, text=True, timeout=1200)
        if r.returncode != 0:
            return None, f"install failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]}"
    done.write_text(f"{name}=={version}\n")
    return venv / "bin", ""


def tokenizer_dir(python: Path) -> tuple[Path | None, str]:
    tok = cache_home() / "peers" / "tokenizer-wordlevel"
    if not (tok / "tokenizer.json").exists():
        r = subprocess.run([str(python), "-c", MAKE_TOKENIZER, str(tok)], capture_output=True, text=True)
        if r.returncode != 0:
            return None, f"tokenizer: {r.stderr.strip().splitlines()[-1:]}"
    return tok, ""


def aiperf(bindir: Path, tok: Path, url: str, streams: int, requests: int, work: Path) -> tuple[list[str], Any]:
    """AIPerf's command, and how to read its figures once it ran."""
    art = work / "aiperf"
    shutil.rmtree(art, ignore_errors=True)
    cmd = [str(bindir / "aiperf"), "profile", "--model", "paced", "--url", url, "--endpoint-type", "chat",
           "--streaming", "--concurrency", str(streams), "--request-count", str(requests),
           "--synthetic-input-tokens-mean", str(INPUT_TOKENS), "--synthetic-input-tokens-stddev", "0",
           "--output-tokens-mean", str(TOKENS), "--output-tokens-stddev", "0", "--tokenizer", str(tok),
           "--ui", "none", "--artifact-dir", str(art)]  # fmt: skip

    def figures() -> dict[str, Any]:
        d = json.loads((art / "profile_export_aiperf.json").read_text())
        starts, ends, busy = [], [], 0.0
        per_request = art / "profile_export.jsonl"
        for line in per_request.open() if per_request.exists() else []:
            m = json.loads(line).get("metadata", {})
            if m.get("request_start_ns") and m.get("request_end_ns"):
                starts.append(m["request_start_ns"])
                ends.append(m["request_end_ns"])
                busy += (m["request_end_ns"] - m["request_start_ns"]) / 1e9
        window = (max(ends) - min(starts)) / 1e9 if starts else None
        return {
            "output_tps": d["output_token_throughput"]["avg"],
            "requests_failed": requests - int(d.get("request_count", {}).get("avg") or 0),
            "achieved_concurrency": busy / window if window else None,
            "ttft_ms_p50": d["time_to_first_token"]["p50"],
            "ttft_ms_p99": d["time_to_first_token"]["p99"],
            "itl_ms_mean": d["inter_token_latency"]["avg"],
        }

    return cmd, figures


def guidellm(bindir: Path, tok: Path, url: str, streams: int, requests: int, work: Path) -> tuple[list[str], Any]:
    """GuideLLM's command, and how to read its figures once it ran."""
    out = work / "guidellm.json"
    out.unlink(missing_ok=True)
    cmd = [str(bindir / "guidellm"), "run", "--backend", f"kind=openai_http,target={url},model={tok}",
           "--profile", f"kind=concurrent,streams={streams}", "--constraint", f"kind=max_requests,count={requests}",
           "--data", f"kind=synthetic_text,prompt_tokens={INPUT_TOKENS},output_tokens={TOKENS}",
           "--output", f"kind=json,path={out}", "--disable-console-interactive"]  # fmt: skip

    def figures() -> dict[str, Any]:
        b = json.loads(out.read_text())["benchmarks"][0]
        ok = {k: v["successful"] for k, v in b["metrics"].items() if isinstance(v, dict) and "successful" in v}
        ttft = ok["time_to_first_token_ms"]
        return {
            "output_tps": ok["output_token_count"]["total_sum"] / b["duration"],
            "requests_failed": requests - int(ttft["count"]),
            "achieved_concurrency": ok["request_concurrency"]["mean"],
            "ttft_ms_p50": ttft["percentiles"]["p50"],
            "ttft_ms_p99": ttft["percentiles"]["p99"],
            "itl_ms_mean": ok["inter_token_latency_ms"]["mean"],
        }

    return cmd, figures


PEER_RUNS = {"aiperf": ("AIPerf", aiperf), "guidellm": ("GuideLLM", guidellm)}


def run_peer(peer: str, url: str, streams: int, requests: int, work: Path) -> dict[str, Any]:
    """One peer's row: installed on first use, run pinned like llmbench, read from its export."""
    label, make = PEER_RUNS[peer]
    name = f"{label} {PEERS[peer]}"
    bindir, why = peer_venv(peer, PEERS[peer])
    tok, why_tok = tokenizer_dir(bindir / "python") if bindir else (None, "")
    if bindir is None or tok is None:
        return row(name, streams, requests, {}, note=why or why_tok)
    cmd, figures = make(bindir, tok, url, streams, requests, work)
    paced.fetch_record(url, reset=True)
    log = work / f"{peer}.log"
    run = timed(pinned(cmd), log)
    try:
        got = figures() if run["rc"] == 0 else None
    except (OSError, KeyError, ValueError, IndexError) as e:
        return row(name, streams, requests, run, note=f"its export: {type(e).__name__}: {e}"[:300])
    if got is None:
        return row(name, streams, requests, run, note=f"exit {run['rc']}: {tail(log)}")
    return row(name, streams, requests, run, note="no stream id in its records: no turnaround",
               **got, **server_figures(url))  # fmt: skip


COLUMNS = ["client", "streams", "requests_failed", "output_tps", "schedule_tps", "deficit_pct",
           "achieved_concurrency", "ttft_p50_excess_ms", "ttft_p99_excess_ms", "itl_mean_error_pct",
           "turnaround_ms_p50", "turnaround_ms_p99", "turnaround_ms_max", "server_admit_ms_p50",
           "server_admit_ms_p90", "client_cpu_s", "client_cpu_pct", "server_cpu_pct", "loadavg_1m", "others_cpu_pct", "within_targets", "note"]  # fmt: skip


def markdown(result: dict[str, Any]) -> str:
    def cell(v: Any) -> str:
        return "-" if v is None or v == "" else str(v)

    table = "| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS) + "\n" + "\n".join(
        "| " + " | ".join(cell(r[c]) for c in COLUMNS) + " |" for r in result["rows"]
    )
    intro = __doc__.strip().split("\n\n")[0]
    return (
        f"# Offered load\n\n{intro}\n\nRun {result['at']} on {result['machine']}; server on core {SERVER_CORE}, "
        f"every client on core {CLIENT_CORE}; load average (1 min) before the run {result['loadavg_before']}, "
        f"after {result['loadavg_after']}; the server's event loop: {result.get('server_loop', 'asyncio')}. "
        f"Schedule: {result['schedule']}. Targets (llmbench): {TARGETS}.\n\n"
        "deficit_pct: 100 * (1 - output_tps / schedule_tps). ttft_*_excess_ms: the client's TTFT percentile "
        "minus the server's 100 ms. itl_mean_error_pct: the client's mean ITL against 10 ms. turnaround: per "
        "stream, completion of a request -> send of the next (llmbench's requests.jsonl). server_admit_ms: how "
        "long after the client's send the server's handler started (the k-th send against the k-th handler "
        "start): TTFT the server spends in its queue and parser. client_cpu: every "
        "process of the client (its workers, the record builder), start-up included, over its wall time. "
        "others_cpu_pct: what the rest of the machine used meanwhile (all cores busy, less client and server), "
        "in % of one core: another user's load lands on the server's core too.\n\n"
        f"{table}\n"
    )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--streams", type=int, default=256)
    p.add_argument("--requests", type=int, default=1024)
    p.add_argument("--runs", type=int, default=3, help="llmbench sweep runs (the peers run once)")
    p.add_argument("--peers", default="aiperf,guidellm", help="comma-separated, or none")
    p.add_argument("--no-close-row", action="store_true",
                   help="leave out the `llmbench sweep --no-keep-alive` row (a fresh connection per request)")
    p.add_argument("--server-loop", choices=["uvloop", "asyncio"], default="uvloop",
                   help="the paced server's event loop (testing.paced --loop)")
    p.add_argument("--no-reference", action="store_true", help="leave out the reference closed loop's rows")
    p.add_argument("--out", default=str(RESULTS / "offered_load"))
    a = p.parse_args()
    work = Path(a.out + ".work")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    core = ["--core", str(SERVER_CORE)] if (os.cpu_count() or 1) >= 2 else []
    server = ServerProcess("llmbench.testing.paced", "--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS),
                           "--tokens", str(TOKENS), "--loop", a.server_loop, *core)  # fmt: skip
    peers = [x for x in a.peers.split(",") if x and x != "none"]
    global SERVER_PID
    rows = []
    load_before = round(os.getloadavg()[0], 2)
    with server:
        SERVER_PID = server.proc.pid
        for _ in range(a.runs):  # llmbench and the floor in turn: the same moment's noise on both
            rows.append(run_llmbench(server.url, a.streams, a.requests, work))
            print(json.dumps(rows[-1]), flush=True)
            if not a.no_reference:
                rows.append(run_reference(server.url, a.streams, a.requests, work))
                print(json.dumps(rows[-1]), flush=True)
        if not a.no_close_row:
            rows.append(run_llmbench(server.url, a.streams, a.requests, work, keep_alive=False))
            print(json.dumps(rows[-1]), flush=True)
        for peer in peers:
            if peer not in PEER_RUNS:
                rows.append(row(peer, a.streams, a.requests, {}, note="unknown peer"))
                continue
            try:
                rows.append(run_peer(peer, server.url, a.streams, a.requests, work))
            except Exception as e:  # noqa: BLE001 (a peer that breaks is a row saying why, not a failed bench)
                rows.append(row(peer, a.streams, a.requests, {}, note=f"{type(e).__name__}: {e}"[:300]))
            print(json.dumps(rows[-1]), flush=True)
    result = {
        "benchmark": "offered_load",
        "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "schedule": {"ttft_ms": TTFT_MS, "itl_ms": ITL_MS, "output_tokens": TOKENS, "input_tokens": INPUT_TOKENS,
                     "formula": "C * N / (T + (N - 1) * I)"},  # fmt: skip
        "targets": TARGETS,
        "server_loop": a.server_loop,
        "peers": PEERS,
        "loadavg_before": load_before,
        "loadavg_after": round(os.getloadavg()[0], 2),
        "rows": rows,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    Path(a.out + ".json").write_text(json.dumps(result, indent=2) + "\n")
    Path(a.out + ".md").write_text(markdown(result))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
