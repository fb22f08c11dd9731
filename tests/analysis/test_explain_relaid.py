"""`inference-reserved` is said only with the plan's other batch work in place.

The cause says "the plan's inference reservation, not batch work, takes its room" and `explain`
"no priority is enough". That holds only when, keeping every other planned job where it is, some
layout of the replicas gives the job room. Otherwise batch work is in its way too, and the cause
says which (lower- or higher-value work), with the replicas placed to suit the job. Each claim is
checked by building the plan it speaks of (the named work moved, the job at its window, the
replicas packed around the batch work) and passing it to the checker, or by solving with cpsat.

STACKED (test_causes): pool a, 2 nodes x 4 GPUs, a-1 down at slot 2; chat, one 2-GPU replica at
slots 0-1. j (4 GPUs, 3 slots, deadline 3, priority 1: 12) must run [0, 3) on a-0. The elastic
layout stacks the replica on a-0. X (2 GPUs, slots 0-1, priority px: 4 px) is placed by hand:
on a-1 it leaves room for the replica beside it, and j fits on a-0; on a-0 it is in j's way
wherever the replica goes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import Spec, build
from test_causes import STACKED, as_plan
from test_explain import assert_move_is_valid, relaid_plan

import horizon_opt as ho
from horizon_opt.analysis.explain import explain
from horizon_opt.export.explanations import what_it_takes
from horizon_opt.plans.inference import elastic_layout
from horizon_opt.solvers.assemble import Placement

DEMO = Path(__file__).resolve().parents[2] / "instances" / "demo.yaml"
CPSAT = ho.SolveOptions(time_limit=2.0, workers=1, seed=0)


def stacked(x_priority: float) -> Spec:
    x = {"id": "X", "priority": x_priority, "gpus": 2, "duration": 2}
    return {**STACKED, "jobs": [*STACKED["jobs"], x]}


def hand_plan(inst: ho.Instance, x_node: int) -> ho.Plan:
    """X at slot 0 on node `x_node` of pool a, beside the elastic layout; j not planned."""
    layout = elastic_layout(inst)
    assert layout.replicas[0][0, 0] == 1  # the replica stacked on a-0
    return as_plan(inst, [Placement(inst.job_index["X"], 0, 0, (x_node,))], layout)


def test_reserved_when_the_other_batch_work_leaves_room() -> None:
    inst = build(stacked(0.1))
    plan = hand_plan(inst, x_node=1)
    (r,) = explain(inst, plan, job="j")
    assert r.code == "inference-reserved"
    assert "with the plan's other jobs where they are" in (r.reason or "")
    assert "no priority is enough" in "\n".join(what_it_takes(inst, r))
    # True: X stays on a-1, the replica goes beside it, j runs on a-0.
    moved = relaid_plan(inst, plan, "j", "a", 0, ())
    assert ho.check(inst, moved) == []
    assert {a.job for a in moved.assignments} == {"X", "j"}


def test_lower_value_work_in_the_way_is_not_the_reservation() -> None:
    # X (0.4) sits on a-0, where j (12) must run: the replica can go to a-1, but X must move.
    inst = build(stacked(0.1))
    plan = hand_plan(inst, x_node=0)
    (r,) = explain(inst, plan, job="j")
    assert r.code == "lower-value-work", r.reason
    assert r.no_priority is None and r.inference_moved
    assert (r.insert_at, r.insert_pool, r.insert_moves) == (0, "a", ("X",))
    assert r.priority_needed == pytest.approx(0.4 / 12)
    text = "\n".join(what_it_takes(inst, r))
    assert "no priority is enough" not in text and "the inference replicas placed" in text
    assert_move_is_valid(inst, plan, r)
    best = ho.solve(inst, "cpsat", CPSAT)  # a solver that lays inference out plans it
    assert best.status == "optimal" and {a.job for a in best.assignments} == {"X", "j"}


def test_higher_value_work_in_the_way_is_not_the_reservation() -> None:
    # X worth 40 > 12 on a-0: j outranks it only above priority 40 / 12.
    inst = build(stacked(10))
    plan = hand_plan(inst, x_node=0)
    (r,) = explain(inst, plan, job="j")
    assert r.code == "higher-value-work", r.reason
    assert "wherever the forecast requirement is placed" in (r.reason or "")
    assert r.insert_at is None and r.no_priority is None
    assert r.priority_needed == pytest.approx(40 / 12)
    assert (r.window_start, r.window_pool, r.window_moves) == (0, "a", ("X",))
    moved = relaid_plan(inst, plan, "j", "a", 0, ("X",))
    assert ho.check(inst, moved) == []


def test_the_demos_moe_job_is_told_what_is_in_its_way() -> None:
    # greedy's plan of the demo: pretrain-moe-8x7b was told "no priority is enough", yet with
    # every other planned job kept no layout of the replicas fits it, and cpsat plans it at its
    # priority. The work in its way is named, and moving it (replicas re-packed) is valid.
    inst = ho.load_instance(DEMO)
    plan = ho.solve(inst, "greedy")
    (r,) = explain(inst, plan, job="pretrain-moe-8x7b")
    assert r.code == "lower-value-work" and r.inference_moved
    assert r.no_priority is None and r.insert_moves
    assert_move_is_valid(inst, plan, r)


MEDIUM = Path(__file__).resolve().parents[2] / "instances/bench/enterprise-medium-s0.yaml"


@pytest.mark.parametrize("solver", ["fifo", "backfill-static"])
def test_every_reserved_claim_on_a_medium_instance_holds(solver: str) -> None:
    # The static reservations leave jobs out for the reservation alone: each such job, put at
    # the start its reason names with nothing else moved and the replicas re-packed, gives a
    # plan that the checker accepts, with the job on time.
    inst = ho.load_instance(MEDIUM)
    plan = ho.solve(inst, solver)
    reserved = [u for u in plan.unscheduled if u.code == "inference-reserved"]
    assert reserved
    for u in reserved:
        found = re.search(r"it could start at slot (\d+) on (\S+)$", u.reason)
        assert found is not None, u.reason
        moved = relaid_plan(inst, plan, u.job, found.group(2), int(found.group(1)), ())
        assert ho.check(inst, moved) == [], u
        (a,) = [a for a in moved.assignments if a.job == u.job]
        assert inst.windows[inst.job_index[u.job]].on_time(a.end), u
