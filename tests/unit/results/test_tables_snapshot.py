"""The tables a run publishes, frozen: every table build_tables makes of a fixed six-path run (the
run of test_path_comparison: local, ec2, sagemaker, openai and two bedrock paths), its columns, their
types and every value, against tables_snapshot.json. The snapshot was written by the layout before
the package was split into subpackages (commit 7918dce), so this test is the proof that the move
changed no published column or number; a change that means to alter a table regenerates it
(LLMBENCH_TEST_WRITE_SNAPSHOT=1) and says so in its commit."""

import json
import os
from pathlib import Path

from tests.unit.results.test_path_comparison import run_frames  # noqa: F401 (a fixture)

SNAPSHOT = Path(__file__).with_name("tables_snapshot.json")
# What differs between two builds of the same raw results: clocks, the code's hash, the folder.
VOLATILE = {
    "computed_at", "computed_by", "planned_at", "published_at", "report_path", "run_dir", "raw_dir", "target_attempts"
}


def _frozen(frames: dict) -> dict:
    out = {}
    for name, df in sorted(frames.items()):
        if not hasattr(df, "columns"):
            continue
        rows = [{k: "<volatile>" if k in VOLATILE else str(v) for k, v in row.items()}
                for row in df.to_dict("records")]
        out[name] = {"columns": [[c, str(t)] for c, t in zip(df.columns, df.dtypes, strict=True)], "rows": rows}
    return json.loads(json.dumps(out, sort_keys=True, default=str))


def test_published_tables_keep_their_columns_types_and_values(run_frames):  # noqa: F811
    _, frames = run_frames
    got = _frozen(frames)
    if os.environ.get("LLMBENCH_TEST_WRITE_SNAPSHOT") == "1":
        SNAPSHOT.write_text(json.dumps(got, indent=1, sort_keys=True))
    want = json.loads(SNAPSHOT.read_text())
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name]["columns"] == want[name]["columns"], name
        for i, (g, w) in enumerate(zip(got[name]["rows"], want[name]["rows"], strict=True)):
            assert g == w, (name, i, {k: (g.get(k), w.get(k)) for k in set(g) | set(w) if g.get(k) != w.get(k)})
