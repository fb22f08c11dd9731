"""The Slurm-style backfill baseline on hand-worked instances (one node of 4 GPUs, 6 slots)."""

from __future__ import annotations

from typing import Any

from test_solvers import build

import horizon_opt as ho


def node(jobs: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "name": "node",
        "horizon": {"slots": 6},
        "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4}],
        "jobs": jobs,
        **extra,
    }


def starts(plan: ho.Plan) -> dict[str, int]:
    return {a.job: a.start for a in plan.assignments}


def run(data: dict[str, Any]) -> ho.Plan:
    inst = build(data)
    plan = ho.solve(inst, "backfill")
    assert ho.check(inst, plan) == []
    return plan


def test_a_small_job_backfills_without_delaying_the_top_reservation() -> None:
    # At slot 0: r (priority 5, 2 GPUs, 3 slots) starts. h (priority 4) needs the whole node:
    # its reservation is at 3, after r. l1 (2 GPUs, 3 slots) fits beside r and ends by 3: it
    # starts at once. l2 (4 slots) would delay h: it waits, and after h (5) it cannot fit.
    plan = run(
        node(
            [
                {"id": "r", "priority": 5, "gpus": 2, "duration": 3},
                {"id": "h", "priority": 4, "gpus": 4, "duration": 2},
                {"id": "l1", "priority": 1, "gpus": 2, "duration": 3},
                {"id": "l2", "priority": 1, "gpus": 2, "duration": 4},
            ]
        )
    )
    assert starts(plan) == {"r": 0, "l1": 0, "h": 3}


def test_a_later_high_priority_job_goes_ahead_of_the_waiting_ones_not_the_running_ones() -> None:
    # a starts at 0 (the only job that fits then) and runs to 4. b (priority 10) arrives at 1: it
    # cannot preempt a, but its reservation (4) comes before c's, which then no longer fits.
    plan = run(
        node(
            [
                {"id": "a", "priority": 1, "gpus": 4, "duration": 4},
                {"id": "c", "priority": 1, "gpus": 2, "duration": 1},
                {"id": "b", "priority": 10, "gpus": 4, "duration": 2, "release": 1},
            ]
        )
    )
    assert starts(plan) == {"a": 0, "b": 4}
    assert {u.job for u in plan.unscheduled} == {"c"}


def test_a_job_that_cannot_end_by_its_deadline_is_not_started() -> None:
    # busy holds the node until 3; late (due at 4) could only run 3-5: it is not started.
    plan = run(
        node(
            [
                {"id": "busy", "priority": 9, "gpus": 4, "duration": 3},
                {"id": "late", "priority": 1, "gpus": 4, "duration": 2, "deadline": 4},
            ]
        )
    )
    assert starts(plan) == {"busy": 0}
    # busy: 9 x 4 GPUs x 3 h = 108 > late's 1 x 4 x 2 = 8
    assert plan.unscheduled[0].code == "higher-value-work"
    assert plan.unscheduled[0].reason == (
        "work worth at least as much as it (8) holds every window from slot 0 to its deadline "
        "(slot 4); at slot 0 on a: busy (108)"
    )


def test_it_waits_for_predecessors_to_end() -> None:
    plan = run(
        node(
            [
                {"id": "first", "priority": 1, "gpus": 1, "duration": 2},
                {"id": "then", "priority": 9, "gpus": 1, "duration": 2, "after": ["first"]},
            ]
        )
    )
    assert starts(plan) == {"first": 0, "then": 2}


def test_forecast_following_reservation_uses_the_trough() -> None:
    # chat needs the whole node at slots 0-1 and 4-5 (2 replicas of 2 GPUs), nothing at 2-3.
    data = node(
        [{"id": "job", "priority": 1, "gpus": 4, "duration": 2}],
        services=[
            {"name": "chat", "pool": "a", "gpus_per_replica": 2, "demand": [2, 2, 0, 0, 2, 2]}
        ],
    )
    inst = build(data)
    elastic, static = ho.solve(inst, "backfill"), ho.solve(inst, "backfill-static")
    assert ho.check(inst, elastic) == [] and ho.check(inst, static) == []
    assert starts(elastic) == {"job": 2}
    assert starts(static) == {}
