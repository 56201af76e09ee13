"""The SageMaker vLLM container's environment as the flags it builds, and the container's vLLM
version read off its image (what the argv check's caveat names). The parse by vLLM itself is
tests/integration/test_vllm_argv.py."""

from llmbench.backends import vllmargs
from llmbench.backends.sagemaker.spec import container_argv


def test_the_sagemaker_environment_becomes_flags_as_the_container_builds_them():
    env = {"SM_VLLM_MODEL": "m", "SM_VLLM_ENABLE_PREFIX_CACHING": "", "SM_VLLM_MAX_NUM_SEQS": "8", "HF_TOKEN": "x"}
    assert container_argv(env) == ["--enable-prefix-caching", "--max-num-seqs", "8", "--model", "m"]
    assert vllmargs.image_version("763104351884.dkr.ecr.{region}.amazonaws.com/vllm:0.15.1-gpu-py312") == "0.15.1"
    assert vllmargs.image_version("docker.io/vllm/vllm-openai:v0.15.1") == "0.15.1"
    assert vllmargs.image_version("example.com/other:1.0") is None
