"""The parts of `horizon_opt.actions` that do not depend on a scheduler: the diff between two
desired states, the script and JSON an `Actions` is shown as, and reading a stored desired state
back (a malformed file is an InputError naming the file and field, never a traceback)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

import pytest

from horizon_opt.actions import (
    ACTIONS_FORMAT,
    Action,
    Actions,
    SlurmOptions,
    changes,
    kueue_actions,
    parse_desired,
    read_desired,
    slurm_actions,
)
from horizon_opt.actions.kueue import KueueOptions
from horizon_opt.errors import InputError
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.model.load import parse_spec
from horizon_opt.plans.plan import Plan


def _render(
    op: str, target: str, old: Mapping[str, str] | None, new: Mapping[str, str] | None
) -> list[Action]:
    props = new if new is not None else old
    assert props is not None
    return [Action(op, target, ("echo", op, target, props.get("v", "")), f"{op} {target}")]


def test_changes_only_for_what_changed_deletes_first() -> None:
    before = {"b": {"v": "1"}, "gone": {"v": "2"}, "same": {"v": "3"}}
    after = {"a": {"v": "9"}, "b": {"v": "2"}, "same": {"v": "3"}}
    got = [(a.kind, a.target) for a in changes(before, after, _render)]
    assert got == [("delete", "gone"), ("create", "a"), ("update", "b")]


def test_changes_from_nothing_creates_everything_and_renders_may_skip() -> None:
    after = {"x": {"v": "1"}, "y": {"v": "2"}}
    assert [a.kind for a in changes(None, after, _render)] == ["create", "create"]
    assert changes(after, after, _render) == []
    assert changes({"x": {"v": "1"}}, {}, lambda *_: []) == []


def _sample() -> Actions:
    actions = (
        Action("create", "reservation/r", ("scontrol", "delete", "ReservationName=r x"), "a\nb"),
        Action("hold", "workload/ns/w", ("kubectl", "patch", "-p", '{"a": 1}'), "held"),
    )
    return Actions({"reservation/r": {"k": "v"}}, actions, "slurm", ("one note",))


def test_script_is_posix_sh_with_one_commented_command_per_action() -> None:
    script = _sample().to_script()
    lines = script.splitlines()
    assert lines[0] == "#!/bin/sh"
    assert "nothing has been applied" in script
    assert "Applied by this cycle" in _sample().to_script(applying=True)
    assert "set -eu" in lines
    assert "# note: one note" in lines
    commands = [ln for ln in lines if ln and not ln.startswith("#") and ln != "set -eu"]
    assert [tuple(shlex.split(c)) for c in commands] == [a.argv for a in _sample().actions]
    for i, line in enumerate(lines):
        if line in commands:
            assert lines[i - 1].startswith("# ")  # its why, on one line
    assert "# a b" in lines


def test_json_is_stable_sorted_and_reads_back() -> None:
    text = _sample().to_json()
    assert text == _sample().to_json()
    data = json.loads(text)
    assert data["format"] == ACTIONS_FORMAT
    assert list(data) == sorted(data)
    assert data["actions"][0] == {
        "argv": ["scontrol", "delete", "ReservationName=r x"],
        "kind": "create",
        "target": "reservation/r",
        "why": "a\nb",
    }
    assert Actions.from_json(text) == _sample()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("not json", "not valid JSON"),
        ("[]", "not a horizon-opt.actions/1 document"),
        ('{"format": "horizon-opt.actions/1"}', "actions: expected a list"),
        (
            '{"format": "horizon-opt.actions/1", "actions": [{"kind": "x"}]}',
            "actions[0]: expected an object with kind, target, argv and why",
        ),
        (
            '{"format": "horizon-opt.actions/1", "actions": '
            '[{"kind": "x", "target": "t", "argv": [], "why": ""}]}',
            "actions[0]: argv: expected a non-empty list of strings",
        ),
        (
            '{"format": "horizon-opt.actions/1", "actions": [], "desired": {"t": {"k": 1}}}',
            "desired.t: expected an object of string properties",
        ),
    ],
)
def test_malformed_actions_json_names_the_field(text: str, expected: str) -> None:
    with pytest.raises(InputError) as err:
        Actions.from_json(text, "last.json")
    assert any(p.startswith("last.json") and expected in p for p in err.value.problems)


def test_read_desired_takes_an_actions_file_or_the_bare_mapping() -> None:
    assert read_desired(_sample().to_json(), "last.json") == {"reservation/r": {"k": "v"}}
    bare = '{"job/1": {"start": "2026-12-01T00:00:00Z", "nodes": ""}}'
    assert read_desired(bare) == {"job/1": {"start": "2026-12-01T00:00:00Z", "nodes": ""}}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{", "not valid JSON"),
        ("[1]", "expected an object of targets, got list"),
        ('{"job/1": ["x"]}', "job/1: expected an object of string properties"),
        ('{"job/1": {"start": 5}}', "job/1: expected an object of string properties"),
        ('{"": {}}', "a target must be a non-empty string"),
        ('{"format": "horizon-opt.actions/1", "actions": {}}', "actions: expected a list"),
    ],
)
def test_read_desired_malformed_is_an_input_error(content: str, expected: str) -> None:
    with pytest.raises(InputError) as err:
        read_desired(content, "state/applied.json")
    problems = err.value.problems
    assert any(p.startswith("state/applied.json") and expected in p for p in problems), problems


def test_parse_desired_copies_and_checks() -> None:
    data = {"t": {"a": "b"}}
    got = parse_desired(data)
    assert got == data and got["t"] is not data["t"]
    with pytest.raises(InputError, match="applied"):
        bad: Any = {"t": {"a": 1}}
        slurm_actions(_instance(True), _plan(), SlurmOptions(users=("u",)), bad)


def _instance(start: bool) -> Instance:
    spec: dict[str, Any] = {
        "name": "core",
        "horizon": {"slots": 4, "slot_minutes": 60},
        "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4}],
        "jobs": [{"id": "1", "priority": 1, "gpus": 4, "duration": 1}],
    }
    if start:
        spec["horizon"] = {"slots": 4, "slot_minutes": 60, "start": "2026-12-01T00:00:00Z"}
    return compile_instance(parse_spec(spec))


def _plan(instance: str = "core") -> Plan:
    return Plan.parse(
        {
            "instance": instance,
            "solver": "hand",
            "status": "heuristic",
            "objective": 4.0,
            "assignments": [
                {"job": "1", "pool": "a", "start": 0, "end": 1, "gpus": {"a-0": [0, 1, 2, 3]}}
            ],
        }
    )


def test_actions_need_wall_clock_times() -> None:
    """An instance without horizon.start has no times to give a scheduler."""
    with pytest.raises(InputError, match=r"actions need horizon\.start"):
        slurm_actions(_instance(False), _plan(), SlurmOptions(users=("u",)))
    with pytest.raises(InputError, match=r"actions need horizon\.start"):
        kueue_actions(_instance(False), _plan(), KueueOptions("batch"))


def test_a_plan_of_another_instance_is_refused() -> None:
    with pytest.raises(InputError, match=r"plan\.instance: 'other'"):
        slurm_actions(_instance(True), _plan("other"), SlurmOptions(users=("u",)))
