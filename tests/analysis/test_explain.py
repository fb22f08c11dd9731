"""`explain`: one record per job (status, planned start, earliest start alone, cause, what it would
take), checked against independent evidence rather than against itself:

- the earliest start alone is confirmed by CP-SAT on an instance holding that job alone: a plan
  starting it there exists, and no plan starts it one slot earlier (status optimal, job dropped);
- `insert_at` / `insert_moves` are replayed: the moved jobs are taken out, the job is put at
  `insert_at`, and the independent checker must accept the plan;
- `priority_needed` is replayed: the job's priority set just above it, the instance is solved
  again, and the job must be planned.

Values are `priority x GPUs x fastest duration x h` (h = 1 everywhere here).
"""

from __future__ import annotations

import copy
import csv
import functools
import io
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_causes import NO_POOL, deadline_data, predecessor_data, reserved_data, room_data

import horizon_opt as ho
from horizon_opt.analysis.explain import JobExplanation, explain
from horizon_opt.errors import InputError
from horizon_opt.export.explanations import (
    CSV_COLUMNS,
    explanations_csv,
    explanations_json,
    format_explanations,
    format_one,
)
from horizon_opt.model.load import parse_spec
from horizon_opt.plans.inference import Layout, elastic_layout, plan_layout
from horizon_opt.plans.plan import Assignment, Unscheduled
from horizon_opt.solvers.assemble import Placement, build_plan, plan_placements
from horizon_opt.solvers.causes import Code
from horizon_opt.solvers.diagnosis import unscheduled_causes

Spec = dict[str, Any]
ROOT = Path(__file__).resolve().parents[2]
CPSAT: dict[str, Any] = {"time_limit": 2.0, "workers": 1, "seed": 0}
CPSAT_DEMO: dict[str, Any] = {"time_limit": 1.0, "workers": 1, "seed": 0}
SOLVERS = list(ho.SOLVERS)


def build(data: Spec) -> ho.Instance:
    return ho.compile_instance(parse_spec(copy.deepcopy(data)))


def solve(inst: ho.Instance, solver: str, **options: Any) -> ho.Plan:
    if solver == "cpsat" and not options:
        options = CPSAT
    plan = ho.solve(inst, solver, **options)
    assert ho.check(inst, plan) == []
    return plan


def records(inst: ho.Instance, plan: ho.Plan) -> dict[str, JobExplanation]:
    return {r.job: r for r in explain(inst, plan)}


# ---------------------------------------------------------------------------------------------
# Earliest start alone never lies.
#
# TROUGH: pool a, 2 nodes x 4 GPUs; pool b, 1 node x 2 GPUs, down over [0, 3). chat (2-GPU
# replicas on a) needs [4, 3, 1, 0, 0, 2, 4, 4] replicas = [8, 6, 2, 0, 0, 4, 8, 8] GPUs of 8.
#   gang  8 GPUs (both a nodes), 2 slots: both whole only at 3-4 -> 3
#   mid   4 GPUs, 3 slots on a: a node stays whole over 2-4 (2, 0, 0 GPUs of chat) -> 2
#   small 2 GPUs, a: 2 / b: 3 slots: slot 1 leaves 2 GPUs on one node, slot 2 more -> 1 on a
#   late  2 GPUs, 1 slot, released 6: a is full at 6, b is up -> 6 on b
#   after runs after small, which alone ends at 3 at the earliest (on a from 1; b is down until 3
#         and takes 3 slots): -> 3 (not small's release plus its shortest run, 2: no window
#         holds small from 0)
TROUGH: Spec = {
    "name": "trough",
    "horizon": {"slots": 8},
    "pools": [
        {"name": "a", "gpu_type": "A", "nodes": 2, "gpus_per_node": 4},
        {"name": "b", "gpu_type": "B", "nodes": 1, "gpus_per_node": 2},
    ],
    "outages": [{"node": "b-0", "start": 0, "end": 3}],
    "services": [
        {"name": "chat", "pool": "a", "gpus_per_replica": 2, "demand": [4, 3, 1, 0, 0, 2, 4, 4]}
    ],
    "jobs": [
        {"id": "gang", "priority": 1, "gpus": 8, "duration": 2, "pools": ["a"]},
        {"id": "mid", "priority": 1, "gpus": 4, "duration": {"a": 3}},
        {"id": "small", "priority": 1, "gpus": 2, "duration": {"a": 2, "b": 3}},
        {"id": "late", "priority": 1, "gpus": 2, "duration": 1, "release": 6},
        {"id": "after", "priority": 1, "gpus": 2, "duration": 1, "after": ["small"]},
    ],
}

