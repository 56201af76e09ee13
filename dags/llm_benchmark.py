"""llm_benchmark: the weekly price-performance benchmark.

plan -> budget -> approve_budget (over the budget: a person approves) | within_budget
     -> [per target: deploy (setup) -> wait_ready -> warm_up -> quality -> sweep -> validate; teardown]
     -> price_performance -> publish -> report -> prune_raw_results -> check (Asset)

Param mode=reprocess runs the same graph over a date's stored run instead: plan finds it (and
checks its raw results are all there), every per-target group is skipped (nothing is deployed),
and price_performance recomputes its tables with today's code and config before publishing them
under the same run key (llmbench.results.reprocess).

The per-target chain exists once per registered backend kind (llmbench.backends.registry), as a
mapped task group named after the kind, because each needs its own limits
(BackendSpec.dag_limits: a pool for the shared machine, serialised deploys and waits deferred to
the triggerer for endpoints and instances that take minutes); one config may mix them, and a kind with no target
in the run is skipped.

Wiring only: every task calls one function of llmbench.pipeline, imported inside the task so the
scheduler parses this file without the library's heavy dependencies (the registry, read at parse
time for the groups, is pydantic models and constants).
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import Asset, Param, dag, get_current_context, setup, task, task_group, teardown

from llmbench import backends  # noqa: F401 (registers every built-in kind)
from llmbench.backends.registry import DagLimits, specs
from llmbench.settings import settings
from llmbench_airflow import (
    TRANSIENT_RETRIES,
    DeployWithinQuotaOperator,
    LlmbenchNotifier,
    WaitReadyOperator,
    budget_approval,
    weekly_deadline,
)

# LLMBENCH_SCHEDULE=none: the DAG runs only when triggered (REST API, CLI). LLMBENCH_START_DATE:
# the first date the schedule runs (a date in the future: only backfills and triggers run until
# then; a backfill may cover any dates, before it too).
SCHEDULE = settings("schedule").schedule
# The load generator's workers (LLMBENCH_SWEEP_QUEUE): a queue of their own when set.
SWEEP_QUEUE = {"queue": q} if (q := settings("sweep_queue").sweep_queue) else {}
START_DATE = pendulum.parse(settings("start_date").start_date, tz="UTC")
MAX_PARALLEL_SWEEPS = 8  # sweeps of one run at once (each holds a worker slot for its duration)
# Each stage's bound (one try): a wait for a quota or an endpoint, the sweep, the short stages.
DEPLOY_WAIT = timedelta(hours=6)  # a quota in use (or the shared machine), then 5-15 min to create
READY_WAIT = timedelta(hours=4)
SWEEP_TIMEOUT = timedelta(hours=4)
STAGE_TIMEOUT = timedelta(minutes=30)  # warm-up, quality, validate, teardown, and a deploy that does not wait
# The run's bound is never below the sum along one target's chain, after the budget approval's wait
# and an hour for the run-level tasks (plan, tables, publish, report): it only stops a run stuck
# beyond every stage's own bound. The deadline (LLMBENCH_DEADLINE_H) alerts well before.
DAGRUN_TIMEOUT = (
    timedelta(hours=settings("budget_approval_timeout_h").budget_approval_timeout_h)
    + DEPLOY_WAIT
    + READY_WAIT
    + SWEEP_TIMEOUT
    + 4 * STAGE_TIMEOUT
    + timedelta(hours=1)
)
PRICE_PERFORMANCE = Asset(name="llmbench_price_performance")
MAP_LABEL = "{{ target_label }}"  # mapped instances read "local-cpu-2c / smollm2-135m-instruct / llama-server-4slots"
# backend kind -> its DAG limits (BackendSpec.dag_limits: pools are created by `make
# airflow-db`, the tests and the compose init service from deploy/pools.json). A waiting task
# defers to the triggerer (plugins/llmbench_airflow.WaitTrigger), holding no worker or pool slot.
BACKEND_GROUPS: dict[str, DagLimits] = {spec.kind: spec.dag_limits for spec in specs()}


def _call(step: str, target: dict, *args, platform: bool = True):
    """The body every per-target task shares: label the mapped instance, then run one pipeline
    function with what the platform provides the backend (Airflow connections -> kwargs)."""
    from llmbench import pipeline
    from llmbench_airflow import backend_kwargs, use_results_store_of

    get_current_context()["target_label"] = target["label"]
    use_results_store_of([target])
    return getattr(pipeline, step)(target, *args, **(backend_kwargs(target) if platform else {}))


@dag(
    dag_id="llm_benchmark",
    schedule=None if SCHEDULE == "none" else SCHEDULE,
    start_date=START_DATE,
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=DAGRUN_TIMEOUT,
    # Every failed task, and a failed DAG run, alert through the one Notifier (plugins/llmbench_airflow:
    # the llmbench_alerts webhook, else the log). Every task is retried (TRANSIENT_RETRIES: each is
    # safe to run again, see there) except where a retry is not: plan, deploy and the budget's answer.
    default_args={**TRANSIENT_RETRIES, "on_failure_callback": [LlmbenchNotifier()]},
    on_failure_callback=[LlmbenchNotifier()],
    # a weekly run not finished LLMBENCH_DEADLINE_H hours after it was queued alerts (the triggerer)
    deadline=weekly_deadline("llm_benchmark"),
    tags=["llmbench"],
    params={
        "config": Param("local", type="string", description="benchmark config: a shipped config's name, or a path"),
        "targets": Param([], type="array", items={"type": "string"}, description="only these target ids (empty: all)"),
        "concurrency": Param(
            [],
            type="array",
            items={"type": "integer", "minimum": 1},
            description="concurrency levels (empty: the config's)",
        ),
        "requests_per_level": Param(
            None, type=["null", "integer"], minimum=1, description="requests per level (empty: the config's)"
        ),
        "budget_usd": Param(
            None,
            type=["null", "number"],
            exclusiveMinimum=0,
            description="above this estimate (USD) the run waits for a person's approval (empty: the config's budget)",
        ),
        "warehouse_conn_id": Param(
            None,
            type=["null", "string"],
            description="publish through this Airflow PostgreSQL connection (empty: the config's warehouse)",
        ),
        "mode": Param(
            "measure",
            enum=["measure", "reprocess"],
            description="measure: deploy and sweep; reprocess: recompute this date's stored run from its raw "
            "results with today's code and config, deploying nothing",
        ),
        "prices": Param(
            "frozen",
            enum=["frozen", "current"],
            description="reprocess only: the prices the run was measured at (frozen), or today's (current)",
        ),
    },
)
def llm_benchmark():
    def run_params() -> tuple[str, str, str, dict]:
        """(config, mode, prices, the Params a plan overlays on the config)."""
        params = dict(get_current_context()["params"])
        return params.pop("config"), params.pop("mode", "measure"), params.pop("prices", "frozen"), params

    # No retry: a plan again is a second attempt folder for the same run.
    @task(retries=0)
    def plan() -> list[dict]:
        from llmbench import pipeline
        from llmbench_airflow import executor_name, use_results_store

        ctx = get_current_context()
        config, mode, _, params = run_params()
        use_results_store(*pipeline.results_of(config))
        logical_date = ctx.get("logical_date") or ctx["dag_run"].run_after
        return pipeline.plan(config, logical_date, params, mode, executor_name())

    @task.branch
    def budget(planned: list[dict]) -> str:
        """The budget gate: over the budget, the run waits for a person's approval before
        anything is deployed; at or under it (or with none), it goes on at once."""
        from llmbench import pipeline
        from llmbench_airflow import use_results_store_of

        use_results_store_of(planned)
        gate = pipeline.budget_gate(planned, run_params()[1])
        get_current_context()["ti"].xcom_push(key="gate", value=gate)
        return "approve_budget" if gate["needs_approval"] else "within_budget"

    # After either branch; a rejection fails approve_budget, so nothing after it deploys.
    @task(trigger_rule="none_failed_min_one_success")
    def on_backend(targets: list[dict], kind: str) -> list[dict]:
        from llmbench import pipeline

        return pipeline.targets_on(targets, kind, run_params()[1])

    def target_group(group_id: str, limits_of_kind: DagLimits):
        """The per-target chain, for one kind of limits: a shared machine (pool scope "target":
        every task in the pool; one target's server at a time), endpoints or instances we create
        (pool scope "deploy": deploys serialised so quota checks are atomic; waits that give their
        worker slot back while they start), or an endpoint or API that already runs (no pool:
        nothing is created)."""
        pool, deploy_poke_s, ready_poke_s = (
            limits_of_kind.pool,
            limits_of_kind.deploy_poke_s,
            limits_of_kind.ready_poke_s,
        )
        limits = {"map_index_template": MAP_LABEL, "execution_timeout": STAGE_TIMEOUT}
        body = {**limits, "pool": pool} if pool and limits_of_kind.pool_scope == "target" else limits

        if deploy_poke_s is not None:
            # DagLimits may be in use (a quota, the local machine): look, then wait deferred on the
            # triggerer, holding no worker or pool slot, and look again on a worker.
            def deploy(target):
                return (
                    DeployWithinQuotaOperator(
                        task_id="deploy",
                        target=target,
                        poke_s=deploy_poke_s,
                        wait=DEPLOY_WAIT,
                        pool=pool,
                        retries=0,  # a try that failed after its create call would create again
                        **limits,
                    )
                    .as_setup()
                    .output
                )
        else:

            @setup
            @task(**body, retries=0)
            def deploy(target: dict) -> dict:
                return _call("deploy", target)

        if ready_poke_s is not None:
            # Endpoints and instances take 5-15 minutes: one look, then deferred on the triggerer.
            def wait_ready(target, handle):
                return WaitReadyOperator(
                    task_id="wait_ready",
                    target=target,
                    handle=handle,
                    poke_s=ready_poke_s,
                    wait=READY_WAIT,
                    **limits,
                    **TRANSIENT_RETRIES,
                ).output
        else:

            @task(**body, **TRANSIENT_RETRIES)
            def wait_ready(target: dict, handle: dict) -> None:
                _call("wait_ready", target, handle)

        @task(**body, **TRANSIENT_RETRIES)
        def warm_up(target: dict, handle: dict) -> dict:
            return _call("warm_up", target, handle)

        # The correctness suites (a no-op without the config's `quality` section): after warm-up, on
        # the idle endpoint, before the timed levels, so that answers are graded as a user gets them
        # and before hours of sweep are spent on a target that answers wrongly.
        @task(**body)
        def quality(target: dict, handle: dict) -> dict:
            return _call("quality", target, handle)

        # One retry: a worker lost mid-sweep (a killed pod or container). A sweep run again starts its
        # records afresh and fences off the lost try (loadgen.sweep: sweep.owner), so nothing is
        # counted twice; it measures the whole sweep again.
        @task(
            **{**body, "execution_timeout": SWEEP_TIMEOUT},
            **SWEEP_QUEUE,
            max_active_tis_per_dagrun=MAX_PARALLEL_SWEEPS,
            **{**TRANSIENT_RETRIES, "retries": min(1, TRANSIENT_RETRIES["retries"])},
        )
        def sweep(target: dict, handle: dict) -> dict:
            return _call("sweep", target, handle)

        @task(**body)
        def validate(target: dict, swept: dict) -> dict:
            return _call("validate", target, swept, platform=False)

        @teardown
        @task(**limits, retries=2, retry_delay=timedelta(minutes=1))
        def teardown_target(target: dict, handle: dict) -> dict:
            return _call("teardown", target, handle)

        @task_group(group_id=group_id)
        def benchmark_target(target: dict):
            handle = deploy(target)
            ready = wait_ready(target, handle)
            warmed = warm_up(target, handle)
            graded = quality(target, handle)
            swept = sweep(target, handle)
            checked = validate(target, swept)
            ready >> warmed >> graded >> swept
            torn_down = teardown_target(target, handle)
            checked >> torn_down
            # Returned so that what follows the group waits for teardown too (a group's leaves
            # exclude teardowns): price_performance needs endpoint-seconds, check needs it all gone.
            return torn_down

        return benchmark_target

    @task(trigger_rule="all_done")  # runs whatever happened to the targets: failures are rows too
    def price_performance(planned: list[dict]) -> str:
        from airflow.sdk.exceptions import AirflowSkipException

        from llmbench import pipeline
        from llmbench_airflow import budget_refused, use_results_store_of

        if budget_refused(get_current_context()["ti"], "budget", "approve_budget"):
            raise AirflowSkipException("the budget was not approved: nothing was measured, nothing is published")

        use_results_store_of(planned)
        config, mode, prices, params = run_params()
        return pipeline.price_performance(pipeline.run_dir_of(planned), mode, config, prices, params)

    @task(**TRANSIENT_RETRIES)
    def publish(run_dir: str, planned: list[dict]) -> dict:
        from llmbench import pipeline
        from llmbench_airflow import use_results_store_of, warehouse_dsn

        use_results_store_of(planned)
        return pipeline.publish(run_dir, warehouse_dsn(run_dir))

    @task(**TRANSIENT_RETRIES)
    def report(run_dir: str, planned: list[dict]) -> str:
        from llmbench import pipeline
        from llmbench_airflow import use_results_store_of

        use_results_store_of(planned)
        return pipeline.report(run_dir)

    @task
    def prune_raw_results(planned: list[dict]) -> str:
        from llmbench import pipeline
        from llmbench_airflow import use_results_store_of

        use_results_store_of(planned)
        return pipeline.prune_raw_results(planned[0].get("results_root") if planned else None)

    # The Asset is emitted here, only when check passes: an event means the run's targets landed
    # and are sound. Its extra is the contract (llmbench.schemas.asset.PublishedAsset): what
    # landed, where (a connection id or a DuckDB path, never credentials), in which state.
    @task(outlets=[PRICE_PERFORMANCE])
    def check(run_dir: str, published: dict, planned: list[dict]) -> str:
        from llmbench import pipeline
        from llmbench_airflow import use_results_store_of

        use_results_store_of(planned)
        said = pipeline.check(run_dir)
        get_current_context()["outlet_events"][PRICE_PERFORMANCE].extra = published["asset_extra"]
        return said

    planned = plan()
    gate = [budget_approval("approve_budget", "budget"), EmptyOperator(task_id="within_budget")]
    budget(planned) >> gate
    run_dir = price_performance(planned)
    gate >> run_dir
    # A run fills the groups of the backend kinds its targets use; the others' mapped tasks are skipped.
    for kind, kind_limits in BACKEND_GROUPS.items():
        targets = on_backend.override(task_id=f"{kind}_targets")(planned, kind)
        gate >> targets
        target_group(kind, kind_limits).expand(target=targets) >> run_dir
    # Retention after the run's own publish and report (they name its folder), before check (the leaf).
    published = publish(run_dir, planned)
    published >> report(run_dir, planned) >> prune_raw_results(planned) >> check(run_dir, published, planned)


llm_benchmark()
