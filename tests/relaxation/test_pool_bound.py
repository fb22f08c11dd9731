"""The pool-level CP-SAT bound (`relaxation.pool_model`) and the bound's source in the plan.

The pool-level model must be a relaxation: on hand-computed instances it gives the hand value,
on the enumerated tiny instances of test_bound.py it is at least the optimum, and wherever cpsat
finds a plan it is at least that plan's pwo, even when CP-SAT is stopped before it closes. cpsat
reports the lowest of its bounds and names the source that proved it.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ortools.sat.python import cp_model
from test_bound import (
    HAND,
    LATE_PREDECESSOR,
    OPTIMUM,
    ORDER,
    WHOLE_NODES,
    above,
    busier_instance,
    random_instance,
)
from test_solvers import CHAIN, LAYOUT, TROUGH, build

import horizon_opt as ho
from horizon_opt.errors import BoundWarning, InstanceError
from horizon_opt.model.instance import Promise
from horizon_opt.relaxation import solve_lp
from horizon_opt.relaxation.pool_model import PoolLimits, fitting_starts, pool_bound
from horizon_opt.solvers.assemble import stamp
from horizon_opt.solvers.cpsat import bounding

LIMITS = PoolLimits(seconds=2.0, deterministic=1.0)
ONE: dict[str, Any] = {"time_limit": 2.0, "workers": 1, "seed": 0}

# One slot, one 8-GPU node, two 5-GPU jobs worth 5 each. Only one fits: the optimum is 5. The
# LP may run 1 + 3/5 of them (8 GPUs): 5 + 3 = 8. The pool-level model is integral: 5.
HALVES = {
    "name": "halves",
    "horizon": {"slots": 1},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 8}],
    "jobs": [
        {"id": "a", "priority": 1, "gpus": 5, "duration": 1},
        {"id": "b", "priority": 1, "gpus": 5, "duration": 1},
    ],
}
# One slot, two 4-GPU nodes: two 3-GPU jobs (value 3 each) and a 2-GPU job (value 2). At pool
# level 3 + 3 + 2 = 8 GPUs fit the pool's 8: the bound is 8. On nodes each 3-GPU job needs its
# own node and leaves 1 GPU there, so the 2-GPU job never fits: the optimum is 3 + 3 = 6.
SPLIT = {
    "name": "split",
    "horizon": {"slots": 1},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 2, "gpus_per_node": 4}],
    "jobs": [
        {"id": "a", "priority": 1, "gpus": 3, "duration": 1},
        {"id": "b", "priority": 1, "gpus": 3, "duration": 1},
        {"id": "c", "priority": 1, "gpus": 2, "duration": 1},
    ],
}
# One 8-GPU node, 4 slots, one 8-GPU job of 2 slots: value 1 * 8 * 2 = 16.
SOLO = {
    "name": "solo",
    "horizon": {"slots": 4},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 8}],
    "jobs": [{"id": "a", "priority": 1, "gpus": 8, "duration": 2, "release": 1}],
}


def bound_of(data: dict[str, Any]) -> float:
    found = pool_bound(build(data), LIMITS)
    assert found.optimal and found.value is not None
    return found.value


@pytest.mark.parametrize(
    ("data", "value"),
    [
        # inference takes both nodes at slots 0-1 and 4-5: the 8-GPU gang runs at 2-3, 8 * 2 = 16
        (TROUGH, 16.0),
        # 8 - 2 GPUs are free, but one replica leaves 2 - ceil(2 / 4) = 1 whole node: one gang, 4
        (WHOLE_NODES, 4.0),
        # prep (late, worth nothing) still runs so that train (8 * 2 = 16) may follow it
        (LATE_PREDECESSOR, 16.0),
        # block 0-3 (240) and prep 3-5 (16); check would need prep to end by 4: 256
        (ORDER, 256.0),
        # half-hour slots: train 5 * 8 * 4 * 0.5 = 80, quant 3 * 1, eval 1 * 0.5: 83.5
        (CHAIN, 83.5),
        (HALVES, 5.0),
        (SPLIT, 8.0),
        # two 3-GPU jobs of 4 slots beside 2 one-GPU replicas: 3 + 3 + 2 = 8 GPUs, 2 * 12 = 24
        (LAYOUT, 24.0),
    ],
    ids=lambda x: x["name"] if isinstance(x, dict) else None,
)
def test_hand_computed(data: dict[str, Any], value: float) -> None:
    assert bound_of(data) == pytest.approx(value)


def test_split_is_a_relaxation_not_the_optimum() -> None:
    """Node placement is dropped: the bound (8) is above the node-level optimum (6)."""
    inst = build(SPLIT)
    plan = ho.solve(inst, "cpsat", **ONE)
    assert plan.objective == pytest.approx(6.0)
    assert plan.status == "optimal"  # the exact node-level model proves it
    assert bound_of(SPLIT) == pytest.approx(8.0)


def test_starts_fit_alone() -> None:
    # the gang takes both nodes, which are free of inference at slots 2-3 only
    assert fitting_starts(build(TROUGH)) == {(0, 0): [2]}
    # release 1, 2 slots, horizon 4: starts 1 and 2
    assert fitting_starts(build(SOLO)) == {(0, 0): [1, 2]}


@pytest.mark.parametrize(("start", "value"), [(1, 16.0 + 5.0), (2, 16.0 + 5.0), (0, 16.0)])
def test_a_kept_promise_earns_its_bonus(start: int, value: float) -> None:
    """A re-plan's stability bonus counts when the promised start can be kept (1 and 2 can; 0
    is before the release): the bound then bounds pwo plus bonuses, as cpsat optimizes."""
    inst = build(SOLO)
    job = replace(inst.jobs[0], promise=Promise(pool=0, start=start, bonus=5.0))
    inst = replace(inst, jobs=(job,))
    found = pool_bound(inst, LIMITS)
    assert found.value == pytest.approx(value)


@pytest.mark.parametrize("name", HAND)
def test_at_least_the_enumerated_optimum(name: str) -> None:
    assert above(bound_of(HAND[name]), OPTIMUM[name])


def test_no_jobs_no_value() -> None:
    data = {
        "name": "idle",
        "horizon": {"slots": 2},
        "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 8}],
    }
    assert bound_of(data) == 0.0


@pytest.mark.parametrize("make", [random_instance, busier_instance])
def test_never_below_a_plan(make: Any) -> None:
    """Stopped at once or solved, the bound is at least what cpsat finds; where cpsat proves
    its plan optimal (the exact node-level model), at least the optimum."""
    rng = np.random.default_rng(20261201)
    checked = 0
    while checked < 25:
        try:
            inst = build(make(rng))
        except InstanceError:
            continue
        checked += 1
        plan = ho.solve(inst, "cpsat", **ONE)
        assert ho.check(inst, plan) == []
        found = pool_bound(inst, LIMITS)
        assert found.value is not None
        assert above(found.value, plan.objective), (inst.spec, found)
        stopped = pool_bound(inst, PoolLimits(seconds=2.0, deterministic=1e-4))
        assert stopped.value is None or above(stopped.value, plan.objective), (inst.spec, stopped)
        assert plan.bound is not None and above(plan.bound, plan.objective)


def test_a_solve_stopped_before_its_first_solution_claims_no_bound() -> None:
    """CP-SAT stopped before its first solution (here right after presolve, as a stop from the
    search or the clock can do) reports a bound of 0, which bounds nothing."""
    found = pool_bound(build(HALVES), LIMITS, on_solver=_stop_after_presolve)
    assert found.value is None
    assert not found.optimal and found.solution is None


def test_cpsat_keeps_a_valid_bound_when_the_pool_model_stops_early(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The smallest case of the crash "bound 0.0 is below the plan's pwo": the pool-level
    model stopped before its first solution, its 0 taken as cpsat's proven bound."""
    monkeypatch.setattr(bounding, "_stoppable", lambda search: _stop_after_presolve)
    inst = build(HALVES)
    plan = ho.solve(inst, "cpsat", **ONE)
    assert ho.check(inst, plan) == []
    assert plan.objective == 5.0
    assert plan.bound is not None and plan.bound >= 5.0
    assert plan.bound_source != "pool-cpsat"


