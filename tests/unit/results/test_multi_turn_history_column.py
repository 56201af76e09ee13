"""targets.multi_turn_history: which history a target's multi-turn sessions carried, from the plan
of the shipped local-traffic config (its sessions target as shipped, and with history: model)."""

import yaml

from llmbench.paths import CONFIG_DIR
from llmbench.planning.plan import plan
from llmbench.results.tables import dataset_columns


def _local_traffic(tmp_path, history):
    """local-traffic.yaml with its sessions' history set (its files made absolute: the copy lives elsewhere)."""
    cfg = yaml.safe_load((CONFIG_DIR / "local-traffic.yaml").read_text())
    for w in [cfg.get("workload") or {}] + [t.get("workload") or {} for t in cfg["targets"]]:
        for key in ("dataset", "trace"):
            if w.get(key):
                w[key]["path"] = str(CONFIG_DIR / w[key]["path"])
        if w.get("multi_turn") and history:
            w["multi_turn"]["history"] = history
    path = tmp_path / f"traffic-{history}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_the_targets_row_names_the_history_its_sessions_carried(tmp_path):
    for history, want in ((None, "data"), ("model", "model")):
        run = plan(_local_traffic(tmp_path, history), "2026-11-30", runs_root=tmp_path / str(history))
        columns = {t.target_id: dataset_columns(t)["multi_turn_history"] for t in run.targets}
        assert columns == {"traffic-dataset": None, "traffic-multiturn": want, "traffic-trace": None}