# OUTAGES: pools a (2 x 4 GPUs) and b (1 x 2 GPUs); a-0 down over [1, 3), a-1 over [2, 5), b-0
# over [0, 2). No inference.
#   j  2 GPUs, a: 3 / b: 2 slots, released 1: a-0 from 3, a-1 from 5, b-0 from 2 -> 2 on b
#   k  4 GPUs, 2 slots on a: a-1 is up over [0, 2) -> 0
#   m  4 GPUs, 2 slots on a, released 1: a-0 over [3, 5) -> 3
#   g  8 GPUs (both a nodes), 2 slots: both up over [5, 7) only -> 5
OUTAGES: Spec = {
    "name": "outages",
    "horizon": {"slots": 8},
    "pools": [
        {"name": "a", "gpu_type": "A", "nodes": 2, "gpus_per_node": 4},
        {"name": "b", "gpu_type": "B", "nodes": 1, "gpus_per_node": 2},
    ],
    "outages": [
        {"node": "a-0", "start": 1, "end": 3},
        {"node": "a-1", "start": 2, "end": 5},
        {"node": "b-0", "start": 0, "end": 2},
    ],
    "jobs": [
        {"id": "j", "priority": 1, "gpus": 2, "duration": {"a": 3, "b": 2}, "release": 1},
        {"id": "k", "priority": 1, "gpus": 4, "duration": {"a": 2}},
        {"id": "m", "priority": 1, "gpus": 4, "duration": {"a": 2}, "release": 1},
        {"id": "g", "priority": 1, "gpus": 8, "duration": {"a": 2}},
    ],
}

# GANGS: pool h, 3 nodes x 2 GPUs, h-2 down at slot 3. Service s (1-GPU replicas) needs
# [3, 2, 1, 0, 2, 3, 1, 0] GPUs of 6.
#   g4   4 GPUs = 2 whole nodes, 2 slots: slot 0 leaves only 1 whole node; slots 1-2 leave 2 -> 1
#   g6   6 GPUs = all 3 nodes, 1 slot: needs no inference and h-2 up -> 7
#   one  2 GPUs = 1 whole node, 3 slots, released 1 -> 1
#   tiny 1 GPU, 4 slots -> 0
GANGS: Spec = {
    "name": "gangs",
    "horizon": {"slots": 8},
    "pools": [{"name": "h", "gpu_type": "H", "nodes": 3, "gpus_per_node": 2}],
    "outages": [{"node": "h-2", "start": 3, "end": 4}],
    "services": [
        {"name": "s", "pool": "h", "gpus_per_replica": 1, "demand": [3, 2, 1, 0, 2, 3, 1, 0]}
    ],
    "jobs": [
        {"id": "g4", "priority": 1, "gpus": 4, "duration": 2},
        {"id": "g6", "priority": 1, "gpus": 6, "duration": 1},
        {"id": "one", "priority": 1, "gpus": 2, "duration": 3, "release": 1},
        {"id": "tiny", "priority": 1, "gpus": 1, "duration": 4},
    ],
}

# TWO_SERVICES: pool c, 2 nodes x 4 GPUs. big (4-GPU replicas) needs [1, 1, 0, 1, 0, 0, 1, 1];
# s1 (1-GPU replicas, headroom 0.5) needs ceil(1.5 x [1, 2, 3, 2, 1, 2, 1, 0]) =
# [2, 3, 5, 3, 2, 3, 2, 0]: in all [6, 7, 5, 7, 2, 3, 6, 4] GPUs of 8.
#   w   4 GPUs, 2 slots: a whole node at 4 and 5 (2 and 3 GPUs of inference) -> 4
#   h2  2 GPUs, 3 slots: slots 1 and 3 leave 1 GPU; over 4-6 a node keeps 2 free -> 4
#   h3  3 GPUs, 2 slots: slot 3 leaves 1 GPU, slot 1 too -> 4
#   gg  8 GPUs (both nodes), 1 slot: inference never drops to 0 -> never (None)
TWO_SERVICES: Spec = {
    "name": "two-services",
    "horizon": {"slots": 8},
    "pools": [{"name": "c", "gpu_type": "C", "nodes": 2, "gpus_per_node": 4}],
    "services": [
        {"name": "big", "pool": "c", "gpus_per_replica": 4, "demand": [1, 1, 0, 1, 0, 0, 1, 1]},
        {
            "name": "s1",
            "pool": "c",
            "gpus_per_replica": 1,
            "headroom": 0.5,
            "demand": [1, 2, 3, 2, 1, 2, 1, 0],
        },
    ],
    "jobs": [
        {"id": "w", "priority": 1, "gpus": 4, "duration": 2},
        {"id": "h2", "priority": 1, "gpus": 2, "duration": 3},
        {"id": "h3", "priority": 1, "gpus": 3, "duration": 2},
        {"id": "gg", "priority": 1, "gpus": 8, "duration": 1},
    ],
}

ALONE: dict[str, tuple[Spec, dict[str, tuple[int | None, str | None]]]] = {
    "trough": (
        TROUGH,
        {
            "gang": (3, "a"),
            "mid": (2, "a"),
            "small": (1, "a"),
            "late": (6, "b"),
            "after": (3, "a"),
        },
    ),
    "outages": (OUTAGES, {"j": (2, "b"), "k": (0, "a"), "m": (3, "a"), "g": (5, "a")}),
    "gangs": (GANGS, {"g4": (1, "h"), "g6": (7, "h"), "one": (1, "h"), "tiny": (0, "h")}),
    "two-services": (
        TWO_SERVICES,
        {"w": (4, "c"), "h2": (4, "c"), "h3": (4, "c"), "gg": (None, None)},
    ),
}


