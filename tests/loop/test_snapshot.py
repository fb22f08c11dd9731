"""`instance_at` builds the same state as the spec round trip (`without_jobs`, `with_placed`,
`compile_instance`), field by field, and solvers plan it the same way."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

import numpy as np
import pytest

import horizon_opt
from horizon_opt.errors import InstanceError
from horizon_opt.loop.snapshot import Running, instance_at
from horizon_opt.loop.state import placed_spec, with_placed, without_jobs
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.model.spec import PlacedSpec
from horizon_opt.plans.plan import Plan

ROOT = Path(__file__).resolve().parents[2]
FILES = [
    "instances/demo.yaml",
    "instances/demo-state.yaml",
    "instances/bench/enterprise-medium-s0.yaml",
    "instances/bench/deadline-medium-s0.yaml",
]


@cache
def planned(file: str) -> tuple[Instance, Plan]:
    inst = horizon_opt.load_instance(ROOT / file)
    return inst, horizon_opt.solve(inst, "greedy")


def demands(inst: Instance) -> dict[int, list[float]]:
    return {s.index: s.demand.tolist() for s in inst.services}


def along(inst: Instance, plan: Plan, now: int) -> tuple[set[str], dict[str, PlacedSpec]]:
    """The jobs left at `now` if the plan ran as planned, and the running ones the instance does
    not place already."""
    keep = {a.job for a in plan.assignments if a.end > now} | {
        j.id for j in inst.jobs if j.id not in {a.job for a in plan.assignments}
    }
    running = {
        a.job: placed_spec(a)
        for a in plan.assignments
        if a.start < now < a.end and inst.jobs[inst.job_index[a.job]].placed is None
    }
    return keep, running


def round_trip(
    inst: Instance, now: int, keep: set[str], running: dict[str, PlacedSpec]
) -> Instance:
    left_out = {j.id for j in inst.jobs if j.id not in keep}
    return compile_instance(
        with_placed(without_jobs(inst.spec, left_out), running, now), demands(inst)
    )


def compiled(inst: Instance, running: dict[str, PlacedSpec]) -> dict[str, Running]:
    """The same placements in compiled terms, as a replay holds them."""
    return {
        job: Running(
            inst.pool_index[p.pool],
            int(p.start),
            {inst.node_index[n]: tuple(g) for n, g in p.gpus.items()},
            None if p.end is None else int(p.end),
        )
        for job, p in running.items()
    }


def assert_same(fast: Instance, slow: Instance) -> None:
    for name in ("name", "slots", "slot_minutes", "start", "pools", "node_names", "now"):
        assert getattr(fast, name) == getattr(slow, name), name
    assert fast.jobs == slow.jobs
    assert fast.job_index == slow.job_index
    assert fast.successors == slow.successors
    assert fast.warnings == slow.warnings
    assert fast.held is None and slow.held is None
    for name in ("node_pool", "up", "capacity", "whole", "placed_gpus"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    assert len(fast.services) == len(slow.services)
    for a, b in zip(fast.services, slow.services, strict=True):
        assert (a.index, a.name, a.pool, a.gpus_per_replica, a.headroom) == (
            b.index,
            b.name,
            b.pool,
            b.gpus_per_replica,
            b.headroom,
        )
        assert np.array_equal(a.demand, b.demand) and np.array_equal(a.req, b.req)
    assert fast.spec == slow.spec


def nows(inst: Instance) -> list[int]:
    return sorted({inst.now, *(inst.now + k * (inst.slots - inst.now) // 5 for k in range(1, 5))})


@pytest.mark.parametrize("file", FILES)
def test_states_along_a_plan_equal_the_round_trip(file: str) -> None:
    inst, plan = planned(file)
    for now in nows(inst):
        keep, running = along(inst, plan, now)
        slow = round_trip(inst, now, keep, running)
        assert_same(instance_at(inst, now, keep, running), slow)
        fast = instance_at(inst, now, [inst.job_index[j] for j in keep], compiled(inst, running))
        assert_same(fast, slow)
        # the spec describes the state: compiling it gives the state again
        assert_same(fast, compile_instance(fast.spec, demands(inst)))


def test_engine_like_states_leave_out_unreleased_jobs() -> None:
    """As the replay asks: only released jobs (and not their successors) are known."""
    inst, plan = planned("instances/bench/enterprise-medium-s0.yaml")
    for now in nows(inst)[1:]:
        keep, running = along(inst, plan, now)
        known: set[str] = set()
        for j in sorted(inst.jobs, key=lambda j: j.index):
            released = j.release <= now and all(
                inst.jobs[p].id in known or inst.jobs[p].id not in keep for p in j.after
            )
            if j.id in keep and released:
                known.add(j.id)
        assert set(running) <= known
        assert_same(instance_at(inst, now, known, running), round_trip(inst, now, known, running))


@pytest.mark.parametrize("file", FILES)
@pytest.mark.parametrize("solver", ["greedy", "backfill"])
def test_solvers_plan_the_fast_state_as_the_round_trip(file: str, solver: str) -> None:
    inst, plan = planned(file)
    for now in nows(inst)[1:4]:
        keep, running = along(inst, plan, now)
        fast = instance_at(inst, now, keep, compiled(inst, running))
        slow = round_trip(inst, now, keep, running)
        a, b = horizon_opt.solve(fast, solver), horizon_opt.solve(slow, solver)
        assert a.assignments == b.assignments
        assert a.objective == b.objective
        assert horizon_opt.check(fast, a) == []


def refused(inst: Instance, now: int, keep: set[str], running: dict[str, PlacedSpec]) -> str:
    """The problems `instance_at` names, for a state that the compiler refuses with the very
    same problems (one owner of the checks)."""
    with pytest.raises(InstanceError) as slow:
        round_trip(inst, now, keep, running)
    with pytest.raises(InstanceError) as written:
        instance_at(inst, now, keep, running)
    with pytest.raises(InstanceError) as fast:
        instance_at(inst, now, keep, compiled(inst, running))
    assert written.value.problems == fast.value.problems == slow.value.problems
    return " ".join(fast.value.problems)


def test_refuses_placements_that_the_compiler_refuses() -> None:
    inst, plan = planned("instances/bench/enterprise-medium-s0.yaml")
    now = 30
    keep, running = along(inst, plan, now)
    ends = {a.job: a.end for a in plan.assignments}
    job = next(
        j for j in inst.jobs if j.id in running and j.release and len(running[j.id].gpus) == 1
    )
    p = running[job.id]
    early = p.model_copy(update={"start": job.release - 1, "end": ends[job.id]})
    assert "before its release" in refused(inst, now, keep, {**running, job.id: early})
    node = next(iter(p.gpus))
    same = p.model_copy(update={"gpus": {node: [0] * len(p.gpus[node])}})
    assert len(p.gpus[node]) > 1
    assert "not distinct" in refused(inst, now, keep, {**running, job.id: same})
    # another running job of the same size moved onto these very GPUs
    other = next(
        j
        for j in running
        if j != job.id
        and inst.jobs[inst.job_index[j]].gpus == job.gpus
        and inst.pool_index[p.pool] in inst.jobs[inst.job_index[j]].durations
    )
    twice = running[other].model_copy(update={"pool": p.pool, "gpus": p.gpus, "end": ends[job.id]})
    assert "both hold GPU" in refused(inst, now, keep, {**running, other: twice})


def test_refuses_a_placed_job_whose_predecessor_is_free() -> None:
    inst, plan = planned("instances/bench/enterprise-medium-s0.yaml")
    keep, _ = along(inst, plan, 0)
    succ = next(j for j in inst.jobs if j.after and j.gpus <= 8)
    pool = inst.pools[next(iter(succ.durations))]
    hold = PlacedSpec(
        pool=pool.name, start=succ.release, gpus={f"{pool.name}-0": list(range(succ.gpus))}
    )
    assert "is not placed" in refused(inst, 0, keep, {succ.id: hold})


def test_refuses_a_node_that_is_down() -> None:
    inst, plan = planned("instances/bench/enterprise-medium-s0.yaml")
    keep, running = along(inst, plan, 10)
    n = 27  # l40s-5, down in slots [17, 46)
    assert inst.node_names[n] == "l40s-5" and not inst.up[n, 17:46].any()
    pool = int(inst.node_pool[n])
    job = next(
        j
        for j in inst.jobs
        if j.id in keep
        and j.id not in running
        and not j.after
        and pool in j.durations
        and j.gangs[pool].nodes == 1
        and j.release <= 10
    )
    hold = PlacedSpec(pool=inst.pools[pool].name, start=16, gpus={"l40s-5": list(range(job.gpus))})
    assert "while that node is down" in refused(inst, 10, keep, {**running, job.id: hold})


def test_arguments_that_describe_no_state() -> None:
    """A state is at or after its instance's now, of its jobs; its running jobs were free."""
    inst, plan = planned("instances/demo-state.yaml")
    keep, running = along(inst, plan, inst.now + 1)
    with pytest.raises(ValueError, match="now"):
        instance_at(inst, inst.now - 1, keep, running)
    with pytest.raises(ValueError, match="residual"):
        instance_at(replace(inst, held=inst.placed_gpus), inst.now, keep, running)
    with pytest.raises(ValueError, match="unknown job"):
        instance_at(inst, inst.now, {"no-such-job"}, {})
    placed = inst.placed[0]
    with pytest.raises(InstanceError, match="placed already"):
        instance_at(inst, inst.now, keep, {placed.id: Running(0, inst.now, {0: (0,)})})
