"""Hostile or malformed instance input ends in InstanceError, never in a wrong instance or a crash.

Each test below is named after the input it feeds: outages outside the horizon, non-finite and
absurd numbers, sizes beyond the limits, files that are not UTF-8 text, YAML nested too deeply,
a demand CSV whose `time` column contradicts its rows, unquoted YAML dates. The last part covers
`validate`: the warnings about input that is legal but almost certainly a mistake.
"""

from __future__ import annotations

import copy
import glob
import json
import math
import textwrap
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_validation import assert_problem, job

import horizon_opt
from horizon_opt import load_instance, solve, validate
from horizon_opt.errors import InstanceError
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.model.load import parse_spec
from horizon_opt.model.spec import MAX_PRIORITY

Spec = dict[str, Any]
ROOT = Path(__file__).resolve().parents[2]


def compiled(data: Spec) -> Instance:
    return compile_instance(parse_spec(copy.deepcopy(data)))


def problems_of(data: Spec) -> list[str]:
    with pytest.raises(InstanceError) as info:
        compiled(data)
    return info.value.problems


def file_problems(path: Path) -> list[str]:
    with pytest.raises(InstanceError) as info:
        load_instance(path)
    return info.value.problems


def with_start(data: Spec) -> Spec:
    data["horizon"]["start"] = "2026-12-01T00:00:00Z"
    return data


def down_slots(inst: Instance, node: str) -> list[int]:
    return [t for t in range(inst.slots) if not inst.up[inst.node_index[node], t]]


# -- 1. outages outside the horizon --------------------------------------------------------------


def test_outage_wholly_before_the_horizon_changes_nothing(tiny_spec: Spec) -> None:
    # A negative end used to be a Python slice bound: a-0 went down for slots 0..S-2.
    tiny_spec["outages"].append({"node": "a-0", "start": -5, "end": -1})
    inst = compiled(tiny_spec)
    assert down_slots(inst, "a-0") == []
    assert down_slots(inst, "a-1") == [3]  # TINY's own outage still holds
    assert inst.warnings == (
        "outages[1]: wholly outside the horizon (down in slots [-5, -1), the horizon is [0, 4)): "
        "it changes nothing",
    )


def test_outage_timestamps_before_the_horizon_start_change_nothing(tiny_spec: Spec) -> None:
    with_start(tiny_spec)
    tiny_spec["outages"].append(
        {"node": "a-0", "start": "2026-11-30T20:00:00Z", "end": "2026-11-30T23:00:00Z"}
    )
    inst = compiled(tiny_spec)
    assert down_slots(inst, "a-0") == []
    assert len(inst.warnings) == 1
    assert inst.warnings[0].startswith("outages[1]: wholly outside the horizon")


def test_outage_wholly_after_the_horizon_changes_nothing(tiny_spec: Spec) -> None:
    tiny_spec["outages"].append({"node": "a-0", "start": 4, "end": 9})
    inst = compiled(tiny_spec)
    assert down_slots(inst, "a-0") == []
    assert inst.warnings[0].startswith("outages[1]: wholly outside the horizon")


def test_outage_partly_outside_the_horizon_is_clipped(tiny_spec: Spec) -> None:
    tiny_spec["outages"] = [
        {"node": "a-0", "start": -3, "end": 1},
        {"node": "b-0", "start": 3, "end": 99},
    ]
    tiny_spec["services"][0]["demand"] = [0, 0, 0, 0]  # a-0 down at slot 0 must not short chat
    inst = compiled(tiny_spec)
    assert down_slots(inst, "a-0") == [0]
    assert down_slots(inst, "b-0") == [3]
    assert inst.warnings == ()


# -- 2. non-finite and absurd numbers ------------------------------------------------------------

