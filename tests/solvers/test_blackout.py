"""Every solver keeps a job's blackouts (`blackout:` in the instance), and `check` accepts what
they plan: small cases worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest
from test_solvers import build, solve_checked

import horizon_opt as ho


def one_node(*jobs: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "blackout",
        "horizon": {"slots": 8},
        "pools": [{"name": "a", "gpu_type": "h100", "nodes": 1, "gpus_per_node": 8}],
        "jobs": list(jobs),
    }


def job(name: str, **fields: Any) -> dict[str, Any]:
    return {"id": name, "priority": 1, "gpus": 8, "duration": 2, **fields}


def runs(plan: ho.Plan) -> list[tuple[str, int, int]]:
    return sorted((a.job, a.start, a.end) for a in plan.assignments)


@pytest.mark.parametrize("solver", ho.SOLVERS)
def test_a_run_waits_past_its_blackout(solver: str) -> None:
    """One node of 8 GPUs, one 2-slot job, blackout over slots 1 and 2 ([1, 3)): a start at 0
    runs over [0, 2), through slot 1, so the first allowed start is 3."""
    inst = build(one_node(job("j", blackout=[{"start": 1, "end": 3}])))
    assert runs(solve_checked(inst, solver)) == [("j", 3, 5)]


@pytest.mark.parametrize("solver", ho.SOLVERS)
def test_a_blackout_can_push_a_job_past_its_deadline(solver: str) -> None:
    """Deadline 4 and blackout [1, 3): its first start is 3, its first end 5 > 4, so it earns
    nothing; FIFO, which ignores deadlines, runs it late from 3, and every other solver leaves
    it out."""
    inst = build(one_node(job("j", deadline=4, blackout=[{"start": 1, "end": 3}])))
    plan = solve_checked(inst, solver)
    assert plan.objective == 0
    assert runs(plan) == ([("j", 3, 5)] if solver.startswith("fifo") else [])


@pytest.mark.parametrize("solver", ho.SOLVERS)
def test_a_hole_between_two_blackouts_takes_a_run_that_fits_it(solver: str) -> None:
    """ "a" runs over [0, 2) and holds the node; "b" (after "a", 2 slots) has blackouts [2, 3) and
    [5, 8): its starts are 3 only ([3, 5) fits between them), so it runs over [3, 5)."""
    b = job("b", after=["a"], blackout=[{"start": 2, "end": 3}, {"start": 5, "end": 8}])
    inst = build(one_node(job("a"), b))
    assert runs(solve_checked(inst, solver)) == [("a", 0, 2), ("b", 3, 5)]


def test_a_job_its_blackouts_close_is_blamed_on_time_not_on_the_pools() -> None:
    """A blackout over the whole horizon: the node could hold it, its start domain is empty."""
    inst = build(one_node(job("j", blackout=[{"start": 0, "end": 8}])))
    plan = solve_checked(inst, "greedy")
    assert [(u.job, u.code) for u in plan.unscheduled] == [("j", "deadline-impossible")]
