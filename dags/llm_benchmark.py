"""llm_benchmark: the weekly price-performance benchmark.

plan -> [per target: deploy (setup) -> wait_ready -> warm_up -> quality -> sweep -> validate; teardown]
     -> price_performance -> publish (Asset) -> report -> prune_raw_results -> check

Param mode=reprocess runs the same graph over a date's stored run instead: plan finds it (and
checks its raw results are all there), every per-target group is skipped (nothing is deployed),
and price_performance recomputes its tables with today's code and config before publishing them
under the same run key (llmbench.results.reprocess).

The per-target chain exists once per registered backend kind (llmbench.schemas.registry), as a
mapped task group named after the kind, because each needs its own capacity controls
(BackendSpec.capacity: a pool for the shared machine, serialised deploys and rescheduling waits
for endpoints and instances that take minutes); one config may mix them, and a kind with no target
in the run is skipped.

Wiring only: every task calls one function of llmbench.pipeline, imported inside the task so the
scheduler parses this file without the library's heavy dependencies (the registry, read at parse
time for the groups, is pydantic models and constants).
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import Asset, Param, PokeReturnValue, dag, get_current_context, setup, task, task_group, teardown

from llmbench import backends  # noqa: F401 (registers every built-in kind)
from llmbench.schemas.registry import Capacity, specs
from llmbench.settings import settings

# LLMBENCH_SCHEDULE=none: the DAG runs only when triggered (REST API, CLI). LLMBENCH_START_DATE:
# the first date the schedule runs (a date in the future: only backfills and triggers run until
# then; a backfill may cover any dates, before it too).
SCHEDULE = settings("schedule").schedule
START_DATE = pendulum.parse(settings("start_date").start_date, tz="UTC")
MAX_PARALLEL_SWEEPS = 8  # sweeps of one run at once (each holds a worker slot for its duration)
PRICE_PERFORMANCE = Asset(name="llmbench_price_performance")
MAP_LABEL = "{{ target_label }}"  # mapped instances read "local-cpu-2c / smollm2-135m-instruct / llama-server-4slots"
# backend kind -> its capacity controls (BackendSpec.capacity: pools are created by `make
# airflow-db`, the tests and the compose init service from deploy/pools.json). A waiting task gives
# its worker slot (and pool slot) back between looks.
# No look comes sooner than 20 s: a reschedule-mode sensor whose poke's success reaches the
# scheduler (CeleryExecutor: through the result backend, seconds late under load) after its next
# look was already scheduled is failed by the scheduler as killed externally (apache/airflow
# #71172, open). 5 s lost the waiting local target of a Celery run that way.
BACKEND_GROUPS: dict[str, Capacity] = {spec.kind: spec.capacity for spec in specs()}


def _alert(context) -> None:
    from llmbench_airflow import alert_on_failure

    alert_on_failure(context)


def _call(step: str, target: dict, *args, platform: bool = True):
    """The body every per-target task shares: label the mapped instance, then run one pipeline
    function with what the platform provides the backend (Airflow connections -> kwargs)."""
    from llmbench import pipeline
    from llmbench_airflow import backend_kwargs

    get_current_context()["target_label"] = target["label"]
    return getattr(pipeline, step)(target, *args, **(backend_kwargs(target) if platform else {}))


@dag(
    dag_id="llm_benchmark",
    schedule=None if SCHEDULE == "none" else SCHEDULE,
    start_date=START_DATE,
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=12),
    # Each failed task alerts (plugins/llmbench_airflow.py: the llmbench_alerts webhook, else the log).
    default_args={"retries": 0, "on_failure_callback": _alert},
    tags=["llmbench"],
    params={
        "config": Param("local", type="string", description="benchmark config: a name under include/config/ or a path"),
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

    @task
    def plan() -> list[dict]:
        from llmbench import pipeline

        ctx = get_current_context()
        config, mode, _, params = run_params()
        logical_date = ctx.get("logical_date") or ctx["dag_run"].run_after
        return pipeline.plan(config, logical_date, params, mode)

    @task
    def on_backend(targets: list[dict], kind: str) -> list[dict]:
        from llmbench import pipeline

        return pipeline.targets_on(targets, kind, run_params()[1])

    def target_group(group_id: str, capacity: Capacity):
        """The per-target chain, for one kind of capacity: a shared machine (pool scope "target":
        every task in the pool; one target's server at a time), endpoints or instances we create
        (pool scope "deploy": deploys serialised so quota checks are atomic; waits that give their
        worker slot back while they start), or an endpoint or API that already runs (no pool:
        nothing is created)."""
        pool, deploy_poke_s, ready_poke_s = capacity.pool, capacity.deploy_poke_s, capacity.ready_poke_s
        limits = {"map_index_template": MAP_LABEL, "execution_timeout": timedelta(minutes=30)}
        body = {**limits, "pool": pool} if pool and capacity.pool_scope == "target" else limits

        if deploy_poke_s is not None:
            # Capacity may be in use (a quota, the local machine): look, then free the worker slot
            # until the next look (mode="reschedule"). Endpoints take 5-15 minutes to deploy.
            @setup
            @task.sensor(
                pool=pool,
                poke_interval=deploy_poke_s,
                timeout=6 * 3600,
                mode="reschedule",
                map_index_template=MAP_LABEL,
            )
            def deploy(target: dict) -> PokeReturnValue:
                handle = _call("deploy_within_capacity", target)
                return PokeReturnValue(is_done=handle is not None, xcom_value=handle)
        else:

            @setup
            @task(**body)
            def deploy(target: dict) -> dict:
                return _call("deploy", target)

        if ready_poke_s is not None:

            @task.sensor(poke_interval=ready_poke_s, timeout=4 * 3600, mode="reschedule", map_index_template=MAP_LABEL)
            def wait_ready(target: dict, handle: dict) -> bool:
                return _call("check_ready", target, handle)
        else:

            @task(**body)
            def wait_ready(target: dict, handle: dict) -> None:
                _call("wait_ready", target, handle)

        @task(**body)
        def warm_up(target: dict, handle: dict) -> dict:
            return _call("warm_up", target, handle)

        # The correctness suites (a no-op without the config's `quality` section): after warm-up, on
        # the idle endpoint, before the timed levels, so that answers are graded as a user gets them
        # and before hours of sweep are spent on a target that answers wrongly.
        @task(**body)
        def quality(target: dict, handle: dict) -> dict:
            return _call("quality", target, handle)

        @task(**{**body, "execution_timeout": timedelta(hours=4)}, max_active_tis_per_dagrun=MAX_PARALLEL_SWEEPS)
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
        from llmbench import pipeline

        config, mode, prices, params = run_params()
        return pipeline.price_performance(pipeline.run_dir_of(planned), mode, config, prices, params)

    @task(outlets=[PRICE_PERFORMANCE])
    def publish(run_dir: str) -> dict:
        from llmbench import pipeline
        from llmbench_airflow import warehouse_dsn

        out = pipeline.publish(run_dir, warehouse_dsn(run_dir))
        # The Asset event says where it was published (a connection id or a DuckDB path, never
        # credentials), so the dashboard DAG refreshes that warehouse.
        get_current_context()["outlet_events"][PRICE_PERFORMANCE].extra = out.pop("asset_extra")
        return out

    @task
    def report(run_dir: str) -> str:
        from llmbench import pipeline

        return pipeline.report(run_dir)

    @task
    def prune_raw_results() -> str:
        from llmbench import pipeline

        return pipeline.prune_raw_results()

    @task
    def check(run_dir: str) -> str:
        from llmbench import pipeline

        return pipeline.check(run_dir)

    planned = plan()
    run_dir = price_performance(planned)
    # A run fills the groups of the backend kinds its targets use; the others' mapped tasks are skipped.
    for kind, capacity in BACKEND_GROUPS.items():
        targets = on_backend.override(task_id=f"{kind}_targets")(planned, kind)
        target_group(kind, capacity).expand(target=targets) >> run_dir
    # Retention after the run's own publish and report (they name its folder), before check (the leaf).
    publish(run_dir) >> report(run_dir) >> prune_raw_results() >> check(run_dir)


llm_benchmark()