NUMBERS: list[tuple[str, str, Any, str, tuple[str, ...]]] = [
    # (id, field to set, value, field path, words)
    ("demand inf", "demand", [1, math.inf, 1, 1], "services[0].demand[1]", ("finite",)),
    ("demand nan", "demand", [1, 1, math.nan, 1], "services[0].demand[2]", ("finite",)),
    ("demand 1e30", "demand", [1, 1e30, 1, 1], "services[0].demand[1]", ("1000000",)),
    ("headroom inf", "headroom", math.inf, "services[0].headroom", ("finite",)),
    ("headroom 11", "headroom", 11, "services[0].headroom", ("10",)),
    ("priority inf", "priority", math.inf, "jobs[0].priority", ("finite",)),
    ("priority nan", "priority", math.nan, "jobs[0].priority", ("finite",)),
    ("priority 1e308", "priority", 1e308, "jobs[0].priority", ("1000000",)),
    ("priority of 400 digits", "priority", 10**400, "jobs[0].priority", ("number",)),
    ("gpus as a float", "gpus", 4.0, "jobs[0].gpus", ("integer",)),
    ("gpus_per_replica as a float", "gpus_per_replica", 2.0, "services[0].gpus_per_replica", ()),
]


@pytest.mark.parametrize(
    ("field", "value", "path", "words"), [c[1:] for c in NUMBERS], ids=[c[0] for c in NUMBERS]
)
def test_non_finite_and_absurd_numbers_are_refused(
    tiny_spec: Spec, field: str, value: Any, path: str, words: tuple[str, ...]
) -> None:
    target = tiny_spec["services"][0] if path.startswith("services") else job(tiny_spec, "train")
    target[field] = value
    assert_problem(problems_of(tiny_spec), path, *words)


