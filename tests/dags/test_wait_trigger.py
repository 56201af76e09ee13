"""Issue 45: waits defer to the triggerer. WaitTrigger is what the triggerer rebuilds from its
serialized form, looks with the target's own backend (in a thread: the looks are sync), and ends
in one event: go, or the look's error, which the resumed task raises."""

import asyncio
import sys

import pendulum
import pytest
import yaml

from .conftest import ROOT


@pytest.fixture
def plugin():
    sys.path.insert(0, str(ROOT / "plugins"))
    import llmbench_airflow

    return llmbench_airflow


@pytest.fixture
def external_target(tmp_path, monkeypatch):
    """A planned target of a kind with no capacity to wait for (an endpoint that already runs)."""
    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path / "home"))
    cfg = {
        "name": "waits",
        "backend": "openai",
        "workload": {
            "input_tokens": 16,
            "output_tokens": 4,
            "concurrency": [1],
            "requests_per_level": 1,
            "warmup_requests": 0,
        },
        "targets": [
            {
                "id": "mine",
                "model": "smollm2-135m-instruct",
                "serving": {"kind": "openai", "name": "existing", "base_url": "http://127.0.0.1:9/v1"},
            }
        ],
    }
    (tmp_path / "waits.yaml").write_text(yaml.safe_dump(cfg))
    from llmbench import pipeline

    (target,) = pipeline.plan(str(tmp_path / "waits.yaml"), pendulum.datetime(2026, 12, 6, tz="UTC"), {}, "measure")
    return target


def first_event(trigger):
    async def one():
        async for event in trigger.run():
            return event.payload

    return asyncio.run(asyncio.wait_for(one(), timeout=60))


def test_the_triggerer_rebuilds_the_trigger_from_its_serialized_form(plugin, external_target):
    from airflow.sdk._shared.module_loading import import_string  # as the triggerer and dags test load it

    trigger = plugin.WaitTrigger("ready", external_target, {"endpoint": "x"}, 20)
    classpath, kwargs = trigger.serialize()
    again = import_string(classpath)(**kwargs)
    assert (again.kind, again.target, again.handle, again.poke_s) == ("ready", external_target, {"endpoint": "x"}, 20)


def test_a_free_capacity_lets_the_deploy_go(plugin, external_target):
    assert first_event(plugin.WaitTrigger("quota", external_target, None, 0)) == {"go": True}


def test_a_look_that_raises_ends_the_wait_and_the_resumed_task_fails_with_it(plugin, external_target):
    from llmbench.backends.base import DeployError

    event = first_event(plugin.WaitTrigger("ready", external_target, {}, 0))  # a handle without its deploy time
    assert set(event) == {"error"} and event["error"].startswith("KeyError"), event
    op = plugin.WaitReadyOperator(
        task_id="wait_ready", target=external_target, handle={}, poke_s=20, wait=pendulum.duration(hours=1)
    )
    with pytest.raises(DeployError, match="KeyError"):
        op.resume({}, since=0.0, event=event)
