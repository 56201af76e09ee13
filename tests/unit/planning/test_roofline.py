"""The roofline as seed 001 computes it: bandwidth / GB of weights read per generated token, from
the catalogs; a level above its ceiling carries its likely cause. Hand-computed."""

import pytest

from llmbench.analysis import metrics
from llmbench.planning.config import load_catalogs

CAT = load_catalogs()
L4 = CAT["instances"]["g6.xlarge"]
E2B = CAT["models"]["gemma-4-e2b"]


def test_gemma_4_e2b_on_an_l4_from_the_catalog():
    # 6.32 GiB = 6.32 x 2^30 B = 6.786 GB; 300 GB/s / 6.786 GB = 44.21 tok/s (seed 001: "~47",
    # 300 / 6.32 with GiB taken for GB); int4: 2.85 GiB = 3.060 GB -> 98.03 (seed 001: "~105")
    assert metrics.weight_gb_read_per_token(E2B, "bf16") == pytest.approx(6.786, abs=1e-3)
    assert metrics.roofline_tokens_per_s(L4, E2B, "bf16", 1) == pytest.approx(44.21, abs=0.01)
    assert metrics.weight_gb_read_per_token(E2B, "int4") == pytest.approx(3.060, abs=1e-3)
    assert metrics.roofline_tokens_per_s(L4, E2B, "int4", 1) == pytest.approx(98.03, abs=0.01)
    # seed 001's g6 measured 131.9 tok/s on the int4 build: 1.35x its ceiling
    assert metrics.roofline_efficiency(131.9, 98.03) == pytest.approx(1.3455, abs=1e-4)


def test_without_a_stated_size_active_parameters_are_read():
    # Qwen3-32B (dense) bf16 on one RTX PRO 6000 (1,597 GB/s): 32.8 B x 2 B = 65.6 GB -> 24.34 tok/s
    g7e = CAT["instances"]["ml.g7e.2xlarge"]
    qwen = CAT["models"]["qwen3-32b"]
    assert metrics.weight_gb_read_per_token(qwen, "bf16") == pytest.approx(65.6)
    assert metrics.roofline_tokens_per_s(g7e, qwen, "bf16", 1) == pytest.approx(24.345, abs=1e-3)
    # a MoE reads its active experts: Qwen3-Coder-30B-A3B fp8, 3.3 GB, over 4 L4s' 1,200 GB/s -> 363.6
    coder = CAT["models"]["qwen3-coder-30b-a3b"]
    assert metrics.roofline_tokens_per_s(CAT["instances"]["ml.g6.12xlarge"], coder, "fp8", 4) == pytest.approx(363.64,
                                                                                                             abs=0.01)


def test_above_the_ceiling_is_explained_not_bare():
    assert metrics.roofline_note(0.8) is None and metrics.roofline_note(None) is None
    assert metrics.roofline_note(1.0) is None
    # seed 002's g7e + EAGLE3 at C=1: 56.8 tok/s over a 24.3 ceiling = 2.33
    note = metrics.roofline_note(2.33, speculative=True, prefix_caching=True)
    assert note.startswith("efficiency 2.33 above") and "speculative decoding" in note and "prefix caching" in note
    e2b = metrics.roofline_note(1.35, weights_not_read=E2B["weights_not_read"])
    assert "per-layer embedding" in e2b and "speculative" not in e2b
    assert "no configured cause" in metrics.roofline_note(1.1)


def test_price_rows_state_the_bytes_and_the_cause():
    from llmbench.results.tables import roofline_basis
    from tests.unit.results.test_price_rows import TARGET

    eagle = TARGET.model_copy(update={
        "weight_gb_per_token": 65.6,
        "serving": TARGET.serving.__class__.model_validate({"kind": "llama-server", "name": "s"}),
    })
    assert roofline_basis(eagle, 0.9) == {"weight_gb_per_token": 65.6, "roofline_note": None}
    row = roofline_basis(eagle.model_copy(update={"weights_not_read": "per-layer embeddings"}), 1.4)
    assert "per-layer embeddings" in row["roofline_note"]


def test_seed_002_eagle3_target_flags_speculative_decoding(tmp_path):
    from llmbench.planning.plan import plan
    from llmbench.results.tables import roofline_basis

    run = plan("sagemaker-seed-002", "2026-11-30", runs_root=tmp_path)
    by_id = {t.target_id: t for t in run.targets}
    eagle = by_id["g7e-vllm-eagle3"]
    assert eagle.weight_gb_per_token == pytest.approx(65.6)
    assert eagle.roofline_tokens_per_s == pytest.approx(24.345, abs=1e-3)
    # the article's 56.8 tok/s at C=1 is 2.33x that ceiling: flagged with its cause
    row = roofline_basis(eagle, metrics.roofline_efficiency(56.8, eagle.roofline_tokens_per_s))
    assert "speculative decoding" in row["roofline_note"] and "prefix caching" in row["roofline_note"]
    assert roofline_basis(by_id["g7e-vllm-prefix-cache"], 1.2)["roofline_note"].count("speculative") == 0