def test_yaml_infinity_nan_and_huge_floats_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "inf.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            name: inf
            horizon: {slots: 2}
            pools: [{name: a, gpu_type: A, nodes: 1, gpus_per_node: 8}]
            services:
              - {name: s, pool: a, gpus_per_replica: 1, headroom: .inf, demand: [.nan, 1.0e+30]}
            jobs:
              - {id: x, priority: .inf, gpus: 1, duration: 1}
              - {id: y, priority: 1.0e+308, gpus: 1, duration: 1}
            """
        )
    )
    problems = file_problems(path)
    assert_problem(problems, "services[0].headroom", "finite")
    assert_problem(problems, "services[0].demand[0]", "finite")
    assert_problem(problems, "services[0].demand[1]", "less than or equal to 1000000")
    assert_problem(problems, "jobs[0].priority", "finite")
    assert_problem(problems, "jobs[1].priority", "less than or equal to 1000000")


def test_demand_given_by_a_library_caller_is_checked_too(tiny_spec: Spec) -> None:
    with pytest.raises(InstanceError) as info:
        compile_instance(parse_spec(tiny_spec), {0: [1, 1, math.nan, 1]})
    assert_problem(info.value.problems, "services[0].demand[2]", "0 to 1,000,000", "nan")


def test_plan_of_an_instance_at_the_limits_is_plain_json(tiny_spec: Spec) -> None:
    # Today's largest legal numbers still give finite metrics: no `Infinity` in a plan file.
    for j in tiny_spec["jobs"]:
        j["priority"] = MAX_PRIORITY
    tiny_spec["horizon"]["slot_minutes"] = 7 * 24 * 60
    tiny_spec["services"][0]["headroom"] = 0
    inst = compiled(tiny_spec)

    def refuse(constant: str) -> None:
        pytest.fail(f"a plan holds {constant}")

    for solver in ("fifo", "greedy"):
        json.loads(solve(inst, solver=solver).to_json(), parse_constant=refuse)


# -- 3. sizes beyond the limits ------------------------------------------------------------------

SIZES: list[tuple[str, Any, str, tuple[str, ...]]] = [
    ("slots 1e9", lambda d: d["horizon"].update(slots=10**9), "horizon.slots", ("100000",)),
    ("slots of 400 digits", lambda d: d["horizon"].update(slots=10**400), "horizon.slots", ()),
    (
        "slot_minutes 1e9",
        lambda d: d["horizon"].update(slot_minutes=10**9),
        "horizon.slot_minutes",
        ("10080",),
    ),
    (
        "gpus_per_node 1e9",
        lambda d: d["pools"][0].update(gpus_per_node=10**9),
        "pools[0].gpus_per_node",
        ("1024",),
    ),
    ("nodes 1e7", lambda d: d["pools"][0].update(nodes=10**7), "pools[0].nodes", ("100000",)),
    ("gpus of 400 digits", lambda d: job(d, "train").update(gpus=10**400), "jobs[0].gpus", ()),
    (
        "duration of 400 digits",
        lambda d: job(d, "ev").update(duration=10**400),
        "jobs[1].duration",
        ("100,000 slots",),
    ),
    (
        "duration string of 400 digits",
        lambda d: job(d, "ev").update(duration="9" * 400 + "h"),
        "jobs[1].duration",
        ("100,000 slots",),
    ),
    (
        "duration of a million hours",
        lambda d: job(d, "ev").update(duration="1000000h"),
        "jobs[1].duration",
        ("100,000 slots",),
    ),
    (
        "start in year 9999",
        lambda d: d["horizon"].update(start="9999-12-31T23:00:00Z"),
        "horizon.start",
        ("calendar", "9999"),
    ),
    (
        "start in year 1 east of UTC",
        lambda d: d["horizon"].update(start="0001-01-01T00:00:00+05:00"),
        "horizon.start",
        ("calendar",),
    ),
    (
        "deadline after year 9999",
        lambda d: (with_start(d), job(d, "quant").update(deadline=10**9)),
        "jobs[2].deadline",
        ("9999",),
    ),
    (
        "time of 400 digits",
        lambda d: job(d, "quant").update(deadline=10**400),
        "jobs[2].deadline",
        ("10,000,000,000",),
    ),
    (
        "outage end of 400 digits",
        lambda d: d["outages"][0].update(end=10**400),
        "outages[0].end",
        ("out of range",),
    ),
]


@pytest.mark.parametrize(
    ("mutate", "path", "words"), [c[1:] for c in SIZES], ids=[c[0] for c in SIZES]
)
def test_sizes_beyond_the_limits_are_refused(
    tiny_spec: Spec, mutate: Any, path: str, words: tuple[str, ...]
) -> None:
    mutate(tiny_spec)
    problems = problems_of(tiny_spec)
    assert_problem(problems, path, *words)
    assert all(len(p) < 300 for p in problems), problems  # no 400-digit number echoed back


def big_cluster(pools: int, nodes: int, slots: int) -> Spec:
    return {
        "name": "big",
        "horizon": {"slots": slots},
        "pools": [
            {"name": f"p{i}", "gpu_type": "G", "nodes": nodes, "gpus_per_node": 8}
            for i in range(pools)
        ],
    }


@pytest.mark.parametrize(
    ("pools", "nodes", "slots", "path", "words"),
    [
        (3, 40_000, 1, "pools", ("120,000 nodes", "at most 100,000")),
        (1, 1_000, 100_000, "horizon.slots", ("100,000,000 node-slots", "at most 10,000,000")),
    ],
    ids=["nodes of all pools", "nodes x slots"],
)
def test_cluster_too_big_is_refused_before_any_allocation(
    pools: int, nodes: int, slots: int, path: str, words: tuple[str, ...]
) -> None:
    tracemalloc.start()
    began = time.perf_counter()
    try:
        problems = problems_of(big_cluster(pools, nodes, slots))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert_problem(problems, path, *words)
    assert peak < 5 * 2**20, f"{peak} bytes allocated before the refusal"
    assert time.perf_counter() - began < 5


def test_horizon_at_the_end_of_the_calendar_plans(tiny_spec: Spec) -> None:
    # The last legal day: slot times, plan files and reports still have a date to print.
    tiny_spec["horizon"]["start"] = "9999-12-31T21:00:00Z"
    inst = compiled(tiny_spec)
    assert inst.slot_time(inst.slots) is not None
    plan = json.loads(solve(inst, solver="greedy").to_json())
    assert plan["assignments"]


# -- 4. encodings and nesting --------------------------------------------------------------------

TINY_YAML = """\
name: tiny-yaml
horizon: {slots: 4, slot_minutes: 60, start: "2026-12-01T00:00:00Z"}
pools:
  - {name: a, gpu_type: A, nodes: 2, gpus_per_node: 4}
