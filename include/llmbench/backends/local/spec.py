"""The local kind, as the registry knows it: llama-server (or vLLM on the CPU) on this machine, one
target at a time."""

from __future__ import annotations

from typing import Any

from llmbench.backends import registry
from llmbench.backends.local import vllm
from llmbench.backends.local.models import LocalServing, LocalTarget
from llmbench.backends.registry import BackendSpec, ConfigError, DagLimits, PlanContext, Resolved
from llmbench.schemas.targets import VllmServing

# Pool created by `make airflow-db`, the tests and the compose init service (deploy/pools.json):
# one slot, since local targets share two cores and their measurements must not overlap.
LOCAL_POOL = "llmbench_local"


def plan(ctx: PlanContext) -> Resolved:
    """The workload's longest request fits one slot's share of the context (llama-server) or the
    model length (vLLM, whose venv and model must have been built: `make vllm`)."""
    s = ctx.target.serving
    model = ctx.catalogs["models"][ctx.target.model]
    if isinstance(s, VllmServing):
        limit = min(s.max_model_len, model["context_length"])
        if ctx.need_tokens > limit:
            raise ConfigError(
                f"{ctx.where}.serving.max_model_len: input + output tokens ({ctx.need_tokens}) exceed the model "
                f"length ({limit}); raise max_model_len or shorten the workload"
            )
        ctx.out.passed(f"tokens {ctx.need_tokens} <= max_model_len {limit}")
        why_not = vllm.missing()
        if why_not:
            ctx.out.warned("local vLLM", "absent", f"{ctx.where}: {why_not}")
        else:
            ctx.out.passed("local vLLM venv and converted model present")
        return Resolved("local", LocalTarget())
    assert isinstance(s, LocalServing)  # BenchmarkConfig pairs the serving kind with its backend
    if ctx.need_tokens > min(s.ctx_per_slot, model["context_length"]):
        raise ConfigError(
            f"{ctx.where}.serving.ctx_per_slot: input + output tokens ({ctx.need_tokens}) exceed the per-slot "
            f"context ({s.ctx_per_slot}); raise ctx_per_slot or shorten the workload"
        )
    ctx.out.passed(f"tokens {ctx.need_tokens} <= ctx_per_slot {min(s.ctx_per_slot, model['context_length'])}")
    return Resolved("local", LocalTarget())


def vllm_launch(target: Any) -> tuple[list[str], str | None] | None:
    """The local vLLM's flags (its port a placeholder); the installed vLLM is the one that runs."""
    if not isinstance(target.serving, VllmServing):
        return None
    return vllm.serve_args(target.serving, vllm.vllm_model(), 8000), None


SPEC = registry.register(
    BackendSpec(
        kind="local",
        backend="llmbench.backends.local.backend:LocalBackend",
        target=LocalTarget,
        serving=("llama-server", "vllm"),
        plan=plan,
        hardware=True,
        deploy_overhead_min=0.1,
        # A target's deploy waits until no other local target of the run has a server alive, so two
        # targets' servers never overlap (the pool alone serialises tasks, not a target's lifetime).
        dag_limits=DagLimits(pool=LOCAL_POOL, pool_scope="target", deploy_poke_s=30),
        vllm_launch=vllm_launch,
    ),
    LocalServing,
)
