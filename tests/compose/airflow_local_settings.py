"""Test-only cluster policy for `make compose-test` (mounted read-only as
$AIRFLOW_HOME/config/airflow_local_settings.py by deploy/compose.test.yaml, never baked into the
image): it routes llm_benchmark's tasks to the two workers' queues so that one target's deploy,
sweep and publish run on different hosts, and every hand-over goes through the results store."""

# task suffix -> queue: worker-a deploys, worker-b drives the endpoint and publishes
QUEUES = {
    "deploy": "worker_a",
    "wait_ready": "worker_a",
    "warm_up": "worker_b",
    "quality": "worker_b",
    "sweep": "worker_b",
    "validate": "worker_a",
    "teardown_target": "worker_a",
    "price_performance": "worker_a",
    "publish": "worker_b",
    "report": "worker_a",
    "check": "worker_b",
}


def task_policy(task) -> None:
    if task.dag_id == "llm_benchmark":
        queue = QUEUES.get(task.task_id.rsplit(".", 1)[-1])
        if queue:
            task.queue = queue