services:
  - {name: chat, pool: a, gpus_per_replica: 2, demand: {csv: chat.csv, column: replicas}}
jobs:
  - {id: j, priority: 1, gpus: 2, duration: 1}
"""
GOOD_CSV = "time,replicas\n0,1\n1,0.5\n2,2\n3,0\n"


def write_instance(folder: Path, yaml_data: bytes | str, csv_data: bytes | str = GOOD_CSV) -> Path:
    path = folder / "instance.yaml"
    for file, data in ((path, yaml_data), (folder / "chat.csv", csv_data)):
        file.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


NOT_TEXT = {
    "binary": bytes(range(256)) * 4,
    "UTF-16 with a byte-order mark": TINY_YAML.encode("utf-16"),
    "UTF-16 without a byte-order mark": TINY_YAML.encode("utf-16-le"),
    "UTF-8 with a NUL byte": TINY_YAML.encode() + b"\0",
}


@pytest.mark.parametrize("data", NOT_TEXT.values(), ids=NOT_TEXT.keys())
def test_instance_file_that_is_not_utf8_text(tmp_path: Path, data: bytes) -> None:
    path = write_instance(tmp_path, data)
    assert file_problems(path) == [f"{path}: not UTF-8 text (save it as UTF-8)"]


@pytest.mark.parametrize(
    "data", [GOOD_CSV.encode("utf-16"), bytes(range(256))], ids=["UTF-16", "binary"]
)
def test_demand_csv_that_is_not_utf8_text(tmp_path: Path, data: bytes) -> None:
    path = write_instance(tmp_path, TINY_YAML, data)
    assert_problem(file_problems(path), "services[0].demand.csv", "chat.csv", "not UTF-8 text")


def test_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    # Excel's "CSV UTF-8" starts with a byte-order mark; the `time` header must still be found.
    bom = b"\xef\xbb\xbf"
    path = write_instance(tmp_path, bom + TINY_YAML.encode(), bom + GOOD_CSV.encode())
    assert load_instance(path).services[0].demand.tolist() == [1, 0.5, 2, 0]
    swapped = GOOD_CSV.replace("1,0.5\n2,2", "2,0.5\n1,2")
    path = write_instance(tmp_path, TINY_YAML, bom + swapped.encode())
    assert_problem(file_problems(path), "services[0].demand", "row 3", "time '2'", "slot 1")


@pytest.mark.parametrize("loader", ["libyaml", "pure Python"])
def test_yaml_nested_thousands_deep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loader: str
) -> None:
    # libyaml refuses past 1,000 levels; PyYAML's own parser runs out of stack (RecursionError).
    if loader == "pure Python":
        monkeypatch.setattr(horizon_opt.io, "_YAML_LOADER", yaml.SafeLoader)
    elif not hasattr(yaml, "CSafeLoader"):
        pytest.skip("PyYAML without libyaml")
    depth = 5000 if loader == "libyaml" else 600  # the pure-Python scanner is slow
    path = write_instance(tmp_path, "name: " + "[" * depth + "]" * depth + "\n")
    [problem] = file_problems(path)
    assert problem.startswith(f"{path}: not valid YAML: ")
    assert "nested too deeply" in problem or "exceeded maximum nesting depth" in problem


def test_data_nested_thousands_deep_from_a_library_caller(tiny_spec: Spec) -> None:
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    job(tiny_spec, "ev")["release"] = deep
    with pytest.raises(InstanceError) as info:
        parse_spec(tiny_spec)  # no deep copy: that would recurse itself
    assert_problem(info.value.problems, "jobs[1].release", "integer or a string")


@pytest.mark.parametrize(
    "line",
    ["deadline: 2026-13-45", "deadline: 0000-01-01", f"deadline: {'9' * 5000}"],
    ids=["month 13", "year 0", "an int of 5000 digits"],
)
def test_yaml_value_python_cannot_hold(tmp_path: Path, line: str) -> None:
    path = write_instance(tmp_path, TINY_YAML.replace("duration: 1}", f"duration: 1, {line}}}"))
    problems = file_problems(path)
    assert len(problems) == 1
    assert problems[0].startswith(f"{path}: not valid YAML: ")


def test_file_larger_than_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(horizon_opt.io, "MAX_FILE_BYTES", 100)
    path = write_instance(tmp_path, TINY_YAML)
    [problem] = file_problems(path)
    assert problem.startswith(f"{path}: larger than ")


def test_demand_csv_the_csv_module_cannot_read(tmp_path: Path) -> None:
    path = write_instance(tmp_path, TINY_YAML, "time,replicas\n0," + "1" * 200_000 + "\n")
    assert_problem(file_problems(path), "services[0].demand.csv", "not a readable CSV file")


@pytest.mark.parametrize(
    ("cell", "words"),
    [("nan", ("finite", "'nan'")), ("inf", ("finite",)), ("1e400", ("finite",)), ("2e6", ())],
)
def test_demand_csv_non_finite_or_absurd(tmp_path: Path, cell: str, words: tuple[str, ...]) -> None:
    path = write_instance(tmp_path, TINY_YAML, GOOD_CSV.replace("2,2", f"2,{cell}"))
    assert_problem(file_problems(path), "services[0].demand", "row 4", "1,000,000", *words)


# -- 5. the demand CSV's time column -------------------------------------------------------------

TIME_COLUMN = [
    ("rows out of order", "time,replicas\n0,1\n2,1\n1,1\n3,1\n", "row 3", "time '2' is not slot 1"),
    ("a gap", "time,replicas\n0,1\n1,1\n3,1\n4,1\n", "row 4", "time '3' is not slot 2"),
    (
        "timestamps with a gap",
        "time,replicas\n2026-12-01T00:00:00Z,1\n2026-12-01T01:00:00Z,1\n"
        "2026-12-01T03:00:00Z,1\n2026-12-01T04:00:00Z,1\n",
        "row 4",
        "not the start of slot 2",
    ),
    (
        "a timestamp inside a slot",
        "time,replicas\n0,1\n1,1\n2026-12-01T02:30:00Z,1\n3,1\n",
        "row 4",
        "not the start of slot 2",
    ),
    ("not a time", "time,replicas\n0,1\nnoon,1\n2,1\n3,1\n", "row 3", "neither a slot index"),
    ("an empty time", "time,replicas\n0,1\n,1\n2,1\n3,1\n", "row 3", "neither a slot index"),
]


@pytest.mark.parametrize(
    ("csv_text", "row", "words"), [c[1:] for c in TIME_COLUMN], ids=[c[0] for c in TIME_COLUMN]
)
def test_demand_csv_time_column_contradicts_the_rows(
    tmp_path: Path, csv_text: str, row: str, words: str
) -> None:
    path = write_instance(tmp_path, TINY_YAML, csv_text)
    problems = file_problems(path)
    assert_problem(problems, "services[0].demand", "chat.csv", row, words)


def test_demand_csv_timestamps_need_horizon_start(tmp_path: Path) -> None:
    no_start = TINY_YAML.replace(', start: "2026-12-01T00:00:00Z"', "")
    csv_text = "time,replicas\n2026-12-01T00:00:00Z,1\n"
    path = write_instance(tmp_path, no_start, csv_text)
    assert_problem(file_problems(path), "services[0].demand", "row 2", "needs horizon.start")


def test_demand_csv_time_column_that_matches_is_accepted(tmp_path: Path) -> None:
    # Slot indices, or each slot's start in any offset; a CSV without a time column is not checked.
    for csv_text in (
        "time,replicas\n0,1\n1,1\n2,1\n3,1\n",
        "time,replicas\n2026-12-01T00:00:00Z,1\n2026-12-01T02:00:00+01:00,1\n"
        "2026-12-01T02:00:00,1\n2026-12-01 03:00:00Z,1\n",
        "replicas\n1\n1\n1\n1\n",
    ):
        assert load_instance(write_instance(tmp_path, TINY_YAML, csv_text)).services[0].req.any()
    load_instance(ROOT / "instances" / "demo.yaml")  # its CSV has one ISO time per slot


# -- 6. unquoted YAML dates ----------------------------------------------------------------------


def test_unquoted_yaml_dates_mean_midnight_utc(tmp_path: Path) -> None:
    path = tmp_path / "dates.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            name: dates
            horizon: {slots: 72, slot_minutes: 60, start: 2026-12-01}
            pools: [{name: a, gpu_type: A, nodes: 1, gpus_per_node: 8}]
            outages: [{node: a-0, start: 2026-12-03, end: 2026-12-04}]
            jobs:
              - {id: j, priority: 1, gpus: 1, duration: 1, release: 2026-12-01,
                 deadline: 2026-12-02}
            """
        )
    )
    inst = load_instance(path)
    assert inst.start is not None and inst.start.isoformat() == "2026-12-01T00:00:00+00:00"
    assert (inst.jobs[0].release, inst.jobs[0].deadline) == (0, 24)
    assert down_slots(inst, "a-0") == list(range(48, 72))
    quoted = path.read_text().replace("2026-12-02", '"2026-12-02"')
    path.write_text(quoted)
    assert load_instance(path).jobs[0].deadline == 24


