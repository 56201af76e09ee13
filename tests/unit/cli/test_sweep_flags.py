"""issue 25 #5: the sweep's workload flags are the Workload model's fields, declared once: each
flag's type, default and help come from its field, and a sweep given no workload flag measures
the model's default workload."""

import pytest

from llmbench.cli import build_parser
from llmbench.cli.commands.sweep import WORKLOAD_FLAGS, default_text, workload_of
from llmbench.errors import InputError
from llmbench.schemas.workload import Workload


def _sweep_parser():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return sub.choices["sweep"]


def _parse(*flags: str):
    return build_parser().parse_args(["sweep", "--out", "o", *flags])


def test_every_flagged_field_has_the_models_default_and_description():
    actions = {a.dest: a for a in _sweep_parser()._actions}
    for field, flag in WORKLOAD_FLAGS.items():
        info = Workload.model_fields[field]
        action = actions[field]
        assert action.option_strings == [flag]
        assert info.description and action.help.replace("%%", "%").startswith(info.description), field
        default = info.get_default(call_default_factory=True)
        if default is not None:
            assert f"(default {default_text(default)})" in action.help, field


def test_no_workload_flag_is_the_models_default_workload():
    assert workload_of(_parse()) == Workload()


# one value per flag, unlike the default, and what the field then holds
GIVEN = {
    "concurrency": ("3,1,3", [1, 3]),
    "requests_per_level": ("5", 5),
    "arrival_rates_rps": None,  # contradicts --concurrency; below
    "max_in_flight": ("7", 7),
    "input_tokens": ("9", 9),
    "output_tokens": ("11", 11),
    "warmup_requests": ("0", 0),
    "warmup_each_level": ("1", 1),
    "request_timeout_s": ("2.5", 2.5),
    "max_response_bytes": ("4096", 4096),
    "seed": ("42", 42),
}


def test_each_flag_sets_its_field():
    assert set(GIVEN) == set(WORKLOAD_FLAGS)
    argv = [x for field, pair in GIVEN.items() if pair for x in (WORKLOAD_FLAGS[field], pair[0])]
    w = workload_of(_parse(*argv))
    for field, pair in GIVEN.items():
        if pair:
            assert getattr(w, field) == pair[1], field
    assert workload_of(_parse("--arrival-rates", "2,0.5,2")).arrival_rates_rps == [0.5, 2.0]


@pytest.mark.parametrize("flag,value,says", [("--warmup", "-1", "--warmup: "), ("--timeout", "0", "--timeout: "),
                                             ("--max-response-bytes", "10", "--max-response-bytes: ")])
def test_a_field_the_model_refuses_is_named_by_its_flag(flag, value, says):
    with pytest.raises(InputError) as e:
        workload_of(_parse(flag, value))
    assert str(e.value).startswith(says) and "\n" not in str(e.value)


def test_every_sweep_flag_named_after_a_field_is_in_the_table():
    fields = set(Workload.model_fields)
    dests = {a.dest for a in _sweep_parser()._actions}
    assert dests & fields == set(WORKLOAD_FLAGS)
