"""Pipeline overhead, measured: what a `make run` of the local config costs beyond the sweeps
themselves. The run is what `make run` does after its setup: scripts/run_dag.sh (`airflow dags test
llm_benchmark`, then `llmbench show`) in a data folder of its own, its Airflow metadata migrated
first (the Makefile's airflow-db step, timed apart). The sweeps are the `sweep` stages of each
target's events.jsonl; everything else is overhead, broken down by task from Airflow's task
instances (start, end) and, inside each target task, by the stages its events.jsonl records:
Airflow's start before the first task, each task's own start-up (its duration less its stage),
the gaps between tasks, Great Expectations (validate), publish, report, and what follows the DAG
run (`llmbench show`). And per target, the billed endpoint time spent measuring, as published
(`targets.measuring_fraction`, issue 45: goal >= 0.85 on the local default on a quiet machine).
Writes benchmarks/results/pipeline_overhead.{json,md}.

  .venv/bin/python benchmarks/pipeline_overhead.py [--config local] [--date 2026-11-30] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
BIN = Path(sys.executable).parent


def _ts(s: str) -> float:
    """An ISO time (Airflow's SQLite column or an events.jsonl 'at') as epoch seconds."""
    dt = datetime.fromisoformat(s.replace(" ", "T"))
    return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp()


def task_instances(db: Path) -> list[dict[str, Any]]:
    con = sqlite3.connect(db)
    try:
        rows = con.execute(
            "SELECT task_id, map_index, state, start_date, end_date, try_number FROM task_instance "
            "WHERE dag_id = 'llm_benchmark' AND start_date IS NOT NULL ORDER BY start_date"
        ).fetchall()
    finally:
        con.close()
    return [
        {"task": t + (f"[{m}]" if m is not None and m >= 0 else ""), "state": st, "start": _ts(s),
         "end": _ts(e) if e else None, "try": tn}
        for t, m, st, s, e, tn in rows
    ]  # fmt: skip


def stages(run_dir: Path) -> list[dict[str, Any]]:
    """Every target's stage spans from its events.jsonl (started -> succeeded/failed)."""
    out = []
    for ev_file in sorted(run_dir.glob("*/events.jsonl")):
        open_: dict[str, float] = {}
        for line in ev_file.read_text().splitlines():
            if not line.strip():
                continue
            ev = json.loads(line)
            if ev["status"] == "started":
                open_[ev["stage"]] = _ts(ev["at"])
            elif ev["status"] in ("succeeded", "failed") and ev["stage"] in open_:  # not deploy's `created`
                start = open_.pop(ev["stage"])
                out.append({"target": ev_file.parent.name, "stage": ev["stage"], "start": start, "end": _ts(ev["at"]),
                            "status": ev["status"]})  # fmt: skip
    return out


def union_s(spans: list[tuple[float, float]]) -> float:
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(spans):
        if cur_e is None or s > cur_e:
            if cur_e is not None and cur_s is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None and cur_s is not None:
        total += cur_e - cur_s
    return total


def breakdown(t0: float, t_end: float, tis: list[dict[str, Any]], spans: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's wall time split into the sweeps and the rest, by task."""
    sweeps = [s for s in spans if s["stage"] == "sweep"]
    sweep_s = union_s([(s["start"], s["end"]) for s in sweeps])
    wall_s = t_end - t0
    # Each stage belongs to the task instance it overlaps most (its task's process wrote it).
    owner: dict[int, int] = {}
    for k, s in enumerate(spans):
        overlaps = [(min(s["end"], ti["end"] or t_end) - max(s["start"], ti["start"]), i) for i, ti in enumerate(tis)]
        best, i = max(overlaps, default=(0.0, -1))
        if i >= 0 and best > 0.5 * (s["end"] - s["start"]):
            owner[k] = i
    tasks = []
    for i, ti in enumerate(tis):
        end = ti["end"] or t_end
        inside = [s for k, s in enumerate(spans) if owner.get(k) == i]
        stage_s = union_s([(s["start"], s["end"]) for s in inside])
        swept = union_s([(s["start"], s["end"]) for s in inside if s["stage"] == "sweep"])
        tasks.append({
            "task": ti["task"], "state": ti["state"], "duration_s": round(end - ti["start"], 2),
            "stages": ", ".join(f"{s['stage']} {s['end'] - s['start']:.2f}s" for s in inside),
            "task_startup_s": round(end - ti["start"] - stage_s, 2) if inside else None,
            "overhead_s": round(end - ti["start"] - swept, 2),
        })  # fmt: skip
    first = min((ti["start"] for ti in tis), default=t_end)
    last = max((ti["end"] or t_end for ti in tis), default=t_end)
    in_tasks = union_s([(ti["start"], ti["end"] or t_end) for ti in tis])
    by_kind: dict[str, float] = {}
    for t in tasks:
        kind = t["task"].split(".")[-1].split("[")[0]
        by_kind[kind] = round(by_kind.get(kind, 0.0) + t["overhead_s"], 2)
    return {
        "wall_s": round(wall_s, 2),
        "sweeps_s": round(sweep_s, 2),
        "overhead_s": round(wall_s - sweep_s, 2),
        "overhead_pct_of_wall": round(100 * (wall_s - sweep_s) / wall_s, 1) if wall_s > 0 else None,
        "airflow_start_s": round(first - t0, 2),
        "between_tasks_s": round((last - first) - in_tasks, 2),
        "after_dag_s": round(t_end - last, 2),
        "in_tasks_beside_sweeps_s": round(in_tasks - sweep_s, 2),
        "overhead_by_task_kind_s": dict(sorted(by_kind.items(), key=lambda kv: -kv[1])),
        "tasks": tasks,
    }


def published_measuring(warehouse: Path) -> list[dict[str, Any]]:
    """Each target's billed endpoint time and the share spent measuring, as the run published them."""
    import duckdb

    if not warehouse.exists():
        return []
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        cols = ["target_id", "endpoint_seconds", "measuring_seconds", "measuring_fraction"]
        rows = con.execute(f"SELECT {', '.join(cols)} FROM llmbench.targets ORDER BY target_id").fetchall()
    finally:
        con.close()
    return [{c: (round(v, 3) if isinstance(v, float) else v) for c, v in zip(cols, r, strict=True)} for r in rows]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--config", default="local")
    p.add_argument("--date", default="2026-11-30")
    p.add_argument("--out", default=str(RESULTS / "pipeline_overhead"))
    p.add_argument("--keep", action="store_true", help="keep the run's data folder (OUT.work)")
    a = p.parse_args()
    home = Path(a.out + ".work")
    shutil.rmtree(home, ignore_errors=True)
    (home / "airflow").mkdir(parents=True)
    env = dict(os.environ)
    env.update(
        LLMBENCH_HOME=str(home), AIRFLOW_HOME=str(home / "airflow"), AIRFLOW__CORE__DAGS_FOLDER=str(ROOT / "dags"),
        AIRFLOW__CORE__PLUGINS_FOLDER=str(ROOT / "plugins"), AIRFLOW__CORE__LOAD_EXAMPLES="False",
        LLMBENCH_BIN=str(BIN),
    )  # fmt: skip
    t = time.monotonic()
    for cmd in (["db", "migrate"], ["pools", "import", str(ROOT / "deploy" / "pools.json")]):
        r = subprocess.run([str(BIN / "airflow"), *cmd], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"pipeline_overhead: airflow {' '.join(cmd)} failed: {r.stderr[-500:]}")
    setup_s = time.monotonic() - t
    load_before = os.getloadavg()
    t0 = time.time()
    r = subprocess.run(["bash", str(ROOT / "scripts" / "run_dag.sh"), a.date, a.config], env=env, cwd=ROOT,
                       capture_output=True, text=True)  # fmt: skip
    t_end = time.time()
    (home / "run_dag.out").write_text(r.stdout + r.stderr)
    load_after = os.getloadavg()
    runs = sorted((home / "runs").glob(f"{a.config}-{a.date}/*/"))
    if not runs:
        sys.exit(f"pipeline_overhead: no run folder under {home / 'runs'} (run_dag.sh exit {r.returncode})")
    run_dir = runs[-1]
    tis = task_instances(home / "airflow" / "airflow.db")
    spans = stages(run_dir)
    measuring = published_measuring(home / "warehouse.duckdb")
    result = {
        "benchmark": "pipeline_overhead",
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "config": a.config,
        "run_dag_exit": r.returncode,
        "airflow_db_setup_s": round(setup_s, 2),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in load_after],
        **breakdown(t0, t_end, tis, spans),
        "measuring": measuring,
        "stages": [{**s, "duration_s": round(s["end"] - s["start"], 2), "start": None, "end": None} for s in spans],
    }
    for s in result["stages"]:
        s.pop("start")
        s.pop("end")
    RESULTS.mkdir(parents=True, exist_ok=True)
    Path(a.out + ".json").write_text(json.dumps(result, indent=2) + "\n")
    Path(a.out + ".md").write_text(markdown(result))
    if not a.keep:
        shutil.rmtree(home, ignore_errors=True)
    print(json.dumps({k: v for k, v in result.items() if k not in ("tasks", "stages")}, indent=1))


def markdown(res: dict[str, Any]) -> str:
    tasks = "\n".join(
        f"| {t['task']} | {t['state']} | {t['duration_s']} | {t['overhead_s']} | "
        f"{'-' if t['task_startup_s'] is None else t['task_startup_s']} | {t['stages'] or '-'} |"
        for t in res["tasks"]
    )
    kinds = "\n".join(f"| {k} | {v} |" for k, v in res["overhead_by_task_kind_s"].items())
    measuring = "\n".join(
        f"| {m['target_id']} | {m['endpoint_seconds']} | {m['measuring_seconds']} | {m['measuring_fraction']} |"
        for m in res.get("measuring", [])
    )
    intro = __doc__.strip().split("\n\n")[0]
    return f"""# Pipeline overhead

{intro}

Run {res['at']} on {res['machine']}, config `{res['config']}` (run_dag.sh exit {res['run_dag_exit']}); load
average before {res['loadavg_before']}, after {res['loadavg_after']}. Airflow metadata setup (not in the
wall time): {res['airflow_db_setup_s']} s.

| figure | seconds |
|---|---|
| wall time of the run (run_dag.sh: airflow dags test, then llmbench show) | {res['wall_s']} |
| the sweeps themselves (events.jsonl `sweep` stages) | {res['sweeps_s']} |
| **overhead** (wall - sweeps; {res['overhead_pct_of_wall']} % of the wall time) | **{res['overhead_s']}** |
| Airflow start: process start -> first task start | {res['airflow_start_s']} |
| in tasks, beside the sweeps | {res['in_tasks_beside_sweeps_s']} |
| between tasks (scheduling, in-process executor) | {res['between_tasks_s']} |
| after the DAG run (llmbench show, exit) | {res['after_dag_s']} |

Billed endpoint time spent measuring (warm-up, quality, sweep), per target, as published
(`targets.measuring_fraction`):

| target | endpoint s | measuring s | measuring fraction |
|---|---|---|---|
{measuring}

Overhead by task (duration less its sweep), summed over mapped instances:

| task | overhead s |
|---|---|
{kinds}

Every task instance (task_startup_s: its duration less the stages its events.jsonl records; the
target tasks' stages are deploy, wait_ready, warm_up, quality, sweep, validate, teardown):

| task | state | duration s | overhead s | task_startup_s | stages |
|---|---|---|---|---|---|
{tasks}
"""


if __name__ == "__main__":
    main()
