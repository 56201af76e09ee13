"""llm_benchmark: the weekly price-performance benchmark (DESIGN.md, "One run, as data flows").

plan -> [per target: deploy (setup) -> wait_ready -> warm_up -> sweep -> validate; teardown]
     -> price_performance -> publish (Asset) -> report -> check

Wiring only: every task calls one function of llmbench.pipeline, imported inside the task so the
scheduler parses this file without the library's heavy dependencies.
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import Asset, Param, dag, get_current_context, setup, task, task_group, teardown

# One pool slot for the local machine: targets share its two cores, so their measurements must
# not overlap. `make run` and the tests create it (airflow pools set llmbench_local 1 ...).
LOCAL_POOL = "llmbench_local"
PRICE_PERFORMANCE = Asset(name="llmbench_price_performance")
MAP_LABEL = "{{ target_label }}"  # mapped instances read "local-cpu-2c / smollm2-135m-instruct / llama-server-4slots"


def _label(target: dict) -> None:
    get_current_context()["target_label"] = target["label"]


def backend_kwargs(target: dict) -> dict:
    # Airflow connections -> the library's inputs (plugins/llmbench_airflow.py); empty for local.
    from llmbench_airflow import backend_kwargs as build

    return build(target)


@dag(
    dag_id="llm_benchmark",
    schedule="@weekly",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=12),
    default_args={"retries": 0},
    tags=["llmbench"],
    params={
        "config": Param("local", type="string", description="benchmark config: a name under include/config/ or a path"),
        "targets": Param([], type="array", items={"type": "string"}, description="only these target ids (empty: all)"),
        "concurrency": Param([], type="array", items={"type": "integer", "minimum": 1},
                             description="concurrency levels (empty: the config's)"),
        "requests_per_level": Param(None, type=["null", "integer"], minimum=1,
                                    description="requests per level (empty: the config's)"),
    },
)
def llm_benchmark():
    @task
    def plan() -> list[dict]:
        from llmbench.config import plan as make_plan

        ctx = get_current_context()
        params = dict(ctx["params"])
        config = params.pop("config")
        logical_date = ctx.get("logical_date") or ctx["dag_run"].run_after
        return make_plan(config, logical_date, params)["targets"]

    @setup
    @task(pool=LOCAL_POOL, map_index_template=MAP_LABEL, execution_timeout=timedelta(minutes=30))
    def deploy(target: dict) -> dict:
        from llmbench import pipeline

        _label(target)
        return pipeline.deploy(target, **backend_kwargs(target))

    @task(pool=LOCAL_POOL, map_index_template=MAP_LABEL, execution_timeout=timedelta(minutes=30))
    def wait_ready(target: dict, handle: dict) -> None:
        from llmbench import pipeline

        _label(target)
        pipeline.wait_ready(target, handle, **backend_kwargs(target))

    @task(pool=LOCAL_POOL, map_index_template=MAP_LABEL, execution_timeout=timedelta(minutes=30))
    def warm_up(target: dict, handle: dict) -> dict:
        from llmbench import pipeline

        _label(target)
        return pipeline.warm_up(target, handle, **backend_kwargs(target))

    @task(pool=LOCAL_POOL, map_index_template=MAP_LABEL, execution_timeout=timedelta(hours=4))
    def sweep(target: dict, handle: dict) -> dict:
        from llmbench import pipeline

        _label(target)
        return pipeline.sweep(target, handle, **backend_kwargs(target))

    @task(pool=LOCAL_POOL, map_index_template=MAP_LABEL, execution_timeout=timedelta(minutes=30))
    def validate(target: dict, swept: dict) -> dict:
        from llmbench import pipeline

        _label(target)
        return pipeline.validate(target, swept)

    @teardown
    @task(map_index_template=MAP_LABEL, execution_timeout=timedelta(minutes=30))
    def teardown_target(target: dict, handle: dict) -> dict:
        from llmbench import pipeline

        _label(target)
        return pipeline.teardown(target, handle, **backend_kwargs(target))

    @task_group(group_id="target")
    def benchmark_target(target: dict):
        handle = deploy(target)
        ready = wait_ready(target, handle)
        warmed = warm_up(target, handle)
        swept = sweep(target, handle)
        checked = validate(target, swept)
        ready >> warmed >> swept
        torn_down = teardown_target(target, handle)
        checked >> torn_down
        # Returned so that what follows the group waits for teardown too (a group's leaves exclude
        # teardowns): price_performance needs endpoint-seconds, check needs every server gone.
        return torn_down

    @task(trigger_rule="all_done")  # runs whatever happened to the targets: failures are rows too
    def price_performance(planned: list[dict]) -> str:
        from llmbench import pipeline

        return pipeline.price_performance(pipeline.run_dir_of(planned))

    @task(outlets=[PRICE_PERFORMANCE])
    def publish(run_dir: str) -> dict:
        from llmbench import pipeline
        from llmbench_airflow import warehouse_dsn

        return pipeline.publish(run_dir, warehouse_dsn(run_dir))

    @task
    def report(run_dir: str) -> str:
        from llmbench import pipeline

        return pipeline.report(run_dir)

    @task
    def check(run_dir: str) -> str:
        from llmbench import pipeline

        return pipeline.check(run_dir)

    planned = plan()
    run_dir = price_performance(planned)
    benchmark_target.expand(target=planned) >> run_dir
    publish(run_dir) >> report(run_dir) >> check(run_dir)


llm_benchmark()
