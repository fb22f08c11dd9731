"""FIFO against plans worked out by hand from FORMAT.md's definition of the policy.

The instances are in conftest.py. Every solver's plan on every instance also passes the checker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from horizon_opt.model.instance import Instance
from horizon_opt.plans.check import check
from horizon_opt.plans.metrics import evaluate
from horizon_opt.plans.plan import Plan
from horizon_opt.solvers import solve
from horizon_opt.solvers.fifo import release_order

Run = tuple[str, int, int, dict[str, list[int]]]  # pool, start, end, gpus


def runs(plan: Plan) -> dict[str, Run]:
    return {a.job: (a.pool, a.start, a.end, dict(a.gpus)) for a in plan.assignments}


def blocks(plan: Plan) -> list[tuple[str, str, int, int, int]]:
    return [(b.service, b.node, b.start, b.end, b.replicas) for b in plan.inference]


def reasons(plan: Plan) -> dict[str, str]:
    return {u.job: u.reason for u in plan.unscheduled}


def valid(instance: Instance, plan: Plan) -> Plan:
    assert [str(v) for v in check(instance, plan)] == []
    assert plan.objective == pytest.approx(evaluate(instance, plan).pwo)
    return plan


@pytest.fixture
def fifo(instance_of: Callable[[str], Instance]) -> Callable[[str], tuple[Instance, Plan]]:
    def run(name: str) -> tuple[Instance, Plan]:
        inst = instance_of(name)
        return inst, valid(inst, solve(inst, "fifo"))

    return run


def test_static_peak_reservation_keeps_the_trough(fifo: Any) -> None:
    # chat: req [3, 1, 0, 0, 1, 3], peak 3 replicas of 2 GPUs, reserved at EVERY slot, first-fit
    # on a-0 then a-1: a-0 holds 2 replicas (full), a-1 holds 1 (2 of 4 GPUs free), even in the
    # trough of slots 2-3 where the forecast is 0.
    inst, plan = fifo("fifo-trough")
    assert blocks(plan) == [("chat", "a-0", 0, 6, 2), ("chat", "a-1", 0, 6, 1)]
    # big (4 GPUs) needs a whole free node and never finds one: unscheduled. It does not hold
    # back small (2 GPUs, 3 slots), which starts at 0 on a-1's lowest GPU indices.
    assert runs(plan) == {"small": ("a", 0, 3, {"a-1": [0, 1]})}
    # With req only, a-0 is free at slots 1-2 (req 1 at slot 1 fits on a-1 beside small): big could
    # start at 1, small kept.
    assert reasons(plan)["big"] == (
        "the plan's inference reservation (how many replicas, on which nodes) leaves it no room "
        "from slot 0 to the end of the horizon (slot 6); with the plan's other jobs where they are "
        "and the forecast requirement placed to suit it, it could start at slot 1 on a"
    )
    m = evaluate(inst, plan)
    # 18 replica-slots planned against 8 forecast: (18 - 8) * 2 GPUs * 1 h idle
    assert m.reserved_idle_gpu_hours == pytest.approx(20)
    assert m.pwo == pytest.approx(1 * 2 * 3)


def test_elastic_reservation_frees_the_trough(instance_of: Callable[[str], Instance]) -> None:
    # Reserving req[t] only: a-0 holds [2, 1, 0, 0, 1, 2] replicas, a-1 holds 1 at slots 0 and 5.
    # Free GPUs: a-0 [0, 2, 4, 4, 2, 0], a-1 [2, 4, 4, 4, 4, 2]. big (4 GPUs, 2 slots) first
    # fits at slot 1 on a-1; small (2 GPUs, 3 slots) cannot start before big (slot 1) and fits
    # on a-0 at 1 (2, 4, 4 free).
    inst = instance_of("fifo-trough")
    plan = valid(inst, solve(inst, "fifo-elastic"))
    assert plan.solver == "fifo-elastic"
    assert blocks(plan) == [
        ("chat", "a-0", 0, 1, 2),
        ("chat", "a-0", 1, 2, 1),
        ("chat", "a-0", 4, 5, 1),
        ("chat", "a-0", 5, 6, 2),
        ("chat", "a-1", 0, 1, 1),
        ("chat", "a-1", 5, 6, 1),
    ]
    assert runs(plan) == {
        "big": ("a", 1, 3, {"a-1": [0, 1, 2, 3]}),
        "small": ("a", 1, 4, {"a-0": [0, 1]}),
    }
    assert plan.objective == pytest.approx(4 * 2 + 2 * 3)


def test_release_order_pools_nodes_and_gpu_indices(fifo: Any) -> None:
    # No inference. a-0 has 4 GPUs; b-0 and b-1 have 2. Release order (ties in file order):
    # first, fifth (both 0), second (1), third, fourth (2), sixth, seventh, ninth (5); eighth
    # runs after seventh, so it comes after it.
    #  first   4 GPUs, a only, 3 slots: a-0 at 0-3, GPUs 0-3.
    #  fifth   1 GPU: a-0 is full until 3, b-0 is free at 0: b-0 GPU 0 at 0-1.
    #  second  4 GPUs, a only, release 1: a-0 frees at 3: 3-5.
    #  third   2 GPUs, release 2: it would fit on b at 2, but FIFO does not start it before
    #          second (3). At 3 a-0 is full, b-0 is free: b-0 GPUs 0-1 at 3-4.
    #  fourth  same as third, b-0 is taken: the next node, b-1, at 3-4.
    #  sixth   release 5: a-0 and b-0 both fit at 5: the first pool in file order, a, at 5-6.
    #  seventh 2 slots from release 5 end at 7 > 6 slots: unscheduled, and it does not move
    #          the floor for the jobs after it.
    #  ninth   release 5: a-0 has GPUs 2-3 free at 5 (sixth holds 0-1): a-0 GPUs 2-3 at 5-6.
    #  eighth  its predecessor seventh is unscheduled: unscheduled.
    _, plan = fifo("fifo-order")
    assert runs(plan) == {
        "first": ("a", 0, 3, {"a-0": [0, 1, 2, 3]}),
        "fifth": ("b", 0, 1, {"b-0": [0]}),
        "second": ("a", 3, 5, {"a-0": [0, 1, 2, 3]}),
        "third": ("b", 3, 4, {"b-0": [0, 1]}),
        "fourth": ("b", 3, 4, {"b-1": [0, 1]}),
        "sixth": ("a", 5, 6, {"a-0": [0, 1]}),
        "ninth": ("a", 5, 6, {"a-0": [2, 3]}),
    }
    why = reasons(plan)
    assert set(why) == {"seventh", "eighth"}
    assert why["seventh"] == (
        "cannot end within the horizon (6 slots) even alone on the cluster, beside inference and "
        "outages: released at slot 5, it needs 2 slots on its fastest pool, and no window ends by "
        "slot 6"
    )
    assert why["eighth"] == (
        "cannot end within the horizon (6 slots) even alone on the cluster, beside inference and "
        "outages: after its predecessors' shortest runs (slot 7), it needs 1 slot on its fastest "
        "pool, and no window ends by slot 6"
    )
    assert plan.inference == []
    assert plan.objective == pytest.approx(12 + 1 + 8 + 2 + 2 + 2 + 2)
    assert plan.status == "heuristic"


def test_release_order_ties_in_file_order(instance_of: Callable[[str], Instance]) -> None:
    inst = instance_of("fifo-order")
    names = [inst.jobs[j].id for j in release_order(inst)]
    assert names[:7] == ["first", "fifth", "second", "third", "fourth", "sixth", "seventh"]
    assert sorted(names[7:]) == ["eighth", "ninth"]  # eighth runs after seventh


def test_first_pool_in_file_order_not_the_fastest(compile_spec: Any) -> None:
    # Both pools are free at 0; the job is 3x faster on b, but FIFO takes the first pool in the
    # file (a), whatever the order of the duration mapping.
    inst = compile_spec(
        {
            "name": "pools",
            "horizon": {"slots": 4},
            "pools": [
                {"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 2},
                {"name": "b", "gpu_type": "B", "nodes": 1, "gpus_per_node": 2},
            ],
            "jobs": [{"id": "j", "priority": 1, "gpus": 2, "duration": {"b": 1, "a": 3}}],
        }
    )
    plan = valid(inst, solve(inst, "fifo"))
    assert runs(plan) == {"j": ("a", 0, 3, {"a-0": [0, 1]})}


def test_deadlines_are_not_looked_at(compile_spec: Any) -> None:
    # FIFO runs a job that cannot meet its deadline anyway (it just earns nothing).
    inst = compile_spec(
        {
            "name": "late",
            "horizon": {"slots": 4},
            "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 2}],
            "jobs": [
                {"id": "x", "priority": 1, "gpus": 2, "duration": 2},
                {"id": "y", "priority": 5, "gpus": 2, "duration": 1, "deadline": 1},
            ],
        }
    )
    plan = valid(inst, solve(inst, "fifo"))
    assert runs(plan) == {"x": ("a", 0, 2, {"a-0": [0, 1]}), "y": ("a", 2, 3, {"a-0": [0, 1]})}
    assert plan.objective == pytest.approx(1 * 2 * 2)  # y is late: no value


def test_outage_reservation_and_waiting(fifo: Any) -> None:
    # chat: req [3, 3, 2, 2, 3, 3], peak 3. a-1 is down in slots 2-3, where only a-0's 2 replicas
    # fit: as many as fit, and never fewer than req (2). Free GPUs: a-0 none, a-1 [2, 2, 0, 0,
    # 2, 2]. j1 takes a-1 at 0-2. j2 (release 1) finds a-1 busy at 1, down at 2-3: 4-6.
    _, plan = fifo("fifo-outage")
    assert blocks(plan) == [
        ("chat", "a-0", 0, 6, 2),
        ("chat", "a-1", 0, 2, 1),
        ("chat", "a-1", 4, 6, 1),
    ]
    assert runs(plan) == {
        "j1": ("a", 0, 2, {"a-1": [0, 1]}),
        "j2": ("a", 4, 6, {"a-1": [0, 1]}),
    }


def test_reservation_never_below_req(fifo: Any) -> None:
    # Slot 0, only a-0 (4 GPUs) up: in file order `small` would take its peak (2 x 2 GPUs) and
    # leave `big` (req 1 x 4 GPUs) nothing. req comes first: big gets a-0 and small, whose req
    # is 0 there, gets nothing. Slot 1: file order works: small 2 on a-0, big 1 on a-1.
    _, plan = fifo("fifo-two-services")
    assert blocks(plan) == [
        ("small", "a-0", 1, 2, 2),
        ("big", "a-0", 0, 1, 1),
        ("big", "a-1", 1, 2, 1),
    ]


def test_dependency_keeps_file_order_when_it_can(fifo: Any) -> None:
    # All released at 0. File order j0, j1, j2 is a valid order (j1 runs after j0), so FIFO
    # takes them in that order: j0 (4 GPUs) at 0; j1 (2 GPUs) when j0 ends, at 1, GPUs 0-1;
    # j2 (4 GPUs) not before j1's start and not in slot 1 (2 GPUs left): at 2.
    _, plan = fifo("fifo-deps")
    assert runs(plan) == {
        "j0": ("a", 0, 1, {"a-0": [0, 1, 2, 3]}),
        "j1": ("a", 1, 2, {"a-0": [0, 1]}),
        "j2": ("a", 2, 3, {"a-0": [0, 1, 2, 3]}),
    }


def test_predecessor_released_later_holds_its_successor(compile_spec: Any) -> None:
    # b (release 0) runs after a (release 2): b cannot start before a ends (2 + 1 = 3).
    inst = compile_spec(
        {
            "name": "chain",
            "horizon": {"slots": 6},
            "pools": [{"name": "p", "gpu_type": "A", "nodes": 1, "gpus_per_node": 2}],
            "jobs": [
                {"id": "b", "priority": 1, "gpus": 1, "duration": 1, "after": ["a"]},
                {"id": "a", "priority": 1, "gpus": 1, "duration": 1, "release": 2},
                {"id": "c", "priority": 1, "gpus": 2, "duration": 1, "release": 1},
            ],
        }
    )
    plan = valid(inst, solve(inst, "fifo"))
    # Order: c (1), a (2), b (after a). c at 1, a at 2, b at 3 = end of a.
    assert runs(plan) == {
        "c": ("p", 1, 2, {"p-0": [0, 1]}),
        "a": ("p", 2, 3, {"p-0": [0]}),
        "b": ("p", 3, 4, {"p-0": [0]}),
    }


def test_lowest_gpu_indices_go_to_the_job_taken_first(fifo: Any) -> None:
    # x holds the whole node at 0-2. early (release 0, last in the file) is taken before late
    # (release 1): both start at 2, and early, placed first, takes the lowest free indices.
    _, plan = fifo("fifo-ties")
    assert runs(plan) == {
        "x": ("a", 0, 2, {"a-0": [0, 1, 2, 3]}),
        "early": ("a", 2, 3, {"a-0": [0, 1]}),
        "late": ("a", 2, 3, {"a-0": [2, 3]}),
    }


def test_multi_node_gang_takes_lowest_whole_nodes(compile_spec: Any) -> None:
    # 3 nodes of 2 GPUs; s (1 GPU) sits on n-0, so the 4-GPU gang takes n-1 and n-2 whole.
    inst = compile_spec(
        {
            "name": "gang",
            "horizon": {"slots": 3},
            "pools": [{"name": "n", "gpu_type": "A", "nodes": 3, "gpus_per_node": 2}],
            "jobs": [
                {"id": "s", "priority": 1, "gpus": 1, "duration": 3},
                {"id": "g", "priority": 1, "gpus": 4, "duration": 2},
            ],
        }
    )
    plan = valid(inst, solve(inst, "fifo"))
    assert runs(plan) == {
        "s": ("n", 0, 3, {"n-0": [0]}),
        "g": ("n", 0, 2, {"n-1": [0, 1], "n-2": [0, 1]}),
    }


def test_timestamps_in_the_plan(instance_of: Callable[[str], Instance]) -> None:
    inst = instance_of("mixed")
    plan = valid(inst, solve(inst, "fifo"))
    for a in plan.assignments:
        assert a.start_time == f"2026-12-01T{a.start:02d}:00:00Z"
        assert a.end_time == f"2026-12-01T{a.end:02d}:00:00Z"
    assert "huge" in reasons(plan)  # 7 slots from release 2 end after the 8-slot horizon


@pytest.mark.parametrize(
    "name",
    ["fifo-trough", "fifo-order", "fifo-outage", "fifo-two-services", "fifo-deps", "fifo-ties"],
)
@pytest.mark.parametrize("solver", ["fifo-elastic", "greedy"])
def test_other_baselines_on_the_fifo_instances(
    instance_of: Callable[[str], Instance], name: str, solver: str
) -> None:
    inst = instance_of(name)
    plan = valid(inst, solve(inst, solver))
    assert plan.solver == solver
    assert len(plan.assignments) + len(plan.unscheduled) == len(inst.jobs)


@pytest.mark.parametrize("solver", ["fifo", "fifo-elastic", "greedy"])
def test_every_baseline_plan_is_valid(any_instance: Instance, solver: str) -> None:
    plan = valid(any_instance, solve(any_instance, solver))
    assert plan.instance == any_instance.name
    assert {a.job for a in plan.assignments} | {u.job for u in plan.unscheduled} == {
        j.id for j in any_instance.jobs
    }
    assert all(u.reason for u in plan.unscheduled)
