"""Cause codes: one tiny instance per code, where that code (and no earlier one) is exactly true.

Each instance has its arithmetic written above it. Values are `priority x GPUs x fastest duration
x h`, with h = 1 (slots of an hour) everywhere here. A "just not true" neighbour changes one
number and the code moves on to the next one that holds. Plans come from a real solver where one
produces the situation, or from hand-placed jobs fed to `unscheduled_causes` / `build_plan`.
"""

from __future__ import annotations

import copy
import functools
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import FIFO_TROUGH, Spec, build

import horizon_opt as ho
from horizon_opt.plans.inference import Layout, elastic_layout, static_peak_layout
from horizon_opt.solvers.assemble import Placement, build_plan
from horizon_opt.solvers.causes import MEANING, Cause, Code
from horizon_opt.solvers.diagnosis import unscheduled_causes
from horizon_opt.solvers.grid import Fit

CPSAT: dict[str, Any] = {"time_limit": 1.0, "workers": 1, "seed": 0}
ROOT = Path(__file__).resolve().parents[2]


def one_node(jobs: list[Spec], slots: int, gpus: int = 4, **extra: Any) -> Spec:
    """One pool `a` of one node (a-0) with `gpus` GPUs."""
    return {
        "name": "one-node",
        "horizon": {"slots": slots},
        "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": gpus}],
        "jobs": jobs,
        **extra,
    }


def chat(demand: list[float], gpus_per_replica: int = 2) -> list[Spec]:
    return [{"name": "chat", "pool": "a", "gpus_per_replica": gpus_per_replica, "demand": demand}]


def solved(data: Spec, solver: str) -> tuple[ho.Instance, ho.Plan]:
    inst = build(data)
    plan = ho.solve(inst, solver, **(CPSAT if solver == "cpsat" else {}))
    assert ho.check(inst, plan) == []
    return inst, plan


def unplanned(plan: ho.Plan) -> dict[str, tuple[str | None, str]]:
    return {u.job: (u.code, u.reason) for u in plan.unscheduled}


def causes_of(
    inst: ho.Instance, placed: list[tuple[str, int, int]], layout: Layout | None = None
) -> tuple[list[Placement], Layout, dict[str, Cause]]:
    """Hand placements (job id, start, node index on pool a) and the causes of the others."""
    placements = [Placement(inst.job_index[job], 0, start, (node,)) for job, start, node in placed]
    layout = elastic_layout(inst) if layout is None else layout
    found = unscheduled_causes(inst, placements, layout)
    return placements, layout, {inst.jobs[j].id: c for j, c in found.items()}


def as_plan(inst: ho.Instance, placements: list[Placement], layout: Layout) -> ho.Plan:
    reasons = unscheduled_causes(inst, placements, layout)
    plan = build_plan(inst, "hand", placements, layout, reasons, started=time.perf_counter())
    assert ho.check(inst, plan) == []
    return plan


def test_codes_are_the_eleven_in_the_order_they_are_tested() -> None:
    assert [str(c) for c in Code] == [
        "no-fitting-pool",
        "deadline-impossible",
        "predecessor-unplanned",
        "predecessor-late",
        "inference-reserved",
        "team-limit",
        "room-unused",
        "quota-borrowed-by",
        "others-quota",
        "lower-value-work",
        "higher-value-work",
    ]
    assert set(MEANING) == set(Code)
    assert all(MEANING[c] for c in Code)


