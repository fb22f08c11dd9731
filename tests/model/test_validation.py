"""Bad instance input is rejected before solving, one message per problem naming its field path.

Every bad input below is one of FORMAT.md's list. Each case starts from the valid TINY instance
(conftest.py), breaks one thing, and asserts that `InstanceError.problems` has a line that starts
with the exact field path followed by `:` and contains the words that tell the user what is wrong.
"""

from __future__ import annotations

import copy
import math
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from horizon_opt import load_instance
from horizon_opt.errors import InstanceError, Problem, format_location, in_item
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Gang
from horizon_opt.model.load import parse_spec

Spec = dict[str, Any]


def problems_of(data: Spec) -> list[str]:
    with pytest.raises(InstanceError) as info:
        compile_instance(parse_spec(data))
    assert info.value.problems, "InstanceError without problems"
    assert str(info.value) == "\n".join(info.value.problems)
    assert len(set(info.value.problems)) == len(info.value.problems), "a problem is repeated"
    located = [p for p in info.value.details if isinstance(p, Problem)]
    assert all(format_location(p.loc) == p.path for p in located), "a path is not its parts"
    return info.value.problems


def assert_problem(problems: list[str], path: str, *words: str) -> None:
    lines = [p for p in problems if p.startswith(f"{path}: ")]
    assert lines, f"no problem starts with {path!r}: {problems}"
    assert any(all(w.lower() in line.lower() for w in words) for line in lines), (
        f"no problem at {path!r} mentions {words}: {lines}"
    )


def job(data: Spec, job_id: str) -> Spec:
    return next(j for j in data["jobs"] if j["id"] == job_id)


def with_start(data: Spec) -> None:
    data["horizon"]["start"] = "2026-12-01T00:00:00Z"


