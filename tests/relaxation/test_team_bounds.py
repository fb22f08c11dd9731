"""Bounds stay proven with teams: every plan of a tiny instance is enumerated, the checker keeps
the valid ones, and every bound source is at least the best of them."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

import horizon_opt as ho
from horizon_opt.model.load import parse_spec
from horizon_opt.plans.plan import Assignment, Unscheduled
from horizon_opt.relaxation import proven_bound
from horizon_opt.relaxation.pool_model import PoolLimits, pool_bound

# One 4-GPU node, 4 one-hour slots. Red may hold 2 GPUs (quota and limit), blue is entitled to
# 2. r1, r2 (red, 2 GPUs, 2 slots, priority 2: 8 each), b1 (blue, 4 GPUs, 2 slots: 8), b2 (blue,
# 2 GPUs, 2 slots, released at 2: 4). Red's limit runs r1 and r2 one after the other, so b1 never
# finds the whole node, and placing b1 first keeps a red job out of its quota (rule 9): the
# optimum is r1, r2 and b2, 8 + 8 + 4 = 20. Without teams r1 and r2 run together beside b1: 24.
TINY: dict[str, Any] = {
    "name": "tiny-teams",
    "horizon": {"slots": 4, "slot_minutes": 60},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 4}],
    "teams": [
        {"name": "red", "quota": {"p": 2}, "limit": {"p": 2}},
        {"name": "blue", "quota": {"p": 2}},
    ],
    "jobs": [
        {"id": "r1", "priority": 2, "gpus": 2, "duration": 2, "team": "red"},
        {"id": "r2", "priority": 2, "gpus": 2, "duration": 2, "team": "red"},
        {"id": "b1", "priority": 1, "gpus": 4, "duration": 2, "team": "blue"},
        {"id": "b2", "priority": 1, "gpus": 2, "duration": 2, "release": 2, "team": "blue"},
    ],
}


def plan_of(inst: ho.Instance, starts: dict[str, int]) -> ho.Plan | None:
    """The plan starting each job of `starts` there, GPUs given in start order (on one node a
    GPU free at a job's start stays free through it); None when the node has too few."""
    busy: list[tuple[int, int, set[int]]] = []  # (start, end, GPUs)
    assignments = []
    for job_id, start in sorted(starts.items(), key=lambda item: item[1]):
        job = inst.jobs[inst.job_index[job_id]]
        end = start + job.durations[0]
        taken = set().union(*(g for s, e, g in busy if s <= start < e))
        free = [k for k in range(4) if k not in taken][: job.gpus]
        if len(free) < job.gpus:
            return None
        busy.append((start, end, set(free)))
        assignments.append(
            Assignment(job=job_id, pool="p", start=start, end=end, gpus={"p-0": free})
        )
    left = [Unscheduled(job=j.id, reason="left out") for j in inst.jobs if j.id not in starts]
    return ho.Plan(
        instance=inst.name,
        solver="enumerated",
        status="heuristic",
        objective=0.0,
        assignments=assignments,
        unscheduled=left,
    )


def enumerated_optimum(inst: ho.Instance) -> float:
    """The best pwo of every valid plan (each job left out or started at any slot it fits)."""
    choices = [[None, *range(j.release, inst.slots - j.durations[0] + 1)] for j in inst.jobs]
    best = 0.0
    for pick in itertools.product(*choices):
        starts = {j.id: s for j, s in zip(inst.jobs, pick, strict=True) if s is not None}
        plan = plan_of(inst, starts)
        if plan is not None and ho.check(inst, plan) == []:
            best = max(best, ho.evaluate(inst, plan).pwo)
    return best


@pytest.fixture(scope="module")
def tiny() -> tuple[ho.Instance, float]:
    inst = ho.compile_instance(parse_spec(TINY))
    return inst, enumerated_optimum(inst)


def test_the_enumerated_optimum_is_the_hand_one(tiny: tuple[ho.Instance, float]) -> None:
    assert tiny[1] == 20.0


def test_every_bound_source_is_at_least_the_optimum(tiny: tuple[ho.Instance, float]) -> None:
    inst, optimum = tiny
    assert proven_bound(inst, time_limit=5.0).value >= optimum
    pool = pool_bound(inst, PoolLimits(seconds=5.0)).value
    assert pool is not None and pool >= optimum
    plan = ho.solve(inst, "cpsat", time_limit=5.0, workers=1, seed=0)
    assert plan.bound is not None and plan.bound >= optimum


@pytest.mark.parametrize("solver", list(ho.SOLVERS))
def test_every_solver_stays_at_or_below_the_optimum(
    tiny: tuple[ho.Instance, float], solver: str
) -> None:
    inst, optimum = tiny
    plan = ho.solve(inst, solver, time_limit=5.0, workers=1, seed=0)
    assert ho.check(inst, plan) == []
    assert plan.objective <= optimum + 1e-9
    if solver == "cpsat":
        assert plan.objective == optimum