# ---------------------------------------------------------------------------------------------
# 1. no-fitting-pool
#
# Pool a: one 4-GPU node; chat takes 2 GPUs (one 2-GPU replica) at slots 0 and 2 of 4, so the
# node is whole only at slots 1 and 3, never 2 slots in a row. Pool b: one 4-GPU node, but the
# job runs 5 slots there, longer than the 4-slot horizon. Job j: 4 GPUs, 2 slots on a, 5 on b.
NO_POOL: Spec = {
    "name": "no-pool",
    "horizon": {"slots": 4},
    "pools": [
        {"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4},
        {"name": "b", "gpu_type": "B", "nodes": 1, "gpus_per_node": 4},
    ],
    "services": chat([1, 0, 1, 0]),
    "jobs": [{"id": "j", "priority": 1, "gpus": 4, "duration": {"a": 2, "b": 5}}],
}


@pytest.mark.parametrize("solver", ["greedy", "fifo", "backfill", "cpsat"])
def test_no_fitting_pool(solver: str) -> None:
    _, plan = solved(NO_POOL, solver)
    assert unplanned(plan) == {
        "j": (
            "no-fitting-pool",
            "no allowed pool can hold its gang: a: at most 0 of its 1 nodes keep 4 GPUs free "
            "for 2 slots in a row beside inference and outages (it needs 1); b: runs 5 slots, "
            "longer than the horizon (4) (with horizon.open_end: true it may run past the horizon's "
            "end)",
        )
    }


def test_no_fitting_pool_for_a_multi_node_gang() -> None:
    # Pool a: 2 nodes x 4 GPUs, a-1 down in slots 1-2 of 4. A gang of 8 GPUs (both nodes) for 2
    # slots: every 2-slot window ([0,2), [1,3), [2,4)) meets a-1's outage, so at most 1 node
    # stays whole for 2 slots in a row; it needs 2.
    data = {
        "name": "gang",
        "horizon": {"slots": 4},
        "pools": [{"name": "a", "gpu_type": "A", "nodes": 2, "gpus_per_node": 4}],
        "outages": [{"node": "a-1", "start": 1, "end": 3}],
        "jobs": [{"id": "g", "priority": 1, "gpus": 8, "duration": 2}],
    }
    _, plan = solved(data, "greedy")
    assert unplanned(plan) == {
        "g": (
            "no-fitting-pool",
            "no allowed pool can hold its gang: a: at most 1 of its 2 nodes keep 4 GPUs free "
            "for 2 slots in a row beside inference and outages (it needs 2)",
        )
    }
    # Just not true: a-1 down in slot 1 only: both nodes are whole over [2, 4).
    data["outages"] = [{"node": "a-1", "start": 1, "end": 2}]
    _, plan = solved(data, "greedy")
    assert plan.unscheduled == [] and plan.assignments[0].start == 2


def test_no_fitting_pool_neighbour_is_deadline_impossible() -> None:
    # Just not true: chat's demand [1, 0, 0, 1] leaves the node whole over [1, 3), so j fits
    # alone from slot 1 and ends at 3. With deadline 2 (and pool a only) it cannot end in time:
    # the next code holds.
    data = copy.deepcopy(NO_POOL)
    data["services"] = chat([1, 0, 0, 1])
    data["jobs"][0]["deadline"] = 2
    _, plan = solved(data, "greedy")
    code, reason = unplanned(plan)["j"]
    assert code == "deadline-impossible"
    assert reason == (
        "cannot end by its deadline (slot 2) even alone on the cluster, beside inference and "
        "outages: its earliest end is slot 3 (from slot 1 on a)"
    )
    # And with deadline 3 it is simply planned, at slot 1.
    data["jobs"][0]["deadline"] = 3
    _, plan = solved(data, "greedy")
    assert plan.unscheduled == []
    assert [(a.job, a.pool, a.start) for a in plan.assignments] == [("j", "a", 1)]


# ---------------------------------------------------------------------------------------------
# 2. deadline-impossible
#
# One 4-GPU node a-0, down in slots 1-2 ([1, 3)), 6 slots. j: 4 GPUs, 2 slots, deadline 4.
# Alone, j starts at 3 at the earliest (slot 0 is free but slot 1 is down) and ends at 5 > 4.
# hi (priority 10, value 10 x 4 x 2 = 80) is released at 3 and takes the node over [3, 5):
# j (value 8) is also behind higher-value work, but deadline-impossible comes first.
def deadline_data(deadline: int) -> Spec:
    return one_node(
        [
            {"id": "j", "priority": 1, "gpus": 4, "duration": 2, "deadline": deadline},
            {"id": "hi", "priority": 10, "gpus": 4, "duration": 2, "release": 3},
        ],
        slots=6,
        outages=[{"node": "a-0", "start": 1, "end": 3}],
    )


@pytest.mark.parametrize("solver", ["greedy", "fifo", "backfill", "cpsat"])
def test_deadline_impossible(solver: str) -> None:
    _, plan = solved(deadline_data(4), solver)
    if solver == "fifo":  # fifo ignores deadlines: it runs j late, [3, 5); hi, after it, would
        # end at 7 > 6, and moving j (8 < 80) would let it start at 3.
        assert [(a.job, a.start) for a in plan.assignments] == [("j", 3)]
        assert unplanned(plan) == {
            "hi": (
                "lower-value-work",
                "would fit from slot 3 on a by moving work worth less than it (80): j (8)",
            )
        }
        return
    assert unplanned(plan)["j"] == (
        "deadline-impossible",
        "cannot end by its deadline (slot 4) even alone on the cluster, beside inference and "
        "outages: its earliest end is slot 5 (from slot 3 on a)",
    )


def test_deadline_impossible_window_and_its_neighbour() -> None:
    inst, plan = solved(deadline_data(4), "greedy")
    assert [(a.job, a.start) for a in plan.assignments] == [("hi", 3)]
    _, _, found = causes_of(inst, [("hi", 3, 0)])
    cause = found["j"]
    assert cause.code == Code.DEADLINE_IMPOSSIBLE
    assert cause.window == Fit(0, 3, (0,))  # where its earliest end comes from
    assert cause.holders == ()
    # Just not true: deadline 5. Alone it would end at 5, on time; hi (80 >= 8) holds [3, 5).
    inst, plan = solved(deadline_data(5), "greedy")
    assert unplanned(plan)["j"] == (
        "higher-value-work",
        "work worth at least as much as it (8) holds every window from slot 0 to its deadline "
        "(slot 5); at slot 3 on a: hi (80)",
    )
    _, _, found = causes_of(inst, [("hi", 3, 0)])
    assert found["j"].window == Fit(0, 3, (0,))
    assert found["j"].holders == (inst.job_index["hi"],)


def test_deadline_impossible_when_no_window_ends_in_the_horizon() -> None:
    # One 4-GPU node, 4 slots. pre: 3 slots. post runs after pre (2 slots): after pre's shortest
    # run it starts at 3 at the earliest and would end at 5 > 4. pre is planned (0-3), and post's
    # predecessor ends too late for it too, but deadline-impossible comes first. late: released
    # at 3, 2 slots, likewise.
    data = one_node(
        [
            {"id": "pre", "priority": 1, "gpus": 4, "duration": 3},
            {"id": "post", "priority": 1, "gpus": 4, "duration": 2, "after": ["pre"]},
            {"id": "late", "priority": 1, "gpus": 2, "duration": 2, "release": 3},
        ],
        slots=4,
    )
    _, plan = solved(data, "greedy")
    assert unplanned(plan) == {
        "post": (
            "deadline-impossible",
            "cannot end within the horizon (4 slots) even alone on the cluster, beside "
            "inference and outages: after its predecessors' shortest runs (slot 3), it needs 2 "
            "slots on its fastest pool, and no window ends by slot 4",
        ),
        "late": (
            "deadline-impossible",
            "cannot end within the horizon (4 slots) even alone on the cluster, beside "
            "inference and outages: released at slot 3, it needs 2 slots on its fastest pool, "
            "and no window ends by slot 4",
        ),
    }


# ---------------------------------------------------------------------------------------------
# 3. predecessor-unplanned
#
# One 4-GPU node, 6 slots; chat takes 2 GPUs at slots 0, 2, 4, so the node is whole only at
# single slots 1, 3, 5. a and c (4 GPUs, 2 slots) can never be placed (no-fitting-pool). b
# (2 GPUs, 2 slots) runs after them: after their shortest runs it could start at 2 and end at 4
# beside chat, so it is not deadline-impossible; its predecessors are simply not planned.
def predecessor_data(after: list[str]) -> Spec:
    return one_node(
        [
            {"id": "a", "priority": 1, "gpus": 4, "duration": 2},
            {"id": "c", "priority": 1, "gpus": 4, "duration": 2},
            {"id": "b", "priority": 5, "gpus": 2, "duration": 2, "after": after},
        ],
        slots=6,
        services=chat([1, 0, 1, 0, 1, 0]),
    )


@pytest.mark.parametrize("solver", ["greedy", "fifo", "backfill", "cpsat"])
@pytest.mark.parametrize(
    ("after", "sentence"),
    [
        (["a"], "runs after a, which is not planned"),
        (["a", "c"], "runs after a, c, which are not planned"),
    ],
)
def test_predecessor_unplanned(solver: str, after: list[str], sentence: str) -> None:
    _, plan = solved(predecessor_data(after), solver)
    why = unplanned(plan)
    assert why["a"][0] == why["c"][0] == "no-fitting-pool"
    assert why["b"] == ("predecessor-unplanned", sentence)


def test_predecessor_unplanned_neighbour_is_planned() -> None:
    # Just not true: chat's demand [1, 0, 0, 1, 1, 1] leaves the node whole over [1, 3): a runs
    # there and b after it, beside chat, over [3, 5).
    data = predecessor_data(["a"])
    data["jobs"] = data["jobs"][::2]  # a and b
    data["services"] = chat([1, 0, 0, 1, 1, 1])
    _, plan = solved(data, "greedy")
    assert plan.unscheduled == []
    assert sorted((a.job, a.start) for a in plan.assignments) == [("a", 1), ("b", 3)]


# ---------------------------------------------------------------------------------------------
# 4. predecessor-late
#
# One 4-GPU node, 6 slots. p1 (2 GPUs, 1 slot) and p2 (2 GPUs, 2 slots); post (4 GPUs, 2 slots,
# deadline 4) runs after both. After their shortest runs post could start at 2 and end at 4.
# Placed by hand: p1 at 0 (ends 1), p2 at 1 (ends 3): post can start at 3 at the earliest and
# would end at 5 > 4. The later of the two is named.
PRED_LATE: Spec = one_node(
    [
        {"id": "p1", "priority": 1, "gpus": 2, "duration": 1},
        {"id": "p2", "priority": 1, "gpus": 2, "duration": 2},
        {
            "id": "post",
            "priority": 9,
            "gpus": 4,
            "duration": 2,
            "after": ["p1", "p2"],
            "deadline": 4,
        },
    ],
    slots=6,
)


def test_predecessor_late_by_hand() -> None:
    inst = build(PRED_LATE)
    placements, layout, found = causes_of(inst, [("p1", 0, 0), ("p2", 1, 0)])
    assert set(found) == {"post"}
    cause = found["post"]
    assert cause == Cause(
        Code.PREDECESSOR_LATE,
        "runs after p2, which ends at slot 3: too late to end by its deadline (slot 4)",
    )
    plan = as_plan(inst, placements, layout)
    assert unplanned(plan) == {"post": ("predecessor-late", cause.sentence)}
    # Just not true: p2 at 0 as well (both end by 2): post fits from 2 as the plan stands.
    placements, layout, found = causes_of(inst, [("p1", 0, 0), ("p2", 0, 0)])
    assert found["post"] == Cause(
        Code.ROOM_UNUSED,
        "fits as the plan stands, from slot 2 on a; the solver did not place it there",
        Fit(0, 2, (0,)),
    )


def test_predecessor_late_from_greedy() -> None:
    # One 4-GPU node, 7 slots. urgent (priority 10, 2 slots) goes first, at 0-2; pre (3 slots)
    # then runs 2-5, and post (2 slots, after pre, deadline 6) could start at 5 and end at 7 > 6.
    # Alone, post could start at 3 (after pre's shortest run) and end at 5.
    data = one_node(
        [
            {"id": "urgent", "priority": 10, "gpus": 4, "duration": 2},
            {"id": "pre", "priority": 1, "gpus": 4, "duration": 3},
            {
                "id": "post",
                "priority": 1,
                "gpus": 4,
                "duration": 2,
                "after": ["pre"],
                "deadline": 6,
            },
        ],
        slots=7,
    )
    _, plan = solved(data, "greedy")
    assert unplanned(plan) == {
        "post": (
            "predecessor-late",
            "runs after pre, which ends at slot 5: too late to end by its deadline (slot 6)",
        )
    }
    # Just not true: deadline 7. post then ends on time after pre, at 5-7.
    data["jobs"][2]["deadline"] = 7
    _, plan = solved(data, "greedy")
    assert plan.unscheduled == []


# ---------------------------------------------------------------------------------------------
# 5. inference-reserved
#
# One 4-GPU node, 4 slots; chat (2 GPUs per replica) needs [2, 0, 0, 2] replicas: the whole node
# at slots 0 and 3, nothing at 1-2. Static peak reservation (fifo) keeps 2 replicas (4 GPUs) all
# day: no room at all. j (4 GPUs, 2 slots, deadline 3) would fit in the trough, [1, 3), beside
# the forecast requirement alone.
def reserved_data(deadline: int) -> Spec:
    return one_node(
        [{"id": "j", "priority": 1, "gpus": 4, "duration": 2, "deadline": deadline}],
        slots=4,
        services=chat([2, 0, 0, 2]),
    )


def test_inference_reserved_under_fifo() -> None:
    _, plan = solved(reserved_data(3), "fifo")
    assert unplanned(plan) == {
        "j": (
            "inference-reserved",
            "the plan's inference reservation (how many replicas, on which nodes) leaves it no "
            "room from slot 0 to its deadline (slot 3); with the plan's other jobs where they are "
            "and the forecast requirement placed to suit it, it could start at slot 1 on a",
        )
    }
    # Same cause by hand, from the static peak layout with nothing placed.
    inst = build(reserved_data(3))
    _, _, found = causes_of(inst, [], static_peak_layout(inst))
    assert found["j"].code == Code.INFERENCE_RESERVED
    assert found["j"].window == Fit(0, 1, (0,))  # where the requirement alone lets it start
    assert found["j"].holders == ()
    # The elastic reservation (fifo-elastic, greedy) plans it in the trough.
    for solver in ("fifo-elastic", "greedy", "backfill"):
        _, plan = solved(reserved_data(3), solver)
        assert [(a.job, a.start) for a in plan.assignments] == [("j", 1)]


def test_inference_reserved_neighbour_is_deadline_impossible() -> None:
    # Just not true: deadline 2. Even in the trough it ends at 3 > 2.
    _, plan = solved(reserved_data(2), "fifo")
    assert unplanned(plan) == {
        "j": (
            "deadline-impossible",
            "cannot end by its deadline (slot 2) even alone on the cluster, beside inference and "
            "outages: its earliest end is slot 3 (from slot 1 on a)",
        )
    }


def test_inference_reserved_on_the_fifo_trough() -> None:
    # FIFO_TROUGH: 2 nodes x 4 GPUs, chat (2 GPUs) needs [3, 1, 0, 0, 1, 3]
    # replicas. The peak, 3 replicas, fills a-0 and half of a-1 all day: `big` (4 GPUs, 2 slots)
    # never finds a whole node; beside the requirement alone a-1 is whole from slot 1 (1 replica
    # on a-0 at slot 1, none at 2).
    data = FIFO_TROUGH
    _, plan = solved(data, "fifo")
    assert unplanned(plan) == {
        "big": (
            "inference-reserved",
            "the plan's inference reservation (how many replicas, on which nodes) leaves it no "
            "room from slot 0 to the end of the horizon (slot 6); with the plan's other jobs where "
            "they are and the forecast requirement placed to suit it, it could start at slot 1 on "
            "a",
        )
    }


# Where the replicas sit matters too. Pool a: 2 nodes x 4 GPUs, a-1 down at slot 2; chat (one
# 2-GPU replica) at slots 0-1 only. j: 4 GPUs, 3 slots, deadline 3, so it must run over [0, 3),
# on a-0 (a-1 is down at 2). The elastic layout stacks the replica on a-0, the lowest node: no
# room for j. With the replica on a-1 instead, j fits on a-0: cpsat (which places inference too)
# finds that plan, the list schedulers report the reservation.
STACKED: Spec = {
    "name": "stacked",
    "horizon": {"slots": 4},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 2, "gpus_per_node": 4}],
    "outages": [{"node": "a-1", "start": 2, "end": 3}],
    "services": chat([1, 1, 0, 0]),
    "jobs": [{"id": "j", "priority": 1, "gpus": 4, "duration": 3, "deadline": 3}],
}