def _stop_after_presolve(solver: cp_model.CpSolver) -> None:
    solver.parameters.stop_after_presolve = True


def test_a_bound_below_the_plan_is_dropped_and_the_plan_kept() -> None:
    """`stamp` guards every bound: one below the plan's pwo proves nothing, so the plan is
    written without a bound (and not as optimal), with a warning naming the source."""
    inst = build(HALVES)
    plan = ho.solve(inst, "cpsat", **ONE)
    with pytest.warns(BoundWarning, match=r"bound 4 \(pool-cpsat\) is below the plan's pwo 5"):
        again = stamp(
            inst, plan, started=0.0, bound=4.0, bound_source="pool-cpsat", build_seconds=None
        )
    assert (again.objective, again.bound, again.gap, again.status) == (5.0, None, None, "feasible")
    assert "bound_source" not in json.loads(again.to_json())
    assert ho.check(inst, again) == []


def test_source_pool_when_it_proves_the_minimum() -> None:
    """The LP says 8, the pool-level model 5: the plan (5) is proven optimal by the model."""
    inst = build(HALVES)
    assert solve_lp(inst, time.perf_counter() + 1.0).lp.bound == pytest.approx(8.0)
    plan = ho.solve(inst, "cpsat", **ONE)
    assert (plan.objective, plan.bound, plan.status) == (5.0, 5.0, "optimal")
    assert plan.bound_source == "pool-cpsat"


