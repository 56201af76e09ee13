"""Every vLLM launch of every shipped config, parsed by vLLM itself: the EC2 user data's words after
the image, the SageMaker DLC's SM_VLLM_* environment turned into flags as the container does, and
the local engine's command line, through the pinned vLLM's `make_arg_parser` and
`validate_parsed_serve_args` (llmbench.backends.vllmargs). Nothing starts; one subprocess."""

from pathlib import Path

import pytest

from llmbench.backends import vllmargs
from llmbench.backends.local import vllm
from llmbench.planning.plan import plan_checked

from .vllm_fixtures import need_vllm

CONFIGS = sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "include" / "llmbench" / "config").glob("*.yaml"))


def test_every_shipped_vllm_launch_is_accepted_and_typos_are_refused():
    need_vllm()
    launches = [
        x for c in CONFIGS for t in plan_checked(c, "2026-12-05", write=False)[0].targets for x in vllmargs.launches(t)
    ]
    kinds = {x.name.rsplit("(", 1)[1] for x in launches}
    assert kinds == {"ec2)", "sagemaker)", "local)"}, kinds  # every path that launches vLLM is covered
    typos = [
        vllmargs.Launch("typo-flag", ["--model", "m", "--max-num-seqz", "4"], None),
        vllmargs.Launch("typo-spec-key", ["--model", "m", "--speculative-config", '{"metod": "ngram"}'], None),
        vllmargs.Launch("bad-json", ["--model", "m", "--speculative-config", "{method: ngram}"], None),
        vllmargs.Launch("bad-choice", ["--model", "m", "--dtype", "float17"], None),
    ]
    version, errors = vllmargs.check(launches + typos, vllm.vllm_python())
    refused = {x.name: errors[x.name] for x in launches if errors[x.name]}
    assert refused == {}, refused
    assert "--max-num-seqz" in errors["typo-flag"]
    assert "metod" in errors["typo-spec-key"]
    assert "--speculative-config" in errors["bad-json"]
    assert "float17" in errors["bad-choice"]
    sm = next(x for x in launches if "sagemaker" in x.name)
    assert f"checked with vLLM {version}; the container runs vLLM 0.15.1" in vllmargs.line(sm, version, None)


@pytest.mark.parametrize("flag", ["--max-num-seqz"])
def test_plan_refuses_a_vllm_typo_naming_the_flag(tmp_path, flag):
    need_vllm()
    from llmbench.planning.config import ConfigError

    cfg = tmp_path / "typo.yaml"
    text = (Path(__file__).resolve().parents[2] / "include" / "llmbench" / "config" / "local-engines.yaml").read_text()
    cfg.write_text(text.replace("max_num_seqs: 8}", f"max_num_seqs: 8, extra_args: [{flag}, '4']}}"))
    with pytest.raises(ConfigError, match=flag):
        plan_checked(str(cfg), "2026-12-05", write=False, check_vllm_args=True)