@pytest.mark.parametrize("solver", ["greedy", "fifo-elastic", "backfill", "fifo"])
def test_inference_reserved_where_the_replicas_sit(solver: str) -> None:
    _, plan = solved(STACKED, solver)
    assert unplanned(plan) == {
        "j": (
            "inference-reserved",
            "the plan's inference reservation (how many replicas, on which nodes) leaves it no "
            "room from slot 0 to its deadline (slot 3); with the plan's other jobs where they are "
            "and the forecast requirement placed to suit it, it could start at slot 0 on a",
        )
    }


def test_inference_reserved_where_the_replicas_sit_is_true() -> None:
    inst, plan = solved(STACKED, "cpsat")
    assert plan.status == "optimal"
    assert [(a.job, a.start, sorted(a.gpus)) for a in plan.assignments] == [("j", 0, ["a-0"])]
    assert {b.node for b in plan.inference} == {"a-1"}
    _, _, found = causes_of(inst, [])
    assert found["j"].code == Code.INFERENCE_RESERVED
    assert found["j"].window == Fit(0, 0, (0,))
    # Just not true: a-1 up all the time. The elastic layout still stacks the replica on a-0,
    # but a-1 is whole over [0, 3): greedy plans j there.
    data = copy.deepcopy(STACKED)
    del data["outages"]
    _, plan = solved(data, "greedy")
    assert [(a.job, a.start, sorted(a.gpus)) for a in plan.assignments] == [("j", 0, ["a-1"])]