# -- 7. validate: warnings -----------------------------------------------------------------------

# One pool of 2 nodes x 4 GPUs, 6 slots; a service on it needs 1 replica of 2 GPUs at slots 0-2.
WARN: Spec = {
    "name": "warn",
    "horizon": {"slots": 6},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 2, "gpus_per_node": 4}],
    "services": [
        {"name": "chat", "pool": "a", "gpus_per_replica": 2, "demand": [1, 1, 1, 0, 0, 0]}
    ],
    "jobs": [],
}


def warnings_of(*jobs: Spec, **changes: Any) -> list[str]:
    data = copy.deepcopy(WARN)
    data["jobs"] = list(jobs)
    data.update(changes)
    return validate(compiled(data))


def test_validate_is_exported() -> None:
    assert horizon_opt.validate is validate
    assert "validate" in horizon_opt.__all__


def test_validate_finds_nothing_in_a_sound_instance(tiny: Instance) -> None:
    assert validate(tiny) == []
    assert warnings_of({"id": "j", "priority": 1, "gpus": 4, "duration": 2, "deadline": 2}) == []


def test_warning_job_cannot_meet_its_deadline_next_to_inference() -> None:
    # 8 GPUs = both whole nodes, which chat needs part of until slot 3: the earliest end is 5.
    found = warnings_of({"id": "big", "priority": 1, "gpus": 8, "duration": 2, "deadline": 4})
    assert found == [
        "jobs[0]: cannot end by its deadline (slot 4) even on an empty cluster: earliest end is "
        "slot 5"
    ]