# (id, how to break TINY, field path, words the message must contain)
CASES: list[tuple[str, Callable[[Spec], object], str, tuple[str, ...]]] = [
    ("unknown top-level field", lambda d: d.update(owner="me"), "owner", ("unknown field",)),
    (
        "unknown job field",
        lambda d: job(d, "ev").update(colour="red"),
        "jobs[1].colour",
        ("unknown field",),
    ),
    (
        "unknown horizon field",
        lambda d: d["horizon"].update(slot_hours=1),
        "horizon.slot_hours",
        ("unknown field",),
    ),
    (
        "missing required field",
        lambda d: d["pools"][1].pop("gpus_per_node"),
        "pools[1].gpus_per_node",
        ("required", "missing"),
    ),
    (
        "wrong type: slots as a string",
        lambda d: d["horizon"].update(slots="4"),
        "horizon.slots",
        ("integer",),
    ),
    (
        "wrong type: release as a float",
        lambda d: job(d, "ev").update(release=1.5),
        "jobs[1].release",
        ("integer or a string", "1.5"),
    ),
    (
        "wrong type: boolean deadline",
        lambda d: job(d, "quant").update(deadline=True),
        "jobs[2].deadline",
        ("integer or a string", "True"),
    ),
    (
        "wrong type: per-pool duration",
        lambda d: job(d, "quant").update(duration={"a": 1, "b": 1.5}),
        "jobs[2].duration.b",
        ("integer or a string", "1.5"),
    ),
    (
        "wrong type: demand not a list",
        lambda d: d["services"][0].update(demand="high"),
        "services[0].demand",
        ("list",),
    ),
    (
        "wrong type: after not a list",
        lambda d: job(d, "ev").update(after="train"),
        "jobs[1].after",
        ("list",),
    ),
    (
        "unknown job kind",
        lambda d: job(d, "train").update(kind="pretraining"),
        "jobs[0].kind",
        ("training", "evaluation"),
    ),
    (
        "priority not > 0",
        lambda d: job(d, "train").update(priority=0),
        "jobs[0].priority",
        ("greater than 0",),
    ),
    (
        "pool name with capitals",
        lambda d: d["pools"][0].update(name="A"),
        "pools[0].name",
        ("pattern",),
    ),
    (
        "negative demand value",
        lambda d: d["services"][0].update(demand=[1, -0.5, 2, 1]),
        "services[0].demand[1]",
        ("greater than or equal to 0",),
    ),
    (
        "demand series too short",
        lambda d: d["services"][0].update(demand=[1, 1, 1]),
        "services[0].demand",
        ("expected 4 values", "got 3"),
    ),
    (
        "demand series too long",
        lambda d: d["services"][0].update(demand=[1, 1, 1, 1, 1]),
        "services[0].demand",
        ("expected 4 values", "got 5"),
    ),
    (
        "demand mapping without column",
        lambda d: d["services"][0].update(demand={"csv": "chat.csv"}),
        "services[0].demand.column",
        ("required", "missing"),
    ),
    (
        "unknown pool of a service",
        lambda d: d["services"][0].update(pool="h100"),
        "services[0].pool",
        ("unknown pool", "h100"),
    ),
    (
        "unknown pool in a duration mapping",
        lambda d: job(d, "quant").update(duration={"a": 1, "h100": 2}),
        "jobs[2].duration.h100",
        ("unknown pool", "h100"),
    ),
    (
        "unknown pool in pools",
        lambda d: job(d, "ev").update(pools=["a", "h100"]),
        "jobs[1].pools[1]",
        ("unknown pool", "h100"),
    ),
    (
        "pools with a per-pool duration",
        lambda d: job(d, "quant").update(pools=["a"]),
        "jobs[2].pools",
        ("single duration",),
    ),
    (
        "unknown node in an outage",
        lambda d: d["outages"][0].update(node="a-2"),
        "outages[0].node",
        ("unknown node", "a-2"),
    ),
    (
        "outage ends before it starts",
        lambda d: d["outages"][0].update(start=3, end=2),
        "outages[0].end",
        ("after start",),
    ),
    (
        "unknown job id in after",
        lambda d: job(d, "ev").update(after=["train", "pretrain"]),
        "jobs[1].after[1]",
        ("unknown job", "pretrain"),
    ),
    (
        "job after itself",
        lambda d: job(d, "ev").update(after=["ev"]),
        "jobs[1].after[0]",
        ("after itself",),
    ),
    (
        "dependency cycle",
        lambda d: job(d, "train").update(after=["ev"]),
        "jobs[1].after",
        ("dependency cycle", "train -> ev -> train"),
    ),
    (
        "gang fails the placement rule on every allowed pool",
        # 6 GPUs: more than a 4-GPU node of a and not a multiple of 4; on b (2 GPUs per node)
        # 3 whole nodes, but b has 1.
        lambda d: job(d, "quant").update(gpus=6),
        "jobs[2].gpus",
        ("6 GPUs", "cannot be placed"),
    ),
    (
        "gang needs more whole nodes than the pool has",
        lambda d: job(d, "train").update(gpus=12),  # 3 whole nodes of a, which has 2
        "jobs[0].gpus",
        ("12 GPUs", "cannot be placed", "2 nodes"),
    ),
    (
        "release after the horizon",
        lambda d: job(d, "ev").update(release=4),
        "jobs[1].release",
        ("after the horizon",),
    ),
    (
        "negative release",
        lambda d: job(d, "ev").update(release=-1),
        "jobs[1].release",
        (">= 0",),
    ),
    (
        "deadline before release",
        lambda d: job(d, "ev").update(deadline=0),
        "jobs[1].deadline",
        ("before release",),
    ),
    (
        "inference demand over capacity during an outage",
        # req at slot 3 = ceil(3 * 1.5) = 5 replicas = 10 GPUs; only a-0 (4 GPUs) is up.
        lambda d: d["services"][0].update(demand=[1, 0.5, 2, 3]),
        "services[0].demand",
        ("'chat'", "even with no batch work", "slots 3"),
    ),
    (
        "inference demand over the whole pool",
        # req = ceil(3 * 1.5) = 5 replicas = 10 GPUs > 8 at slots 0 and 1.
        lambda d: d["services"][0].update(demand=[3, 3, 2, 1]),
        "services[0].demand",
        ("'chat'", "even with no batch work", "slots 0-1"),
    ),
    (
        "bad duration unit",
        lambda d: job(d, "ev").update(duration="5x"),
        "jobs[1].duration",
        ("not a duration", "5x"),
    ),
    (
        "bad per-pool duration",
        lambda d: job(d, "quant").update(duration={"a": 1, "b": "2 hours"}),
        "jobs[2].duration.b",
        ("not a duration",),
    ),
    (
        "zero duration",
        lambda d: job(d, "train").update(duration={"a": 0}),
        "jobs[0].duration.a",
        ("at least one slot",),
    ),
    (
        "empty duration mapping",
        lambda d: job(d, "train").update(duration={}),
        "jobs[0].duration",
        ("at least one pool",),
    ),
    (
        "timestamp release without horizon.start",
        lambda d: job(d, "ev").update(release="2026-12-01T01:00:00Z"),
        "jobs[1].release",
        ("needs horizon.start",),
    ),
    (
        "timestamp outage without horizon.start",
        lambda d: d["outages"][0].update(start="2026-12-01T01:00:00Z"),
        "outages[0].start",
        ("needs horizon.start",),
    ),
    (
        "not a timestamp",
        lambda d: (with_start(d), job(d, "quant").update(deadline="tomorrow")),
        "jobs[2].deadline",
        ("not a slot index or an ISO-8601 timestamp",),
    ),
    (
        "bad horizon.start",
        lambda d: d["horizon"].update(start="December"),
        "horizon.start",
        ("ISO-8601",),
    ),
    (
        "gpus_per_replica does not divide gpus_per_node",
        lambda d: d["services"][0].update(gpus_per_replica=3),
        "services[0].gpus_per_replica",
        ("does not divide", "4"),
    ),
    (
        "duplicate job id",
        lambda d: job(d, "quant").update(id="ev"),
        "jobs[2].id",
        ("duplicate", "'ev'"),
    ),
    (
        "duplicate pool name",
        lambda d: d["pools"][1].update(name="a"),
        "pools[1].name",
        ("duplicate", "'a'"),
    ),
    (
        "duplicate service name",
        lambda d: d["services"].append(copy.deepcopy(d["services"][0])),
        "services[1].name",
        ("duplicate", "'chat'"),
    ),
]