def solo(
    data: Spec,
    inst: ho.Instance,
    job: Any,
    durations: dict[int, int],
    release: int,
    deadline: int | None,
) -> ho.Instance:
    """The instance's pools, services and outages with `job` alone, on `durations`' pools."""
    spec = {k: copy.deepcopy(v) for k, v in data.items() if k != "jobs"}
    one: Spec = {
        "id": job.id,
        "priority": 1,
        "gpus": job.gpus,
        "duration": {inst.pools[p].name: d for p, d in durations.items()},
        "release": release,
    }
    if deadline is not None:
        one["deadline"] = deadline
    spec["jobs"] = [one]
    return build(spec)


@pytest.mark.parametrize("name", list(ALONE))
def test_earliest_start_alone_never_lies(name: str) -> None:
    data, expected = ALONE[name]
    inst = build(data)
    found = records(inst, solve(inst, "greedy"))
    assert {j: (r.earliest_alone, r.earliest_alone_pool) for j, r in found.items()} == expected
    earlier = 0
    for job in inst.jobs:
        if job.after:
            continue
        ea = found[job.id].earliest_alone
        if ea is None:  # never: not even from its release with no deadline, on any pool
            alone = solo(data, inst, job, dict(job.durations), job.release, None)
            plan = solve(alone, "cpsat")
            assert plan.status == "optimal" and [u.job for u in plan.unscheduled] == [job.id]
            continue
        pool = inst.pool_index[str(found[job.id].earliest_alone_pool)]
        d = job.durations[pool]
        # (a) A plan that starts it exactly at ea on that pool exists.
        plan = solve(solo(data, inst, job, {pool: d}, ea, ea + d), "cpsat")
        assert [(a.job, a.pool, a.start) for a in plan.assignments] == [
            (job.id, inst.pools[pool].name, ea)
        ]
        if ea == job.release:
            continue  # one slot earlier is before its release
        earlier += 1
        for p, dp in job.durations.items():
            # (b) Starting exactly one slot earlier is infeasible on every allowed pool, and
            # (c) so is any start from its release up to then.
            for release in sorted({ea - 1, job.release}):
                plan = solve(solo(data, inst, job, {p: dp}, release, ea - 1 + dp), "cpsat")
                assert plan.status == "optimal", (job.id, p, release)
                assert [u.job for u in plan.unscheduled] == [job.id], (job.id, p, release)
    assert earlier >= 2  # each instance has jobs that wait past their release


# ---------------------------------------------------------------------------------------------
# Records.
#
# STATE: 8 slots, now = 2; pool a, 2 nodes x 4 GPUs; no inference.
#   run    4 GPUs, 4 slots, placed on a-0 at 0: running ([0, 4))
#   res    4 GPUs, 2 slots, placed on a-1 at 3: reserved ([3, 5))
#   ok     4 GPUs, 2 slots (value 8): alone, a-0 from 4 (a-1 is free at slot 2 only) -> 4
#   late   4 GPUs, 2 slots, priority 2 (16), deadline 6: alone also 4
#   never  8 GPUs, 2 slots (16): both nodes from 5
# fifo (release order, then file order): ok on a-0 [4, 6), late on a-1 [5, 7) (ends 7 > 6),
# never cannot start before late (5) with both nodes free until 8: not planned.
STATE: Spec = {
    "name": "state",
    "horizon": {"slots": 8},
    "now": 2,
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 2, "gpus_per_node": 4}],
    "jobs": [
        {
            "id": "run",
            "priority": 1,
            "gpus": 4,
            "duration": 4,
            "placed": {"pool": "a", "start": 0, "gpus": {"a-0": [0, 1, 2, 3]}},
        },
        {
            "id": "res",
            "priority": 1,
            "gpus": 4,
            "duration": 2,
            "placed": {"pool": "a", "start": 3, "gpus": {"a-1": [0, 1, 2, 3]}},
        },
        {"id": "ok", "priority": 1, "gpus": 4, "duration": 2},
        {"id": "late", "priority": 2, "gpus": 4, "duration": 2, "deadline": 6},
        {"id": "never", "priority": 1, "gpus": 8, "duration": 2},
    ],
}


def test_statuses_on_a_state_instance() -> None:
    inst = build(STATE)
    plan = solve(inst, "fifo")
    found = records(inst, plan)
    assert list(found) == ["run", "res", "ok", "late", "never"]  # the instance's order
    summary = {
        j: (r.status, r.pool, r.start, r.end, r.earliest_alone, r.waits, r.code)
        for j, r in found.items()
    }
    assert summary == {
        "run": ("running", "a", 0, 4, None, None, None),
        "res": ("reserved", "a", 3, 5, None, None, None),
        "ok": ("on-time", "a", 4, 6, 4, 0, None),
        "late": ("late", "a", 5, 7, 4, 1, "lower-value-work"),
        "never": ("not-planned", None, None, None, 5, None, "higher-value-work"),
    }
    late = found["late"]
    assert (
        late.reason == "would fit from slot 4 on a by moving work worth less than it (16): ok (8)"
    )
    assert (late.insert_at, late.insert_pool, late.insert_moves) == (4, "a", ("ok",))
    # Only ok (8) is in its way at its best window: above 8 / 8 = 1 it outranks it.
    assert late.priority_needed == pytest.approx(1.0)
    assert (late.window_start, late.window_pool, late.window_moves) == (4, "a", ("ok",))
    never = found["never"]
    assert never.reason == (
        "work worth at least as much as it (16) holds every window from slot 2 to the end of the "
        "horizon (slot 8); at slot 5 on a: late (16)"
    )
    assert never.insert_at is None and never.no_priority is None
    assert never.priority_needed == pytest.approx(1.0)  # late's 16 over never's 16 GPU-slots
    # Running and reserved jobs are not diagnosed.
    for j in ("run", "res"):
        r = found[j]
        assert (r.code, r.reason, r.priority_needed, r.no_priority) == (None, None, None, None)


