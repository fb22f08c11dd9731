"""The proven bound (`horizon_opt.relaxation.proven_bound`, the time-indexed relaxation).

A bound must hold for EVERY valid plan, so: on tiny instances with a hand-computed optimum it is
at least that optimum (and every solver's pwo), and on seeded random instances it is at least
what cpsat finds. It must also never be weaker than the energy LP (`energy_lp.py`), a simpler
relaxation built independently.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from energy_lp import energy_bound

# The hand-solved instances of test_solvers.py (the reasoning is written there).
from test_solvers import CHAIN, FRAGMENT, PRIORITY, TROUGH, build, placeable_pools

import horizon_opt as ho
from horizon_opt.errors import InstanceError
from horizon_opt.relaxation import build_columns, proven_bound

SOLVERS = ["fifo", "fifo-elastic", "greedy", "cpsat"]
FAST = {"time_limit": 2.0, "workers": 1, "seed": 0}


def above(bound: float, value: float) -> bool:
    return bound >= value - 1e-9 * max(1.0, abs(value))


# One node. `prep` can never meet its deadline (4 slots, deadline 3) but may run late, and
# `train` (no deadline) runs after it: the optimum is train's value alone, 8 * 2 = 16. A bound
# that dropped successors of predecessors that cannot be on time would say 0.
LATE_PREDECESSOR = {
    "name": "late-predecessor",
    "horizon": {"slots": 8},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 8}],
    "jobs": [
        {"id": "prep", "priority": 5, "gpus": 8, "duration": 4, "deadline": 3},
        {"id": "train", "priority": 1, "gpus": 8, "duration": 2, "after": ["prep"]},
    ],
}
# Two 4-GPU nodes; one 2-GPU replica leaves 6 GPUs, but only one whole node, and each gang
# needs one: the optimum runs one gang, 1 * 4 * 1 = 4. GPU rows alone would allow 1.5 gangs.
WHOLE_NODES = {
    "name": "whole-nodes",
    "horizon": {"slots": 1},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 2, "gpus_per_node": 4}],
    "services": [{"name": "s", "pool": "p", "gpus_per_replica": 2, "demand": [1]}],
    "jobs": [
        {"id": "a", "priority": 1, "gpus": 4, "duration": 1},
        {"id": "b", "priority": 1, "gpus": 4, "duration": 1},
    ],
}
# One node, 6 slots. `block` (value 10 * 8 * 3 = 240) is on time only at 0-3. `check` (40) must
# start after `prep` (16) ends and end by 5, which with `block` at 0-3 leaves prep 3-5: too late.
# So block + prep = 256 (check late), or prep, check and a late block = 56. Counting runs alone
# (check only needs prep to run somewhere) would allow block, check at 3-4, prep at 4-6: 296.
ORDER = {
    "name": "order",
    "horizon": {"slots": 6},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 8}],
    "jobs": [
        {"id": "block", "priority": 10, "gpus": 8, "duration": 3, "deadline": 3},
        {"id": "prep", "priority": 1, "gpus": 8, "duration": 2},
        {"id": "check", "priority": 5, "gpus": 8, "duration": 1, "after": ["prep"], "deadline": 5},
    ],
}
OPTIMUM = {
    "trough": 16.0,
    "priority": 320.0,
    "fragment": 100.0,
    "chain": 83.5,
    "late-predecessor": 16.0,
    "order": 256.0,
}
HAND = {d["name"]: d for d in (TROUGH, PRIORITY, FRAGMENT, CHAIN, LATE_PREDECESSOR, ORDER)}


@pytest.mark.parametrize("name", HAND)
def test_bound_is_the_hand_optimum(name: str) -> None:
    """On these the relaxation is exact: the bound equals the optimum (and is above it)."""
    bound = proven_bound(build(HAND[name]), time_limit=5.0)
    assert above(bound.value, OPTIMUM[name])
    assert bound.value == pytest.approx(OPTIMUM[name], rel=1e-6)


@pytest.mark.parametrize("name", HAND)
def test_bound_is_above_every_solver(name: str) -> None:
    inst = build(HAND[name])
    bound = proven_bound(inst, time_limit=5.0).value
    for solver in SOLVERS:
        plan = ho.solve(inst, solver, **FAST)
        assert ho.check(inst, plan) == []
        assert above(bound, plan.objective), solver


def test_gangs_need_whole_nodes_beside_inference() -> None:
    inst = build(WHOLE_NODES)
    assert proven_bound(inst, time_limit=5.0).value == pytest.approx(4.0, rel=1e-6)
    assert energy_bound(inst) == pytest.approx(6.0)


def test_stopped_at_once_is_still_a_bound() -> None:
    inst = build(CHAIN)
    bound = proven_bound(inst, time_limit=0.0)
    assert above(bound.value, OPTIMUM["chain"])
    assert bound.method.startswith("time-indexed")


def test_no_jobs() -> None:
    data = {
        "name": "idle",
        "horizon": {"slots": 4},
        "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 8}],
    }
    assert proven_bound(build(data), time_limit=1.0).value == pytest.approx(0.0, abs=1e-6)


def test_columns_only_hold_runs_that_fit_alone() -> None:
    cols = build_columns(build(TROUGH))
    # the 8-GPU gang takes both nodes: only in the trough, starting at slot 2
    assert cols.start.tolist() == [2]
    assert cols.nodes.tolist() == [2.0]


def random_instance(rng: np.random.Generator) -> dict[str, Any]:
    slots = int(rng.integers(3, 9))
    gpn = int(rng.choice([2, 4, 8]))
    nodes = int(rng.integers(1, 4))
    pools: list[dict[str, Any]] = [
        {"name": "p", "gpu_type": "x", "nodes": nodes, "gpus_per_node": gpn}
    ]
    if rng.random() < 0.5:
        pools.append(
            {"name": "q", "gpu_type": "y", "nodes": int(rng.integers(1, 3)), "gpus_per_node": 4}
        )
    data: dict[str, Any] = {"name": "random", "horizon": {"slots": slots}, "pools": pools}
    if rng.random() < 0.3:
        data["outages"] = [{"node": "p-0", "start": int(rng.integers(0, slots)), "end": slots}]
    if rng.random() < 0.6:
        size = int(rng.choice([r for r in (1, 2, gpn) if gpn % r == 0]))
        top = nodes * gpn // size
        demand = [int(x) for x in rng.integers(0, top + 1, size=slots)]
        data["services"] = [{"name": "s", "pool": "p", "gpus_per_replica": size, "demand": demand}]
    jobs: list[dict[str, Any]] = []
    for i in range(int(rng.integers(1, 7))):
        gang = int(rng.choice([1, 2, 3, 4, gpn, 2 * gpn]))
        fits = placeable_pools(pools, gang)
        if not fits:
            continue
        release = int(rng.integers(0, slots))
        job: dict[str, Any] = {
            "id": f"j{i}",
            "priority": int(rng.integers(1, 11)),
            "gpus": gang,
            "duration": {p["name"]: int(rng.integers(1, slots + 1)) for p in fits},
            "release": release,
        }
        if rng.random() < 0.5:
            job["deadline"] = int(rng.integers(release, slots + 1))
        if jobs and rng.random() < 0.5:
            job["after"] = [jobs[int(rng.integers(0, len(jobs)))]["id"]]
        jobs.append(job)
    data["jobs"] = jobs
    return data


def busier_instance(rng: np.random.Generator) -> dict[str, Any]:
    """Two pools, inference on both, an outage, 5-25 jobs with deadlines and dependencies."""
    slots = int(rng.integers(6, 17))
    pools: list[dict[str, Any]] = [
        {"name": "p", "gpu_type": "x", "nodes": int(rng.integers(2, 5)), "gpus_per_node": 8},
        {"name": "q", "gpu_type": "y", "nodes": int(rng.integers(1, 4)), "gpus_per_node": 4},
    ]
    start = int(rng.integers(0, slots))
    data: dict[str, Any] = {
        "name": "busier",
        "horizon": {"slots": slots},
        "pools": pools,
        "outages": [{"node": "p-1", "start": start, "end": start + int(rng.integers(1, 6))}],
        "services": [
            {
                "name": f"s{k}",
                "pool": pool["name"],
                "gpus_per_replica": size,
                "headroom": 0.1,
                "demand": [
                    round(float(x), 1)
                    for x in rng.uniform(
                        0, 0.6 * pool["nodes"] * pool["gpus_per_node"] / size, slots
                    )
                ],
            }
            for k, pool in enumerate(pools)
            for size in [int(rng.choice([1, 2, 4]))]
        ],
    }
    jobs: list[dict[str, Any]] = []
    for i in range(int(rng.integers(5, 26))):
        gang = int(rng.choice([1, 2, 4, 8, 16]))
        fits = placeable_pools(pools, gang)
        release = int(rng.integers(0, slots))
        job: dict[str, Any] = {
            "id": f"j{i}",
            "priority": int(rng.integers(1, 11)),
            "gpus": gang,
            "duration": {p["name"]: int(rng.integers(1, max(2, slots // 2))) for p in fits},
            "release": release,
        }
        if rng.random() < 0.4:
            job["deadline"] = int(rng.integers(release, slots + 1))
        if jobs and rng.random() < 0.4:
            job["after"] = [jobs[int(rng.integers(0, len(jobs)))]["id"]]
        if fits:
            jobs.append(job)
    data["jobs"] = jobs
    return data


@pytest.mark.parametrize("make", [random_instance, busier_instance])
def test_bound_holds_on_random_instances(
    make: Callable[[np.random.Generator], dict[str, Any]],
) -> None:
    """Bound >= cpsat's pwo (and greedy's); never weaker than the energy LP when converged."""
    rng = np.random.default_rng(20261130)
    checked = 0
    while checked < 60:
        try:
            inst = build(make(rng))
        except InstanceError:
            continue  # e.g. an outage leaves inference short
        checked += 1
        bound = proven_bound(inst, time_limit=5.0)
        for solver in ("greedy", "cpsat"):
            plan = ho.solve(inst, solver, **FAST)
            assert above(bound.value, plan.objective), (solver, inst.spec)
        energy = energy_bound(inst)
        assert bound.value <= energy + 1e-5 * max(1.0, energy), inst.spec