@pytest.mark.parametrize(
    ("mutate", "path", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_names_the_field(
    tiny_spec: Spec, mutate: Callable[[Spec], object], path: str, words: tuple[str, ...]
) -> None:
    data = tiny_spec
    mutate(data)
    assert_problem(problems_of(data), path, *words)


def test_the_base_instance_is_valid(tiny_spec: Spec) -> None:
    # The cases above each break exactly one thing in this instance.
    compile_instance(parse_spec(tiny_spec))


def test_one_message_per_problem(tiny_spec: Spec) -> None:
    data = tiny_spec
    job(data, "train").update(duration={"a": "5x"})
    job(data, "ev").update(after=["nobody"])
    data["services"][0]["pool"] = "zz"
    problems = problems_of(data)
    assert_problem(problems, "jobs[0].duration.a", "not a duration")
    assert_problem(problems, "jobs[1].after[0]", "unknown job")
    assert_problem(problems, "services[0].pool", "unknown pool")
    assert len(problems) == 3, problems


def test_a_problem_names_its_field_as_data(tiny_spec: Spec) -> None:
    """An importer says a compile problem against its own input from the problem's location,
    not from its text (importers/*/importer.py): the compiler's and pydantic's alike."""
    data = tiny_spec
    job(data, "ev").update(after=["nobody"], gpus="two")
    with pytest.raises(InstanceError) as info:
        compile_instance(parse_spec(data))
    (problem,) = info.value.details
    assert isinstance(problem, Problem) and problem.loc == ("jobs", 1, "gpus")
    job(data, "ev").update(gpus=1)
    with pytest.raises(InstanceError) as info:
        compile_instance(parse_spec(data))
    (problem,) = info.value.details
    assert isinstance(problem, Problem) and problem.loc == ("jobs", 1, "after", 0)
    assert in_item(problem, "jobs") == (1, "after[0]", "unknown job id 'nobody'")
    assert in_item(problem, "services") is None
    assert in_item(str(problem), "jobs") is None  # a line of text is not read back


def test_one_form_of_a_union_field_is_reported(tiny_spec: Spec) -> None:
    # A mapping demand is read as {csv, column} only: no stray "should be a list" message.
    data = tiny_spec
    data["services"][0]["demand"] = {"csv": "chat.csv"}
    assert problems_of(data) == ["services[0].demand.column: required field is missing"]


def test_top_level_not_a_mapping() -> None:
    with pytest.raises(InstanceError) as info:
        parse_spec(["name", "tiny"])
    assert info.value.problems[0].startswith("(top level): expected a mapping")


# -- through YAML files --------------------------------------------------------------------------

TINY_YAML = """\
name: tiny-yaml
horizon: {slots: 4, slot_minutes: 60}
pools:
  - {name: a, gpu_type: A, nodes: 2, gpus_per_node: 4}
services:
  - name: chat
    pool: a
    gpus_per_replica: 2
    headroom: 0.5
    demand: {csv: data/chat.csv, column: replicas}
jobs:
  - {id: j, priority: 1, gpus: 2, duration: 1}
"""


def write_yaml(folder: Path, text: str, csv: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "instance.yaml"
    path.write_text(textwrap.dedent(text))
    if csv is not None:
        (folder / "data").mkdir(exist_ok=True)
        (folder / "data" / "chat.csv").write_text(csv)
    return path


def yaml_problems(path: Path) -> list[str]:
    with pytest.raises(InstanceError) as info:
        load_instance(path)
    return info.value.problems


def test_csv_demand_relative_to_the_yaml_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_yaml(tmp_path / "inst", TINY_YAML, "time,replicas\n0,1\n1,0.5\n2,2\n3,0\n")
    monkeypatch.chdir(tmp_path)  # the CSV path is relative to the YAML file, not to the cwd
    inst = load_instance(path)
    chat = inst.services[0]
    assert chat.demand.tolist() == [1, 0.5, 2, 0]
    assert chat.req.tolist() == [2, 1, 3, 0]  # ceil(demand * 1.5)


def test_csv_missing_file(tmp_path: Path) -> None:
    path = write_yaml(tmp_path, TINY_YAML)
    assert_problem(yaml_problems(path), "services[0].demand.csv", "cannot read", "chat.csv")


def test_csv_missing_column(tmp_path: Path) -> None:
    path = write_yaml(tmp_path, TINY_YAML, "time,forecast\n0,1\n1,1\n2,1\n3,1\n")
    assert_problem(
        yaml_problems(path), "services[0].demand.column", "no column 'replicas'", "forecast"
    )


def test_csv_not_a_number(tmp_path: Path) -> None:
    path = write_yaml(tmp_path, TINY_YAML, "time,replicas\n0,1\n1,lots\n2,1\n3,1\n")
    assert_problem(yaml_problems(path), "services[0].demand", "row 3", "not a number")


def test_csv_wrong_number_of_rows(tmp_path: Path) -> None:
    path = write_yaml(tmp_path, TINY_YAML, "time,replicas\n0,1\n1,1\n")
    assert_problem(yaml_problems(path), "services[0].demand", "expected 4 values", "got 2")


def test_yaml_syntax_error(tmp_path: Path) -> None:
    path = write_yaml(tmp_path, "name: x\nhorizon: {slots: 4\npools: [\n")
    assert_problem(yaml_problems(path), str(path), "not valid YAML")


def test_yaml_not_a_mapping(tmp_path: Path) -> None:
    path = write_yaml(tmp_path, "- just\n- a list\n")
    assert_problem(yaml_problems(path), "(top level)", "expected a mapping")


def test_missing_instance_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    assert_problem(yaml_problems(path), str(path), "cannot read")


def test_yaml_errors_name_the_field(tmp_path: Path) -> None:
    path = write_yaml(
        tmp_path,
        """\
        name: bad
        horizon: {slots: 4}
        pools: [{name: a, gpu_type: A, nodes: 1, gpus_per_node: 8}]
        jobs:
          - {id: x, priority: 1, gpus: 2, duration: 1}
          - {id: y, priority: 1, gpus: 2, duration: {a: 5x}}
        """,
    )
    assert_problem(yaml_problems(path), "jobs[1].duration.a", "not a duration")


# -- what valid input means ----------------------------------------------------------------------


def timed(**job_fields: Any) -> Spec:
    return {
        "name": "timed",
        "horizon": {"slots": 96, "slot_minutes": 30, "start": "2026-12-01T00:00:00Z"},
        "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 8}],
        "jobs": [{"id": "j", "priority": 1, "gpus": 1, "duration": 1, **job_fields}],
    }


@pytest.mark.parametrize(
    ("release", "slot"),
    [
        ("2026-12-01T00:00:00Z", 0),
        ("2026-12-01T01:00:00Z", 2),  # on a boundary: stays
        ("2026-12-01T01:10:00Z", 3),  # 70 min = 2.33 slots: rounds up
        ("2026-12-01T01:29:59Z", 3),
        ("2026-12-01T02:10:00+01:00", 3),  # = 01:10Z
        (5, 5),
    ],
)
def test_release_timestamp_rounds_up(release: str | int, slot: int) -> None:
    inst = compile_instance(parse_spec(timed(release=release)))
    assert inst.jobs[0].release == slot


@pytest.mark.parametrize(
    ("deadline", "slot"),
    [
        ("2026-12-01T01:00:00Z", 2),  # on a boundary: stays
        ("2026-12-01T02:50:00Z", 5),  # 170 min = 5.67 slots: rounds down
        ("2026-12-01T02:59:59Z", 5),
        (7, 7),
    ],
)
def test_deadline_timestamp_rounds_down(deadline: str | int, slot: int) -> None:
    inst = compile_instance(parse_spec(timed(deadline=deadline)))
    assert inst.jobs[0].deadline == slot


def test_outage_timestamps_cover_the_whole_window() -> None:
    # An outage start rounds down and its end rounds up: 00:40-01:10 covers slots 1 and 2.
    data = timed()
    data["outages"] = [
        {"node": "a-0", "start": "2026-12-01T00:40:00Z", "end": "2026-12-01T01:10:00Z"}
    ]
    inst = compile_instance(parse_spec(data))
    assert [t for t in range(inst.slots) if not inst.up[0, t]] == [1, 2]


def test_unquoted_yaml_timestamps(tmp_path: Path) -> None:
    # YAML reads unquoted timestamps as datetimes; they mean the same as quoted ones.
    path = write_yaml(
        tmp_path,
        """\
        name: ts
        horizon: {slots: 10, slot_minutes: 60, start: 2026-12-01T00:00:00Z}
        pools: [{name: a, gpu_type: A, nodes: 1, gpus_per_node: 8}]
        jobs:
          - {id: j, priority: 1, gpus: 1, duration: 1, release: 2026-12-01T02:30:00Z,
             deadline: 2026-12-01T08:30:00Z}
        """,
    )
    inst = load_instance(path)
    assert (inst.jobs[0].release, inst.jobs[0].deadline) == (3, 8)


@pytest.mark.parametrize(
    ("duration", "slot_minutes", "slots"),
    [
        ("90m", 60, 2),  # 1.5 slots -> 2
        ("6h", 60, 6),
        ("1.5h", 60, 2),
        ("2d", 60, 48),
        ("90m", 30, 3),
        ("1.5h", 30, 3),
        ("45m", 30, 2),  # 1.5 slots -> 2
        ("60m", 30, 2),
        ("2d", 30, 96),
        (5, 30, 5),  # an integer is a number of slots
    ],
)
def test_duration_units_round_up_to_slots(
    duration: str | int, slot_minutes: int, slots: int
) -> None:
    data = timed(duration=duration)
    data["horizon"]["slot_minutes"] = slot_minutes
    inst = compile_instance(parse_spec(data))
    assert dict(inst.jobs[0].durations) == {0: slots}


def test_single_duration_applies_to_listed_pools_only(tiny_spec: Spec) -> None:
    data = tiny_spec
    job(data, "ev").update(duration="1h", pools=["b"])
    inst = compile_instance(parse_spec(data))
    ev = inst.jobs[inst.job_index["ev"]]
    assert dict(ev.durations) == {1: 2}  # pool b only; 60 min = 2 slots of 30 min


def test_pool_that_cannot_place_the_gang_is_not_allowed(tiny_spec: Spec) -> None:
    # train takes 4 GPUs: one node of a (4 GPUs per node), but b has one node of 2 GPUs, so a
    # duration given for b is dropped and work is measured on a.
    data = tiny_spec
    job(data, "train").update(duration={"a": 2, "b": 1})
    inst = compile_instance(parse_spec(data))
    train = inst.jobs[inst.job_index["train"]]
    assert dict(train.durations) == {0: 2}
    assert train.work_hours == pytest.approx(4 * 2 * 0.5)


def test_multi_node_gang_on_whole_nodes(tiny_spec: Spec) -> None:
    data = tiny_spec
    job(data, "train").update(gpus=8)  # 2 whole nodes of a
    inst = compile_instance(parse_spec(data))
    train = inst.jobs[inst.job_index["train"]]
    assert dict(train.gangs) == {0: Gang(nodes=2, gpus_per_node=4, whole=True)}


def test_required_replicas_formula() -> None:
    # req = ceil(demand * (1 + headroom) - 1e-9): 10 * 1.1 is 11.000000000000002 in floating
    # point, and must still need 11 replicas, not 12.
    demand = [10, 1, 0, 0.5, 20, 3.2]
    data = {
        "name": "req",
        "horizon": {"slots": len(demand)},
        "pools": [{"name": "a", "gpu_type": "A", "nodes": 3, "gpus_per_node": 8}],
        "services": [
            {"name": "s", "pool": "a", "gpus_per_replica": 1, "headroom": 0.1, "demand": demand}
        ],
    }
    inst = compile_instance(parse_spec(data))
    req = inst.services[0].req.tolist()
    assert req == [11, 2, 0, 1, 22, 4]
    assert req == [math.ceil(d * 1.1 - 1e-9) for d in demand]
    assert inst.services[0].demand.tolist() == demand


def test_no_headroom_rounds_fractions_up(tiny_spec: Spec) -> None:
    data = tiny_spec
    data["services"][0].update(headroom=0, demand=[0.1, 1, 1.5, 2])
    inst = compile_instance(parse_spec(data))
    assert inst.services[0].req.tolist() == [1, 1, 2, 2]


def test_nodes_and_defaults(tiny_spec: Spec) -> None:
    inst = compile_instance(parse_spec(copy.deepcopy(tiny_spec)))
    assert inst.node_names == ("a-0", "a-1", "b-0")
    assert inst.hours_per_slot == 0.5
    assert inst.up.tolist() == [[True] * 4, [True, True, True, False], [True] * 4]
    ev = inst.jobs[inst.job_index["ev"]]
    assert (ev.kind, ev.deadline, ev.after) == ("evaluation", None, (0,))
    assert dict(ev.durations) == {0: 1, 1: 1}  # one value applies to every pool
    data = tiny_spec
    del data["horizon"]["slot_minutes"]
    del job(data, "train")["kind"]
    inst = compile_instance(parse_spec(data))
    assert inst.slot_minutes == 60
    assert inst.jobs[0].kind == "other"
    assert inst.jobs[0].release == 0


def test_numeric_pool_name_as_a_mapping_key(tmp_path: Path) -> None:
    # YAML reads the key of `{100: 3}` as a number; it still names pool "100".
    path = write_yaml(
        tmp_path,
        """\
        name: numeric
        horizon: {slots: 4}
        pools: [{name: "100", gpu_type: A, nodes: 1, gpus_per_node: 8}]
        jobs:
          - {id: j, priority: 1, gpus: 2, duration: {100: 3}}
        """,
    )
    assert dict(load_instance(path).jobs[0].durations) == {0: 3}