def test_moving_the_insert_moves_of_a_late_job_gives_a_valid_plan() -> None:
    # fifo's late job goes to a-0 at 4 (its insert_at) once ok is taken out; by hand.
    inst = build(STATE)
    plan = solve(inst, "fifo")
    late = records(inst, plan)["late"]
    kept = [a for a in plan.assignments if a.job not in ("late", *late.insert_moves)]
    moved = Assignment(job="late", pool="a", start=4, end=6, gpus={"a-0": [0, 1, 2, 3]})
    fixed = plan.model_copy(
        update={
            "assignments": [*kept, moved],
            "unscheduled": [
                *plan.unscheduled,
                *(Unscheduled(job=m, reason="moved") for m in late.insert_moves),
            ],
        }
    )
    assert ho.check(inst, fixed) == []
    assert {r.job: r.status for r in explain(inst, fixed)}["late"] == "on-time"


def test_greedy_on_the_state_instance() -> None:
    # greedy (priority order): late (priority 2) on a-0 [4, 6), never on both nodes [6, 8); ok
    # (8) is held at its windows by late (16).
    inst = build(STATE)
    found = records(inst, solve(inst, "greedy"))
    assert {j: r.status for j, r in found.items()} == {
        "run": "running",
        "res": "reserved",
        "ok": "not-planned",
        "late": "on-time",
        "never": "on-time",
    }
    ok = found["ok"]
    assert ok.code == "higher-value-work"
    assert ok.priority_needed == pytest.approx(2.0)  # late's 16 over ok's 8 GPU-slots


@pytest.mark.parametrize(
    ("data", "solver", "job", "code"),
    [
        (NO_POOL, "greedy", "j", "no-fitting-pool"),
        (deadline_data(4), "greedy", "j", "deadline-impossible"),
        (predecessor_data(["a"]), "greedy", "b", "predecessor-unplanned"),
        (reserved_data(3), "fifo", "j", "inference-reserved"),
    ],
)
def test_no_priority_is_enough_for_the_causes_that_batch_work_does_not_make(
    data: Spec, solver: str, job: str, code: str
) -> None:
    inst = build(data)
    r = records(inst, solve(inst, solver))[job]
    assert (r.status, r.code) == ("not-planned", code)
    assert r.no_priority  # says why
    assert (r.priority_needed, r.insert_at, r.window_start) == (None, None, None)
    assert r.insert_moves == r.window_moves == ()


def test_room_unused_needs_no_priority_and_no_move() -> None:
    # test_causes.room_data: fifo leaves j2 out though half of a-1 is free over [1, 3).
    inst = build(room_data(2))
    plan = solve(inst, "fifo")
    r = records(inst, plan)["j2"]
    assert (r.code, r.earliest_alone, r.earliest_alone_pool) == ("room-unused", 1, "a")
    assert (r.insert_at, r.insert_pool, r.insert_moves) == (1, "a", ())
    assert (r.priority_needed, r.window_start, r.window_pool, r.window_moves) == (0, 1, "a", ())
    assert r.no_priority is None
    assert_move_is_valid(inst, plan, r)


# ---------------------------------------------------------------------------------------------
# priority_needed is honest.
#
# PRIORITY (tests/solvers/test_solvers.py): one 8-GPU node, 10 slots. L (1 x 8 x 6 = 48);
# H (priority 10, 8 GPUs, 4 slots, released 1, deadline 6: 320). Only one of them fits in time.
def priority_data(l_priority: float = 1, h_priority: float = 10) -> Spec:
    return {
        "name": "priority",
        "horizon": {"slots": 10},
        "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 8}],
        "jobs": [
            {"id": "L", "priority": l_priority, "gpus": 8, "duration": 6},
            {
                "id": "H",
                "priority": h_priority,
                "gpus": 8,
                "duration": 4,
                "release": 1,
                "deadline": 6,
            },
        ],
    }


def planned_ids(plan: ho.Plan) -> set[str]:
    return {a.job for a in plan.assignments}


# LADDER: one 4-GPU node, 4 slots. A (priority 3, 4 GPUs, 2 slots: 24) and B (priority 1: 8)
# fill it; j (priority 0.5: 4) has no room. Every job has the same work (8 GPU-slots), so
# greedy's priority order is value order. Without a deadline j's best window is B's, [2, 4):
# above 8 / 8 = 1 it outranks B. With deadline 3 every window meets A: above 24 / 8 = 3.
def ladder(j_priority: float, deadline: int | None = None) -> Spec:
    j: Spec = {"id": "j", "priority": j_priority, "gpus": 4, "duration": 2}
    if deadline is not None:
        j["deadline"] = deadline
    return {
        "name": "ladder",
        "horizon": {"slots": 4},
        "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4}],
        "jobs": [
            {"id": "A", "priority": 3, "gpus": 4, "duration": 2},
            {"id": "B", "priority": 1, "gpus": 4, "duration": 2},
            j,
        ],
    }