# ---------------------------------------------------------------------------------------------
# 6. room-unused
#
# fifo, two 4-GPU nodes, 5 slots, no inference. In release order: j0 (4 GPUs, 4 slots) takes a-0
# over [0, 4); jx (2 GPUs, 4 slots) half of a-1 over [0, 4); j1 (released 1, 4 GPUs, 1 slot)
# waits for a whole node: a-0 at 4. j2 (released 1, 2 GPUs, 2 slots) may not start before j1
# (slot 4) and cannot end by 5: unscheduled, although the other half of a-1 is free over
# [1, 3) in the final plan.
def room_data(jx_gpus: int) -> Spec:
    return {
        "name": "room",
        "horizon": {"slots": 5},
        "pools": [{"name": "a", "gpu_type": "A", "nodes": 2, "gpus_per_node": 4}],
        "jobs": [
            {"id": "j0", "priority": 1, "gpus": 4, "duration": 4},
            {"id": "jx", "priority": 1, "gpus": jx_gpus, "duration": 4},
            {"id": "j1", "priority": 1, "gpus": 4, "duration": 1, "release": 1},
            {"id": "j2", "priority": 1, "gpus": 2, "duration": 2, "release": 1},
        ],
    }


def test_room_unused_under_fifo() -> None:
    _, plan = solved(room_data(2), "fifo")
    assert [(a.job, a.pool, a.start, sorted(a.gpus)) for a in plan.assignments] == [
        ("j0", "a", 0, ["a-0"]),
        ("jx", "a", 0, ["a-1"]),
        ("j1", "a", 4, ["a-0"]),
    ]
    assert unplanned(plan) == {
        "j2": (
            "room-unused",
            "fits as the plan stands, from slot 1 on a; FIFO starts no job before one released "
            "ahead of it has started",
        )
    }


