"""Cold start on the targets row (tables.cold_start): which request is "the first the target
served" when warm-up is on, per level only, or off, and the time to ready from events.jsonl."""

import json

from llmbench.results.tables import cold_start
from tests.integration.ec2_fixtures import ec2_target
from tests.unit.analysis.test_metrics import rec


def _line(phase, r, concurrency):
    r.concurrency = concurrency
    return json.dumps({"phase": phase, **r.to_row()}) if phase else json.dumps(r.to_row())


def test_the_first_request_is_the_initial_warm_up_then_a_level_warm_up_then_the_first_level(tmp_path):
    t = ec2_target(tmp_path)
    t.dir.mkdir(parents=True)
    events = [{"stage": "deploy", "status": "created", "at": "2026-12-03T12:00:02+00:00",
               "deployed_at": "2026-12-03T12:00:00+00:00", "creates_endpoint": True},
              {"stage": "wait_ready", "status": "succeeded", "at": "2026-12-03T12:07:30+00:00"}]
    timed = [_line(None, rec(5000, [5020], 5030, 1), 1), _line(None, rec(4000, [4300], 4400, 1), 1)]
    (t.dir / "requests.jsonl").write_text("\n".join(timed) + "\n")
    assert cold_start(t, events) == {"time_to_ready_s": 450.0, "first_request_ttft_ms": 300.0}
    level = [_line("level", rec(3000, [3150], 3200, 1), 2), _line("level", rec(3000.5, [3100], 3200, 1), 2),
             _line("level", rec(3500, [3510], 3520, 1), 4)]
    (t.dir / "warmup.jsonl").write_text("\n".join(level) + "\n")
    assert cold_start(t, events)["first_request_ttft_ms"] == 150.0  # the first level's warm-up, sent first
    initial = _line("initial", rec(1000, [1900], 1950, 1), 1)
    (t.dir / "warmup.jsonl").write_text(initial + "\n" + "\n".join(level) + "\n" + '{"phase": "initial", "cut')
    assert cold_start(t, events)["first_request_ttft_ms"] == 900.0  # the initial warm-up; a cut line skipped
    assert cold_start(t, [])["time_to_ready_s"] is None


def test_a_reprocess_keeps_what_only_the_sweep_measured(tmp_path):
    """The level's warm-up count and the server's counters are not in the request records: a
    reprocess (recompute_levels) carries them over from the levels as measured."""
    import pandas as pd

    from llmbench.loadgen.sweep import SWEEP_ONLY_COLUMNS, level_row
    from llmbench.results.reprocess import recompute_levels
    from llmbench.schemas.records import to_table

    t = ec2_target(tmp_path)
    t.dir.mkdir(parents=True)
    recs = [rec(0, [100, 110], 120, 2), rec(120, [200, 210], 220, 2)]
    import pyarrow.parquet as pq

    pq.write_table(to_table(recs), t.dir / "requests.parquet")
    measured = {"level_warmup_requests": 2, "spec_decode_draft_tokens": 24.0, "spec_decode_accepted_tokens": 16.0,
                "spec_decode_acceptance_rate": 16 / 24, "spec_decode_note": None,
                "server_requests_running_mean": 1.5, "server_requests_running_max": 2.0,
                "server_requests_waiting_mean": 0.5, "server_requests_waiting_max": 1.0,
                "server_kv_cache_usage_frac_mean": 0.01, "server_kv_cache_usage_frac_max": 0.02,
                "prefix_cache_hit_rate": 0.25, "prefix_cache_hits_tokens": 128.0, "prompt_tokens_cached": 128.0,
                "server_queue_time_ms_mean": 3.0, "server_metrics_samples": 4, "server_metrics_note": None,
                "offered_as_scheduled": True, "shared_prefix_fraction": 0.25,
                "capacity_probe": 3, "prompt_sizing": "tokenizer"}
    pd.DataFrame([level_row(recs, 1, None, t.slo, 0.01, 1, measured)]).to_parquet(t.dir / "levels.parquet")
    assert recompute_levels(t)
    (row,) = pd.read_parquet(t.dir / "levels.parquet").to_dict("records")
    assert {k: row[k] for k in SWEEP_ONLY_COLUMNS} == measured
    assert level_row(recs, 1, None)["spec_decode_note"] is None  # a rebuild: not known, NULL