@pytest.mark.parametrize(
    ("deadline", "needed", "window", "moves"), [(None, 1.0, 2, ("B",)), (3, 3.0, 0, ("A",))]
)
def test_priority_needed_is_honest_under_greedy(
    deadline: int | None, needed: float, window: int, moves: tuple[str, ...]
) -> None:
    inst = build(ladder(0.5, deadline))
    plan = solve(inst, "greedy")
    r = records(inst, plan)["j"]
    assert (r.status, r.code) == ("not-planned", "higher-value-work")
    assert r.priority_needed == pytest.approx(needed)
    assert (r.window_start, r.window_pool, r.window_moves) == (window, "a", moves)
    assert_move_is_valid(inst, plan, r, window=True)
    above = solve(build(ladder(needed * 1.001, deadline)), "greedy")
    assert "j" in planned_ids(above)
    below = solve(build(ladder(needed * 0.999, deadline)), "greedy")
    assert "j" not in planned_ids(below)


def test_priority_needed_is_honest_on_the_state_instance() -> None:
    inst = build(STATE)
    needed = records(inst, solve(inst, "greedy"))["ok"].priority_needed
    assert needed is not None
    data = copy.deepcopy(STATE)
    data["jobs"][2]["priority"] = needed * 1.001
    raised = build(data)
    assert "ok" in planned_ids(solve(raised, "greedy"))


def test_priority_needed_is_the_value_threshold_that_cpsat_honours() -> None:
    # greedy plans H; L's threshold is H's value over L's work: 320 / 48 = 6.67. An optimal
    # plan runs L just above it and H just below it.
    inst = build(priority_data())
    plan = solve(inst, "greedy")
    r = records(inst, plan)["L"]
    assert (r.code, r.window_start, r.window_moves) == ("higher-value-work", 0, ("H",))
    assert_move_is_valid(inst, plan, r, window=True)
    assert r.priority_needed == pytest.approx(320 / 48)
    assert r.no_priority is None and r.insert_at is None  # nothing worth less is in its way
    needed = 320 / 48
    above = solve(build(priority_data(l_priority=needed * 1.001)), "cpsat")
    assert above.status == "optimal" and planned_ids(above) == {"L"}
    below = solve(build(priority_data(l_priority=needed * 0.999)), "cpsat")
    assert below.status == "optimal" and planned_ids(below) == {"H"}


# ---------------------------------------------------------------------------------------------
# insert_at: put the job there, take out insert_moves, and the checker must accept the plan.
def moved_plan(
    inst: ho.Instance, plan: ho.Plan, job: str, pool_name: str, start: int, moves: tuple[str, ...]
) -> ho.Plan:
    """`plan` without `moves`, with `job` at `start` on `pool_name`, built with `build_plan` on
    the plan's own inference layout; nodes: the first ones that keep enough GPUs free over the
    whole run (counted here, from the plan's layout and the jobs that stay)."""
    layout = plan_layout(inst, plan)
    assert layout is not None
    gone = {job, *moves}
    keep = [
        Placement(
            inst.job_index[a.job],
            inst.pool_index[a.pool],
            a.start,
            tuple(sorted(inst.node_index[n] for n in a.gpus)),
        )
        for a in plan.assignments
        if a.job not in gone
    ]
    j, p = inst.job_index[job], inst.pool_index[pool_name]
    gang, end = inst.jobs[j].gangs[p], start + inst.jobs[j].durations[p]
    free = np.array(layout.free, dtype=np.int64)
    for q in keep:
        free[list(q.nodes), q.start : q.end(inst)] -= q.gpus_per_node(inst)
    pool = inst.pools[p]
    nodes = [
        n
        for n in range(pool.first_node, pool.first_node + pool.nodes)
        if free[n, start:end].min() >= gang.gpus_per_node
    ][: gang.nodes]
    assert len(nodes) == gang.nodes, f"{job}: no room at slot {start} on {pool_name}"
    placements = [*keep, Placement(j, p, start, tuple(nodes))]
    reasons = unscheduled_causes(inst, placements, layout)
    return build_plan(inst, "moved", placements, layout, reasons, started=time.perf_counter())


def relaid_plan(
    inst: ho.Instance, plan: ho.Plan, job: str, pool_name: str, start: int, moves: tuple[str, ...]
) -> ho.Plan:
    """`plan` without `moves`, `job` at `start` on the first nodes of `pool_name` that no kept
    job uses during its run, and the replicas packed anew around all of them (the elastic
    layout of what the batch work leaves)."""
    gone = {job, *moves}
    keep = [p for p in plan_placements(inst, plan) if inst.jobs[p.job].id not in gone]
    j, pool = inst.job_index[job], inst.pools[inst.pool_index[pool_name]]
    gang, end = inst.jobs[j].gangs[pool.index], start + inst.jobs[j].durations[pool.index]
    held = np.zeros((inst.num_nodes, inst.slots), dtype=np.int64)
    for p in keep:
        held[list(p.nodes), p.start : p.end(inst)] += p.gpus_per_node(inst)
    nodes = [
        n
        for n in range(pool.first_node, pool.first_node + pool.nodes)
        if inst.up[n, start:end].all() and not held[n, start:end].any()
    ][: gang.nodes]
    assert len(nodes) == gang.nodes, f"{job}: no whole nodes at slot {start} on {pool_name}"
    placements = [*keep, Placement(j, pool.index, start, tuple(nodes))]
    held[nodes, start:end] += gang.gpus_per_node
    packed = elastic_layout(replace(inst, held=held))
    layout = Layout(packed.replicas, packed.free + held)
    reasons = unscheduled_causes(inst, placements, layout)
    return build_plan(inst, "relaid", placements, layout, reasons, started=time.perf_counter())


