"""Plan diffs of hand-built plans, with every figure derived by hand next to its assertion, and
the `horizon-opt diff` command.

The instance: 10 slots of 30 minutes (h = 0.5 hours per slot). Pools a and b: one node of 4
GPUs each (a-0, b-0), no inference. Available: 2 nodes x 4 GPUs x 10 slots x 0.5 = 40 GPU-h.
Jobs (durations in slots, on any pool; value = priority x GPUs x duration x h):
  keep   2 GPUs, 2 slots, priority 1               value 1 x 2 x 2 x 0.5 = 2
  move   2 GPUs, 2 slots, priority 2, deadline 6   value 2 x 2 x 2 x 0.5 = 4
  gone   4 GPUs, 2 slots, priority 1               value 1 x 4 x 2 x 0.5 = 4
  new    1 GPU,  2 slots, priority 3               value 3 x 1 x 2 x 0.5 = 3
  swap   2 GPUs, 1 slot,  priority 1               value 1 x 2 x 1 x 0.5 = 1

Plan A: keep a@0-2, move a@2-4 (on time: 4 <= 6), gone b@0-2, swap a@0-1; new unscheduled.
  pwo 2 + 4 + 4 + 1 = 11; batch GPU-h 2 + 2 + 4 + 1 = 9, utilization 9 / 40 = 0.225; 4 on time.
Plan B: keep a@0-2 (unchanged), move a@6-8 (late: 8 > 6), new b@0-2 (added), swap b@3-4 (other
  pool, 3 slots later); gone unscheduled (dropped).
  pwo 2 + 3 + 1 = 6; batch GPU-h 2 + 2 + 1 + 1 = 6, utilization 6 / 40 = 0.15; 3 on time.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from horizon_opt import check, compile_instance, evaluate
from horizon_opt.cli import app
from horizon_opt.errors import InputError
from horizon_opt.model.instance import Instance
from horizon_opt.model.spec import InstanceSpec
from horizon_opt.plans.check import ensure_valid
from horizon_opt.plans.churn import moved_jobs
from horizon_opt.plans.diff import Delta, JobChange, format_diff, plan_diff
from horizon_opt.plans.plan import Assignment, Metrics, Plan, Unscheduled

runner = CliRunner()

SPEC = {
    "name": "diff",
    "horizon": {"slots": 10, "slot_minutes": 30},
    "pools": [
        {"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4},
        {"name": "b", "gpu_type": "B", "nodes": 1, "gpus_per_node": 4},
    ],
    "jobs": [
        {"id": "keep", "priority": 1, "gpus": 2, "duration": 2},
        {"id": "move", "priority": 2, "gpus": 2, "duration": 2, "deadline": 6},
        {"id": "gone", "priority": 1, "gpus": 4, "duration": 2},
        {"id": "new", "priority": 3, "gpus": 1, "duration": 2},
        {"id": "swap", "priority": 1, "gpus": 2, "duration": 1},
    ],
}


def instance() -> Instance:
    return compile_instance(InstanceSpec.model_validate(SPEC))


def at(job: str, pool: str, start: int, end: int, gpus: list[int]) -> Assignment:
    return Assignment(job=job, pool=pool, start=start, end=end, gpus={f"{pool}-0": gpus})


def plan(solver: str, assignments: list[Assignment], unscheduled: tuple[str, ...]) -> Plan:
    """A plan with its metrics computed, as a solver writes it."""
    draft = Plan(
        instance="diff",
        solver=solver,
        status="heuristic",
        objective=0.0,
        assignments=assignments,
        unscheduled=[Unscheduled(job=j, reason="no room") for j in unscheduled],
    )
    metrics = evaluate(instance(), draft)
    return draft.model_copy(update={"objective": metrics.pwo, "metrics": metrics})


A = plan(
    "first",
    [
        at("keep", "a", 0, 2, [0, 1]),
        at("move", "a", 2, 4, [0, 1]),
        at("gone", "b", 0, 2, [0, 1, 2, 3]),
        at("swap", "a", 0, 1, [2, 3]),
    ],
    ("new",),
)
B = plan(
    "second",
    [
        at("keep", "a", 0, 2, [0, 1]),
        at("move", "a", 6, 8, [0, 1]),
        at("new", "b", 0, 2, [0]),
        at("swap", "b", 3, 4, [0, 1]),
    ],
    ("gone",),
)


def test_the_hand_plans_are_valid() -> None:
    assert list(check(instance(), A)) == []
    assert list(check(instance(), B)) == []
    assert (A.metrics.pwo, A.metrics.utilization, A.metrics.completed) == (11.0, 0.225, 4)
    assert (B.metrics.pwo, B.metrics.utilization, B.metrics.completed) == (6.0, 0.15, 3)


def test_diff_with_the_instance() -> None:
    d = plan_diff(A, B, instance())
    assert (d.a_solver, d.b_solver, d.a_instance, d.b_instance) == (
        "first",
        "second",
        "diff",
        "diff",
    )
    assert d.hours_per_slot == 0.5
    assert d.added == (JobChange("new", None, None, None, "b", 0, 2),)
    assert d.dropped == (JobChange("gone", "b", 0, 2, None, None, None),)
    # ordered by old start: swap (0) then move (2).
    # swap: a@0 -> b@3, 3 slots = 1.5 h later; move: a@2 -> a@6, 4 slots = 2.0 h later.
    assert d.moved == (
        JobChange("swap", "a", 0, 1, "b", 3, 4, 1.5),
        JobChange("move", "a", 2, 4, "a", 6, 8, 2.0),
    )
    assert [c.kind for c in (*d.added, *d.dropped, *d.moved)] == [
        "added",
        "dropped",
        "moved",
        "moved",
    ]
    assert [c.shift_slots for c in d.moved] == [3, 4]
    assert d.added[0].shift_slots is None and d.dropped[0].shift_slots is None
    assert d.unchanged == 1  # keep
    # pwo 11 -> 6: -5, relative -5 / 11; utilization 0.225 -> 0.15: -0.075, relative -1/3.
    assert d.pwo == Delta(11.0, 6.0)
    assert d.pwo.change == -5.0
    assert d.pwo.relative == pytest.approx(-5 / 11)
    assert d.utilization.change == pytest.approx(-0.075)
    assert d.utilization.relative == pytest.approx(-1 / 3)
    assert d.on_time == Delta(4, 3)
    # new is on time only in B; move (late in B) and gone (not run in B) only in A.
    assert d.newly_on_time == ("new",)
    assert d.no_longer_on_time == ("move", "gone")  # in instance order


def test_diff_without_the_instance_reads_the_plans_only() -> None:
    # Figures come from the plans' own metrics (here made up, to show where they come from);
    # no deadlines, so no on-time lists; no times on the assignments, so no hours.
    a = A.model_copy(update={"metrics": Metrics(pwo=10.0, utilization=0.5, completed=2)})
    b = B.model_copy(update={"metrics": Metrics(pwo=15.0, utilization=0.4, completed=3)})
    d = plan_diff(a, b)
    assert (d.pwo, d.utilization, d.on_time) == (Delta(10, 15), Delta(0.5, 0.4), Delta(2, 3))
    assert d.pwo.relative == 0.5
    assert d.newly_on_time is None and d.no_longer_on_time is None
    assert d.hours_per_slot is None
    assert [(c.job, c.shift_slots, c.shift_hours) for c in d.moved] == [
        ("swap", 3, None),
        ("move", 4, None),
    ]
    assert [c.job for c in d.added] == ["new"] and [c.job for c in d.dropped] == ["gone"]


def test_hours_per_slot_from_the_plans_times() -> None:
    # keep runs 2 slots from 00:00 to 01:00: 1 h / 2 slots = 0.5 h per slot, so swap's shift
    # of 3 slots is 1.5 h.
    timed = A.model_copy(
        update={
            "assignments": [
                A.assignments[0].model_copy(
                    update={
                        "start_time": "2026-12-01T00:00:00Z",
                        "end_time": "2026-12-01T01:00:00Z",
                    }
                ),
                *A.assignments[1:],
            ]
        }
    )
    d = plan_diff(timed, B)
    assert d.hours_per_slot == 0.5
    assert d.moved[0].shift_hours == 1.5


def test_zero_reference_has_no_relative_change() -> None:
    assert Delta(0.0, 3.0).relative is None
    assert Delta(0.0, 3.0).change == 3.0


def test_other_gpus_at_the_same_start_are_relocated_not_unchanged() -> None:
    """A with keep on GPUs 2-3 instead of 0-1 (swap moved to 0-1 to make room): against A, keep
    and swap kept their starts and pools on other GPUs; move and gone did not change."""
    other = plan(
        "other",
        [
            at("keep", "a", 0, 2, [2, 3]),
            at("move", "a", 2, 4, [0, 1]),
            at("gone", "b", 0, 2, [0, 1, 2, 3]),
            at("swap", "a", 0, 1, [0, 1]),
        ],
        ("new",),
    )
    assert list(check(instance(), other)) == []
    d = plan_diff(A, other, instance())
    assert (d.added, d.dropped, d.moved) == ((), (), ())
    assert (d.relocated, d.unchanged) == (("keep", "swap"), 2)
    text = format_diff(d)
    assert "jobs: 0 added, 0 dropped, 0 moved, 2 on other nodes or GPUs, 2 unchanged" in text
    assert "on other nodes or GPUs, same start and pool (2): keep, swap" in text
    assert d.to_json()["relocated"] == ["keep", "swap"]


def test_identical_plans() -> None:
    d = plan_diff(A, A, instance())
    assert (d.added, d.dropped, d.moved, d.relocated, d.unchanged) == ((), (), (), (), 4)
    assert (d.pwo.change, d.utilization.change, d.on_time.change) == (0.0, 0.0, 0.0)
    assert (d.newly_on_time, d.no_longer_on_time) == ((), ())


def test_diff_and_churn_agree_on_what_moved() -> None:
    # With now = 0 every job of A is a promise, so churn's moves are the diff's drops and moves.
    moves = moved_jobs(instance(), A, B)
    d = plan_diff(A, B, instance())
    assert {m.job for m in moves if m.dropped} == {c.job for c in d.dropped}
    assert {m.job for m in moves if not m.dropped} == {c.job for c in d.moved}
    assert [JobChange.of_move(m, 0.5) for m in moves if not m.dropped] == list(d.moved)


def test_json_has_stable_keys() -> None:
    data = plan_diff(A, B, instance()).to_json()
    assert list(data) == [
        "a",
        "b",
        "hours_per_slot",
        "pwo",
        "utilization",
        "on_time",
        "added",
        "dropped",
        "moved",
        "relocated",
        "unchanged",
        "newly_on_time",
        "no_longer_on_time",
    ]
    assert data["pwo"] == {"a": 11.0, "b": 6.0, "change": -5.0, "relative": pytest.approx(-5 / 11)}
    keys = ["job", "change", "old_pool", "old_start", "old_end", "new_pool", "new_start"]
    keys += ["new_end", "shift_slots", "shift_hours"]
    for change in [*data["added"], *data["dropped"], *data["moved"]]:
        assert list(change) == keys
    assert data["added"][0]["old_pool"] is None
    assert data["moved"][1] == {
        "job": "move",
        "change": "moved",
        "old_pool": "a",
        "old_start": 2,
        "old_end": 4,
        "new_pool": "a",
        "new_start": 6,
        "new_end": 8,
        "shift_slots": 4,
        "shift_hours": 2.0,
    }
    assert json.loads(json.dumps(data)) == data


def test_text() -> None:
    text = format_diff(plan_diff(A, B, instance()), ("a.json", "b.json"))
    lines = text.splitlines()
    assert lines[:2] == ["A: a.json (first plan of diff)", "B: b.json (second plan of diff)"]
    assert lines[3].split() == ["A", "B", "B", "-", "A"]
    assert lines[5].split() == ["pwo", "11.0", "6.0", "-5.0", "(-45.5%)"]
    assert lines[6].split() == ["utilization", "22.5%", "15.0%", "-7.5", "pp", "(-33.3%)"]
    assert lines[7].split() == ["jobs", "on", "time", "4", "3", "-1"]
    assert "jobs: 1 added, 1 dropped, 2 moved, 0 on other nodes or GPUs, 1 unchanged" in lines
    assert lines[lines.index("added (1):") + 3] == "new  b         0    2"
    assert lines[lines.index("dropped (1):") + 3] == "gone  b         0    2"
    assert lines[lines.index("moved (2):") + 3 :][:2] == [
        "swap  a             0  b             3     +3      +1.50",
        "move  a             2  a             6     +4      +2.00",
    ]
    assert lines[-2:] == [
        "newly on time (1): new",
        "no longer on time, late or not run (2): move, gone",
    ]
    # every row of a table is as wide as its rule, or narrower
    rule = lines[4]
    assert set(rule) == {"-"} and all(len(line) <= len(rule) for line in lines[3:8])


def test_ensure_valid_names_the_plan() -> None:
    ensure_valid(instance(), A, "a.json")
    broken = A.model_copy(update={"unscheduled": []})  # new is neither assigned nor unscheduled
    with pytest.raises(InputError) as exc:
        ensure_valid(instance(), broken, "a.json")
    assert exc.value.problems == [
        "a.json is not a valid plan for instance 'diff' (1 violation(s); horizon-opt check "
        "lists them all)",
        "a.json: rule 1: job 'new' is neither assigned nor unscheduled",
    ]


# -- the command -------------------------------------------------------------------------------


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    inst = tmp_path / "diff.yaml"
    inst.write_text(yaml.safe_dump(SPEC, sort_keys=False))
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    A.write(a)
    B.write(b)
    return inst, a, b


def test_cli_text(files: tuple[Path, Path, Path]) -> None:
    inst, a, b = files
    result = runner.invoke(app, ["diff", str(a), str(b), "--instance", str(inst)])
    assert result.exit_code == 0, result.output
    assert result.stdout == format_diff(plan_diff(A, B, instance()), (str(a), str(b))) + "\n"
    plain = runner.invoke(app, ["diff", str(a), str(b)])
    assert plain.exit_code == 0, plain.output
    assert "newly on time" not in plain.stdout
    assert (
        "jobs: 1 added, 1 dropped, 2 moved, 0 on other nodes or GPUs, 1 unchanged" in plain.stdout
    )


def test_cli_json(files: tuple[Path, Path, Path]) -> None:
    inst, a, b = files
    result = runner.invoke(app, ["diff", str(a), str(b), "-i", str(inst), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data == json.loads(json.dumps(plan_diff(A, B, instance()).to_json()))
    assert data["newly_on_time"] == ["new"]
    assert data["no_longer_on_time"] == ["move", "gone"]


def test_cli_refuses_an_invalid_plan(files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    inst, a, _ = files
    data = json.loads(a.read_text())
    data["assignments"][1]["end"] = 5  # move: end 5 != start 2 + duration 2
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    result = runner.invoke(app, ["diff", str(a), str(bad), "--instance", str(inst)])
    assert result.exit_code == 2
    assert f"error: {bad} is not a valid plan for instance 'diff'" in result.stderr
    assert f"error: {bad}: rule 2: job 'move': end 5 != start 2 + duration 2 on a" in result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.output
    # without the instance nothing is checked
    assert runner.invoke(app, ["diff", str(a), str(bad)]).exit_code == 0


def test_cli_warns_of_another_instance(files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    _, a, b = files
    other = tmp_path / "other.json"
    B.model_copy(update={"instance": "other"}).write(other)
    result = runner.invoke(app, ["diff", str(a), str(other)])
    assert result.exit_code == 0, result.output
    assert f"warning: {a} is a plan of 'diff', {other} of 'other'" in result.stderr
    assert "warning" not in runner.invoke(app, ["diff", str(a), str(b)]).output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "xml"], "error: --format: unknown format 'xml'; choose one of text, json"),
        (["--instance", "missing.yaml"], "error: missing.yaml: cannot read"),
    ],
)
def test_cli_bad_options(files: tuple[Path, Path, Path], args: list[str], message: str) -> None:
    _, a, b = files
    result = runner.invoke(app, ["diff", str(a), str(b), *args])
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_cli_unreadable_plan(files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    _, a, _ = files
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    result = runner.invoke(app, ["diff", str(a), str(broken)])
    assert result.exit_code == 2
    assert f"error: {broken}: not valid JSON" in result.stderr
    assert "Traceback" not in result.output