def test_warning_job_cannot_meet_its_deadline_next_to_an_outage() -> None:
    # a-1 is down in slots 0-3, chat needs 2 GPUs of a-0 at slots 0-2: 4 GPUs fit from slot 3
    # on a-0 alone, or on a-1 from slot 4.
    found = warnings_of(
        {"id": "j", "priority": 1, "gpus": 4, "duration": 1, "deadline": 3},
        outages=[{"node": "a-1", "start": 0, "end": 4}],
    )
    assert found == [
        "jobs[0]: cannot end by its deadline (slot 3) even on an empty cluster: earliest end is "
        "slot 4"
    ]


def test_warning_job_longer_than_the_horizon_after_its_release() -> None:
    found = warnings_of({"id": "long", "priority": 1, "gpus": 1, "duration": 4, "release": 3})
    assert found == [
        "jobs[0].duration: its shortest run (4 slots) is longer than the 3 slots left after its "
        "release (slot 3): it can never run (with horizon.open_end: true it may run past the "
        "horizon's end)"
    ]


def test_warning_job_that_never_fits_next_to_inference() -> None:
    # 8 GPUs for 4 slots: both nodes whole, but chat needs one of them until slot 3.
    found = warnings_of({"id": "big", "priority": 1, "gpus": 8, "duration": 4})
    assert len(found) == 1
    assert found[0].startswith("jobs[0]: cannot end within the horizon (slot 6) even on an empty")