def assert_move_is_valid(
    inst: ho.Instance, plan: ho.Plan, r: JobExplanation, window: bool = False
) -> None:
    """Take out `insert_moves` and put the job at `insert_at` (or, with `window`, the same for
    the best window of `priority_needed`): the checker accepts the plan and the job is on time;
    only work worth less than the job (or no more than the threshold) has moved. When its
    windows place the inference replicas to suit it, they are packed anew (`relaid_plan`)."""
    values = {j.id: j.value for j in inst.jobs}
    if window:
        assert r.window_start is not None and r.window_pool is not None
        assert r.priority_needed is not None
        at, pool, moves = r.window_start, r.window_pool, r.window_moves
        limit = r.priority_needed * inst.jobs[inst.job_index[r.job]].work_hours
        assert all(values[m] <= limit * (1 + 1e-9) for m in moves), r
    else:
        assert r.insert_at is not None and r.insert_pool is not None
        at, pool, moves = r.insert_at, r.insert_pool, r.insert_moves
        assert all(values[m] < r.value for m in moves), r
    make = relaid_plan if r.inference_moved else moved_plan
    moved = make(inst, plan, r.job, pool, at, moves)
    assert ho.check(inst, moved) == [], r
    on_time = {x.job for x in explain(inst, moved) if x.status == "on-time"}
    assert r.job in on_time


def test_insert_at_under_backfill_moves_only_lower_value_work() -> None:
    inst = build(priority_data())
    plan = solve(inst, "backfill")
    r = records(inst, plan)["H"]
    assert (r.code, r.insert_at, r.insert_pool, r.insert_moves) == (
        "lower-value-work",
        1,
        "p",
        ("L",),
    )
    assert r.priority_needed == pytest.approx(48 / 32)  # it already outranks L
    assert_move_is_valid(inst, plan, r)


def test_insert_moves_name_only_the_jobs_that_must_move() -> None:
    # One 8-GPU node, 2 slots. q1..q4 (2 GPUs each, values 4, 8, 12, 16) fill it; hi (4 GPUs,
    # priority 10: 80) needs half of it: moving the two cheapest (q1, q2) is enough.
    data = {
        "name": "quarters",
        "horizon": {"slots": 2},
        "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 8}],
        "jobs": [
            *({"id": f"q{p}", "priority": p, "gpus": 2, "duration": 2} for p in (1, 2, 3, 4)),
            {"id": "hi", "priority": 10, "gpus": 4, "duration": 2},
        ],
    }
    inst = build(data)
    placements = [Placement(inst.job_index[f"q{p}"], 0, 0, (0,)) for p in (1, 2, 3, 4)]
    layout = plan_layout(inst, solve(inst, "greedy"))
    assert layout is not None
    reasons = unscheduled_causes(inst, placements, layout)
    plan = build_plan(inst, "hand", placements, layout, reasons, started=time.perf_counter())
    assert ho.check(inst, plan) == []
    r = records(inst, plan)["hi"]
    assert r.code == "lower-value-work"
    assert set(r.insert_moves) <= {"q1", "q2", "q3", "q4"}
    assert_move_is_valid(inst, plan, r)


# CHAIN: one 4-GPU node, 6 slots. X (4 GPUs, 2 slots: 8); Y runs after X (2 GPUs, 2 slots,
# priority 100, deadline 4: 400); H (4 GPUs, 2 slots, priority 5, deadline 2: 40). X over [0, 2)
# and Y over [2, 4) is optimal (408; cpsat proves it). H needs [0, 2), which only X holds, but X
# cannot leave [0, 2) without Y (400 > 40) leaving [2, 4) and missing its deadline.
CHAIN: Spec = {
    "name": "chain",
    "horizon": {"slots": 6},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4}],
    "jobs": [
        {"id": "X", "priority": 1, "gpus": 4, "duration": 2},
        {"id": "Y", "priority": 100, "gpus": 2, "duration": 2, "after": ["X"], "deadline": 4},
        {"id": "H", "priority": 5, "gpus": 4, "duration": 2, "deadline": 2},
    ],
}


@pytest.mark.parametrize("solver", ["greedy", "cpsat"])
def test_insert_moves_keep_the_plan_valid_when_a_moved_job_has_successors(solver: str) -> None:
    inst = build(CHAIN)
    plan = solve(inst, solver)
    assert planned_ids(plan) == {"X", "Y"}
    r = records(inst, plan)["H"]
    assert r.status == "not-planned"
    if r.insert_at is not None:
        assert_move_is_valid(inst, plan, r)