def test_source_lp_on_a_tie() -> None:
    """The LP is exact on the trough, and came first: it keeps the credit."""
    plan = ho.solve(build(TROUGH), "cpsat", **ONE)
    assert plan.bound == pytest.approx(16.0)
    assert plan.bound_source == "lp"


def test_source_node_model_when_only_it_proves() -> None:
    """Both relaxations say 8 on SPLIT; only the exact node-level model proves 6."""
    plan = ho.solve(build(SPLIT), "cpsat", **ONE)
    assert plan.bound == pytest.approx(6.0)
    assert plan.bound_source == "node-cpsat"


def test_source_with_two_workers() -> None:
    plan = ho.solve(build(HALVES), "cpsat", time_limit=2.0, workers=2, seed=0)
    assert ho.check(build(HALVES), plan) == []
    assert plan.bound == pytest.approx(5.0)
    assert plan.bound_source in {"pool-cpsat", "mip"}  # whichever finished first


def test_the_plan_file_names_the_source(tmp_path: Path) -> None:
    inst = build(HALVES)
    plan = ho.solve(inst, "cpsat", **ONE)
    plan.write(tmp_path / "cpsat.json")
    assert json.loads((tmp_path / "cpsat.json").read_text())["bound_source"] == "pool-cpsat"
    assert ho.Plan.read(tmp_path / "cpsat.json").bound_source == "pool-cpsat"
    greedy = ho.solve(inst, "greedy")
    greedy.write(tmp_path / "greedy.json")
    assert "bound_source" not in json.loads((tmp_path / "greedy.json").read_text())


def test_putting_placed_jobs_back_keeps_the_source() -> None:
    inst = build(HALVES)
    plan = ho.solve(inst, "cpsat", **ONE)
    again = stamp(inst, plan, started=0.0, bound=plan.bound, build_seconds=None)
    assert again.bound_source == "pool-cpsat"
    assert stamp(inst, plan, started=0.0, bound=None, build_seconds=None).bound_source is None


def test_repeatable_with_one_worker() -> None:
    inst = build(CHAIN)
    a, b = (ho.solve(inst, "cpsat", **ONE) for _ in range(2))
    assert (a.assignments, a.bound, a.bound_source) == (b.assignments, b.bound, b.bound_source)


def test_placed_jobs_keep_their_place() -> None:
    """With running jobs (the demo at noon), the bound holds their value where they are and is
    at least the pwo of a plan around them."""
    inst = ho.load_instance(Path(__file__).parents[2] / "instances" / "demo-state.yaml")
    assert inst.placed
    found = pool_bound(inst, PoolLimits(seconds=2.0, deterministic=0.5))
    plan = ho.solve(inst, "greedy")
    assert found.value is not None and above(found.value, plan.objective)
    starts = fitting_starts(inst)
    for job in inst.placed:
        assert job.placed is not None
        assert starts.get((job.index, job.placed.pool), [job.placed.start]) == [job.placed.start]