def test_warning_predecessor_can_never_run() -> None:
    found = warnings_of(
        {"id": "big", "priority": 1, "gpus": 8, "duration": 4},
        {"id": "ok", "priority": 1, "gpus": 1, "duration": 1},
        {"id": "next", "priority": 1, "gpus": 1, "duration": 1, "after": ["ok", "big"]},
    )
    assert found[1:] == ["jobs[2].after[1]: runs after 'big', which can never run"]


def test_warning_successor_waits_for_its_predecessors_earliest_end() -> None:
    # first ends at slot 4 at the earliest (chat), then second needs 2 slots: ends at 6 > 5.
    found = warnings_of(
        {"id": "first", "priority": 1, "gpus": 8, "duration": 1},
        {
            "id": "second",
            "priority": 1,
            "gpus": 1,
            "duration": 2,
            "after": ["first"],
            "deadline": 5,
        },
    )
    assert found == [
        "jobs[1]: cannot end by its deadline (slot 5) even on an empty cluster: earliest end is "
        "slot 6"
    ]


def test_warning_service_with_zero_demand_and_unused_pool() -> None:
    data = copy.deepcopy(WARN)
    data["pools"].append({"name": "idle", "gpu_type": "B", "nodes": 1, "gpus_per_node": 2})
    data["services"][0]["demand"] = [0] * 6
    data["jobs"] = [{"id": "j", "priority": 1, "gpus": 4, "duration": 1}]  # too big for idle
    assert validate(compiled(data)) == [
        "services[0].demand: zero at every slot: the service never needs a replica",
        "pools[1]: no job or service can use pool 'idle'",
    ]


def test_validate_lists_the_compile_warnings_first() -> None:
    data = copy.deepcopy(WARN)
    data["outages"] = [{"node": "a-0", "start": 7, "end": 9}]
    data["jobs"] = [{"id": "long", "priority": 1, "gpus": 1, "duration": 9}]
    found = validate(compiled(data))
    assert [line.split(":")[0] for line in found] == ["outages[0]", "jobs[0].duration"]


BENCH_SMALL = sorted(glob.glob(str(ROOT / "instances" / "bench" / "*-small-*.yaml")))


@pytest.mark.parametrize("path", BENCH_SMALL, ids=[Path(p).stem for p in BENCH_SMALL])
def test_no_plan_runs_a_job_that_validate_says_cannot(path: str) -> None:
    # The warnings are sure: a job said never to run is never in a plan, one said to miss its
    # deadline never ends on time in one.
    inst = load_instance(path)
    plan = solve(inst, solver="greedy")
    ends = {a.job: a.end for a in plan.assignments}
    for line in validate(inst):
        if not line.startswith("jobs["):
            continue
        j = inst.jobs[int(line[len("jobs[") : line.index("]")])]
        if "can never run" in line:
            assert j.id not in ends, line
        elif "by its deadline" in line:
            assert j.deadline is not None
            assert j.id not in ends or ends[j.id] > j.deadline, line