def test_priority_needed_counts_the_successors_of_the_work_in_the_way() -> None:
    inst = build(CHAIN)
    r = records(inst, solve(inst, "greedy"))["H"]
    assert r.priority_needed is not None
    data = copy.deepcopy(CHAIN)
    data["jobs"][2]["priority"] = r.priority_needed * 1.001
    raised = solve(build(data), "cpsat")
    assert raised.status == "optimal"
    assert "H" in planned_ids(raised)


# ---------------------------------------------------------------------------------------------
# Refusals.
def test_explain_refuses_a_plan_that_fails_the_checker() -> None:
    inst = build(priority_data())
    plan = solve(inst, "greedy")
    bad = plan.model_copy(
        update={
            "assignments": [
                a.model_copy(update={"start": 0, "end": 4}) for a in plan.assignments
            ],  # H before its release (1)
            "unscheduled": [],  # and L in neither list
        }
    )
    violations = ho.check(inst, bad)
    assert violations.total >= 2
    with pytest.raises(InputError) as caught:
        explain(inst, bad)
    problems = caught.value.problems
    assert "priority" in problems[0] and f"{violations.total} violation" in problems[0]
    text = "\n".join(problems)
    for v in violations:
        assert str(v) in text


def test_explain_refuses_an_unknown_job_and_answers_a_known_one() -> None:
    inst = build(priority_data())
    plan = solve(inst, "greedy")
    with pytest.raises(InputError) as caught:
        explain(inst, plan, job="nope")
    assert caught.value.problems == ["--job: no job 'nope' in instance 'priority'"]
    (only,) = explain(inst, plan, job="L")
    assert only == records(inst, plan)["L"]


# ---------------------------------------------------------------------------------------------
# Formatting.
def test_format_explanations_table_and_causes() -> None:
    inst = build(priority_data())
    plan = solve(inst, "greedy")
    text = format_explanations(inst, plan, explain(inst, plan))
    lines = text.splitlines()
    assert lines[0] == "plan greedy for priority: 1 not-planned, 1 on-time (slots of 60 min)"
    assert lines[1:5] == [
        "",
        "job  status       pool  start  end  alone  waits  cause",
        "L    not-planned  -         -    -      0      -  higher-value-work",
        "H    on-time      p         1    5      1      0",
    ]
    assert lines[6] == (
        "L (not-planned, higher-value-work): work worth at least as much as it (48) holds every "
        "window from slot 0 to the end of the horizon (slot 10); at slot 0 on p: H (320)"
    )
    what = "\n".join(lines[7:])
    assert "6.67" in what and "slot 0 on p" in what and "H" in what
    assert all(line.startswith("  ") for line in lines[7:])
    assert text.endswith("\n")


def test_format_one_with_times() -> None:
    data = priority_data()
    data["horizon"]["start"] = "2026-12-01T00:00:00Z"  # a Tuesday
    inst = build(data)
    plan = solve(inst, "backfill")
    found = records(inst, plan)
    assert found["L"].start_time == "2026-12-01T00:00:00Z"
    assert found["L"].end_time == "2026-12-01T06:00:00Z"
    assert format_one(inst, found["L"]) == (
        "L: on-time, priority 1, value 48\n"
        "  planned: slot 0 (Tue 00:00) to 6 (Tue 06:00) on p\n"
        "  earliest start alone on the cluster: slot 0 (Tue 00:00) on p\n"
    )
    lines = format_one(inst, found["H"]).splitlines()
    assert lines[:4] == [
        "H: not-planned, priority 10, value 320",
        "  deadline: slot 6 (Tue 06:00)",
        "  earliest start alone on the cluster: slot 1 (Tue 01:00) on p",
        "  cause: lower-value-work: would fit from slot 1 on p by moving work worth less than it "
        "(320): L (48)",
    ]
    what = "\n".join(lines[4:])
    assert "slot 1 (Tue 01:00) on p" in what and "L" in what


def test_format_one_for_running_and_never_fitting_jobs() -> None:
    inst = build(STATE)
    found = records(inst, solve(inst, "fifo"))
    assert format_one(inst, found["run"]) == (
        "run: running, priority 1, value 16\n  planned: slot 0 to 4 on a\n"
    )
    inst = build(TWO_SERVICES)
    gg = records(inst, solve(inst, "greedy"))["gg"]
    assert gg.code == "no-fitting-pool" and gg.no_priority is not None
    text = format_one(inst, gg)
    assert "  earliest start alone on the cluster: never (no allowed pool holds it)\n" in text
    assert f"no priority is enough: {gg.no_priority}" in text


@pytest.mark.parametrize("name", ["state", "priority"])
def test_csv_has_one_row_per_job(name: str) -> None:
    data = STATE if name == "state" else priority_data()
    inst = build(data)
    found = explain(inst, solve(inst, "fifo"))
    text = explanations_csv(inst, found)
    rows = list(csv.reader(io.StringIO(text)))
    assert tuple(rows[0]) == CSV_COLUMNS
    parsed = [dict(zip(CSV_COLUMNS, row, strict=True)) for row in rows[1:]]
    assert [row["job"] for row in parsed] == [r.job for r in found]
    for row, r in zip(parsed, found, strict=True):
        assert row["status"] == r.status
        assert row["cause_code"] == (r.code or "")
        assert row["reason"] == (r.reason or "")
        assert row["start_slot"] == ("" if r.start is None else str(r.start))
        assert row["earliest_alone_slot"] == (
            "" if r.earliest_alone is None else str(r.earliest_alone)
        )
        assert row["insert_moves"].split() == list(r.insert_moves)
        assert row["window_moves"].split() == list(r.window_moves)
        if r.priority_needed is None:
            assert row["priority_needed"] == ""
        else:
            assert float(row["priority_needed"]) == pytest.approx(r.priority_needed, abs=0.005)
    if name == "state":
        late = parsed[3]
        assert (late["job"], late["status"], late["waits_h"], late["insert_slot"]) == (
            "late",
            "late",
            "1",
            "4",
        )