def test_room_unused_neighbour_is_higher_value_work() -> None:
    # Just not true: jx takes all of a-1 (4 GPUs). j2 (value 1 x 2 x 2 = 4) then meets j0
    # (16) on a-0 and jx (16) on a-1 over its whole window: higher-value work holds it.
    _, plan = solved(room_data(4), "fifo")
    assert unplanned(plan) == {
        "j2": (
            "higher-value-work",
            "work worth at least as much as it (4) holds every window from slot 1 to the end of "
            "the horizon (slot 5); at slot 1 on a: j0 (16)",
        )
    }


def test_room_unused_by_hand_window() -> None:
    # Nothing placed on one 4-GPU node: j (4 GPUs, 2 slots, released at 1) fits from 1.
    inst = build(one_node([{"id": "j", "priority": 1, "gpus": 4, "duration": 2, "release": 1}], 4))
    _, _, found = causes_of(inst, [])
    assert found["j"] == Cause(
        Code.ROOM_UNUSED,
        "fits as the plan stands, from slot 1 on a; the solver did not place it there",
        Fit(0, 1, (0,)),
    )


# ---------------------------------------------------------------------------------------------
# 7. lower-value-work
#
# tests/solvers/test_solvers.py PRIORITY: one 8-GPU node, 10 slots. L (priority 1, 8 GPUs, 6 slots,
# value 48) is released at 0; H (8 GPUs, 4 slots, released 1, deadline 6) after it. Backfill
# knows only L at slot 0 and starts it over [0, 6): H cannot end by 6. Moving L (48) alone, H
# would fit from slot 1. With H's priority 10 its value is 10 x 8 x 4 = 320 > 48.
def priority_data(h_priority: float) -> Spec:
    return {
        "name": "priority",
        "horizon": {"slots": 10},
        "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 8}],
        "jobs": [
            {"id": "L", "priority": 1, "gpus": 8, "duration": 6, "release": 0},
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


def test_lower_value_work_under_backfill() -> None:
    inst, plan = solved(priority_data(10), "backfill")
    assert unplanned(plan) == {
        "H": (
            "lower-value-work",
            "would fit from slot 1 on p by moving work worth less than it (320): L (48)",
        )
    }
    placements = [Placement(inst.job_index["L"], 0, 0, (0,))]
    found = unscheduled_causes(inst, placements, elastic_layout(inst))
    cause = found[inst.job_index["H"]]
    assert cause.window == Fit(0, 1, (0,))
    assert cause.holders == (inst.job_index["L"],)


def test_lower_value_work_neighbour_is_higher_value_work_at_equal_value() -> None:
    # Just not true: H's priority 1.5 makes its value 1.5 x 8 x 4 = 48, equal to L's: work worth
    # at least as much as H holds its only window.
    _, plan = solved(priority_data(1.5), "backfill")
    assert unplanned(plan) == {
        "H": (
            "higher-value-work",
            "work worth at least as much as it (48) holds every window from slot 1 to its "
            "deadline (slot 6); at slot 1 on p: L (48)",
        )
    }
    # And one step above L's value (priority 1.51), lower-value work again.
    _, plan = solved(priority_data(1.51), "backfill")
    assert unplanned(plan)["H"][0] == "lower-value-work"


def test_lower_value_work_names_three_most_valuable_and_counts_the_rest() -> None:
    # One 8-GPU node, 2 slots. q1..q4 (2 GPUs, 2 slots, priorities 1-4: values 4, 8, 12, 16)
    # fill it. hi (8 GPUs, 2 slots, priority 10: 160) would fit at 0 by moving all four.
    data = one_node(
        [
            *({"id": f"q{p}", "priority": p, "gpus": 2, "duration": 2} for p in (1, 2, 3, 4)),
            {"id": "hi", "priority": 10, "gpus": 8, "duration": 2},
        ],
        slots=2,
        gpus=8,
    )
    inst = build(data)
    _, _, found = causes_of(inst, [(f"q{p}", 0, 0) for p in (1, 2, 3, 4)])
    assert found["hi"] == Cause(
        Code.LOWER_VALUE_WORK,
        "would fit from slot 0 on a by moving work worth less than it (160): q4 (16), q3 (12), "
        "q2 (8) and 1 more",
        Fit(0, 0, (0,)),
        tuple(inst.job_index[q] for q in ("q4", "q3", "q2", "q1")),
    )


# CHAIN: one 4-GPU node, 6 slots. X (4 GPUs, 2 slots: 8); Y runs after X (2 GPUs, 2 slots,
# priority 100, deadline 4: 400); H (4 GPUs, 2 slots, priority 5, deadline 2: 40). Greedy (X
# inherits Y's rank) and cpsat (optimal: 408) run X over [0, 2) and Y over [2, 4). H's only
# window, [0, 2), is held by X alone, but X cannot leave it without Y (worth 400 >= 40) missing
# its deadline: work worth at least as much as H holds the window, through X.
CHAIN: Spec = one_node(
    [
        {"id": "X", "priority": 1, "gpus": 4, "duration": 2},
        {"id": "Y", "priority": 100, "gpus": 2, "duration": 2, "after": ["X"], "deadline": 4},
        {"id": "H", "priority": 5, "gpus": 4, "duration": 2, "deadline": 2},
    ],
    slots=6,
)


@pytest.mark.parametrize("solver", ["greedy", "cpsat"])
def test_lower_value_work_does_not_count_a_job_whose_successor_is_worth_more(solver: str) -> None:
    # Moving X (8) would take Y (400) with it: X is worth 400 to the plan, more than H's 40.
    _, plan = solved(CHAIN, solver)
    assert {a.job for a in plan.assignments} == {"X", "Y"}
    assert unplanned(plan)["H"] == (
        "higher-value-work",
        "work worth at least as much as it (40) holds every window from slot 0 to its deadline "
        "(slot 2); at slot 0 on a: X (8; 400 with what runs after it)",
    )


# ---------------------------------------------------------------------------------------------
# 8. higher-value-work
#
# The same PRIORITY instance under greedy: H (320) goes first, over [1, 5); L (48, 6 slots) has
# no 6-slot window left in 10 slots. At its first window beside inference (slot 0) H holds it.
def test_higher_value_work_under_greedy() -> None:
    inst, plan = solved(priority_data(10), "greedy")
    assert [(a.job, a.start) for a in plan.assignments] == [("H", 1)]
    assert unplanned(plan) == {
        "L": (
            "higher-value-work",
            "work worth at least as much as it (48) holds every window from slot 0 to the end of "
            "the horizon (slot 10); at slot 0 on p: H (320)",
        )
    }
    found = unscheduled_causes(
        inst, [Placement(inst.job_index["H"], 0, 1, (0,))], elastic_layout(inst)
    )
    assert found[inst.job_index["L"]].window == Fit(0, 0, (0,))
    assert found[inst.job_index["L"]].holders == (inst.job_index["H"],)


def test_higher_value_work_names_only_the_work_worth_as_much() -> None:
    # One 4-GPU node, 2 slots. big (priority 5, 2 GPUs: 20) and small (priority 1, 2 GPUs: 4)
    # run over [0, 2). j (4 GPUs, priority 2: 16) needs the whole node: moving small does not
    # help, big holds it. Only big is named.
    data = one_node(
        [
            {"id": "big", "priority": 5, "gpus": 2, "duration": 2},
            {"id": "small", "priority": 1, "gpus": 2, "duration": 2},
            {"id": "j", "priority": 2, "gpus": 4, "duration": 2},
        ],
        slots=2,
    )
    inst = build(data)
    placements, layout, found = causes_of(inst, [("big", 0, 0), ("small", 0, 0)])
    assert found["j"] == Cause(
        Code.HIGHER_VALUE_WORK,
        "work worth at least as much as it (16) holds every window from slot 0 to the end of the "
        "horizon (slot 2); at slot 0 on a: big (20)",
        Fit(0, 0, (0,)),
        (inst.job_index["big"],),
    )
    assert unplanned(as_plan(inst, placements, layout))["j"][0] == "higher-value-work"
    # Just not true: big worth less than j (priority 3: 12 < 16): lower-value work.
    data["jobs"][0]["priority"] = 3
    inst = build(data)
    _, _, found = causes_of(inst, [("big", 0, 0), ("small", 0, 0)])
    assert found["j"].code == Code.LOWER_VALUE_WORK
    assert found["j"].holders == (inst.job_index["big"], inst.job_index["small"])


# ---------------------------------------------------------------------------------------------
# The demo: every solver names a code and a sentence for every job it leaves out.
@functools.cache
def demo() -> ho.Instance:
    return ho.load_instance(ROOT / "instances" / "demo.yaml")


@pytest.mark.parametrize("solver", list(ho.SOLVERS))
def test_every_solver_gives_every_unscheduled_demo_job_a_code(solver: str) -> None:
    inst = demo()
    plan = ho.solve(inst, solver, **(CPSAT if solver == "cpsat" else {}))
    assert ho.check(inst, plan) == []
    assert plan.unscheduled, "the demo is oversubscribed: every solver leaves some job out"
    codes = {str(c) for c in Code}
    for u in plan.unscheduled:
        assert u.code in codes, u
        assert u.reason.strip() and u.reason[0].islower(), u