def test_json_has_one_entry_per_job() -> None:
    inst = build(STATE)
    plan = solve(inst, "fifo")
    found = explain(inst, plan)
    data = json.loads(explanations_json(plan, found))
    assert (data["instance"], data["solver"]) == ("state", "fifo")
    assert [e["job"] for e in data["jobs"]] == [r.job for r in found]
    by_job = {e["job"]: e for e in data["jobs"]}
    assert by_job["late"]["status"] == "late"
    assert by_job["late"]["insert_moves"] == ["ok"]
    assert by_job["late"]["waits"] == 1
    assert by_job["never"]["code"] == "higher-value-work"
    assert by_job["run"]["earliest_alone"] is None


# ---------------------------------------------------------------------------------------------
# The demo and a medium enterprise instance: every late or unplanned job gets a code, a reason
# and something a person can act on.
@functools.cache
def instance(path: str) -> ho.Instance:
    return ho.load_instance(ROOT / path)


@functools.cache
def plan_of(path: str, solver: str) -> ho.Plan:
    return solve(instance(path), solver, **(CPSAT_DEMO if solver == "cpsat" else {}))


DEMO = "instances/demo.yaml"
MEDIUM = "instances/bench/enterprise-medium-s0.yaml"
CASES = [(DEMO, s) for s in SOLVERS] + [(MEDIUM, "greedy"), (MEDIUM, "backfill")]


@pytest.mark.parametrize(("path", "solver"), CASES)
def test_every_unplanned_job_has_something_to_act_on(path: str, solver: str) -> None:
    inst, plan = instance(path), plan_of(path, solver)
    found = explain(inst, plan)
    assert [r.job for r in found] == [j.id for j in inst.jobs]
    codes = {u.job: u.code for u in plan.unscheduled}
    diagnosed = 0
    for r in found:
        if r.status in ("on-time", "running", "reserved"):
            assert r.code is None and r.reason is None
            continue
        diagnosed += 1
        assert r.code in {str(c) for c in Code} and r.reason, r
        if r.status == "not-planned":
            assert r.code == codes[r.job], r  # the same cause as the plan file's
        assert (
            r.no_priority is not None or r.priority_needed is not None or r.insert_at is not None
        ), r
        if r.no_priority is not None:
            assert r.priority_needed is None
        if r.priority_needed is not None:
            assert r.priority_needed >= 0 and r.window_start is not None
    assert diagnosed == len(plan.unscheduled) + sum(r.status == "late" for r in found)
    assert diagnosed > 0


def moves_successors(inst: ho.Instance, plan: ho.Plan, moves: tuple[str, ...]) -> bool:
    """Whether a job of `moves` has a planned successor that does not move with it."""
    planned = planned_ids(plan)
    return any(
        inst.jobs[q].id in planned and inst.jobs[q].id not in moves
        for m in moves
        for q in inst.successors[inst.job_index[m]]
    )


@pytest.mark.parametrize("solver", SOLVERS)
def test_demo_moves_without_successors_are_valid(solver: str) -> None:
    # Where no moved job has a planned successor (see CHAIN), taking out insert_moves and
    # putting the job at insert_at gives a plan that the checker accepts, with the job on time;
    # the same for the best window of priority_needed and its window_moves.
    inst, plan = instance(DEMO), plan_of(DEMO, solver)
    tried = 0
    for r in explain(inst, plan):
        if r.insert_at is not None and not moves_successors(inst, plan, r.insert_moves):
            assert_move_is_valid(inst, plan, r)
            tried += 1
        if r.window_start is not None and not moves_successors(inst, plan, r.window_moves):
            assert_move_is_valid(inst, plan, r, window=True)
            tried += 1
    assert tried > 0


def test_demo_greedy_every_insert_is_valid() -> None:
    inst, plan = instance(DEMO), plan_of(DEMO, "greedy")
    for r in explain(inst, plan):
        if r.insert_at is not None:
            assert_move_is_valid(inst, plan, r)


@pytest.mark.parametrize("solver", ["greedy", "backfill"])
def test_enterprise_medium_every_move_is_valid(solver: str) -> None:
    # Moves never take out a job that the waiting job runs after, nor leave a job after one
    # that moved: every insert and best window gives a valid plan with the job on time.
    inst, plan = instance(MEDIUM), plan_of(MEDIUM, solver)
    moving = [r for r in explain(inst, plan) if r.insert_moves or r.window_moves]
    assert len(moving) >= 4
    for r in moving[:4]:
        if r.insert_at is not None:
            assert_move_is_valid(inst, plan, r)
        if r.window_start is not None and r.priority_needed:
            assert_move_is_valid(inst, plan, r, window=True)
