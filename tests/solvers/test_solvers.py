"""Solver-agnostic tests: every solver on tiny instances whose optimum is known by hand.

Every plan goes through the independent checker, and the reported objective must equal the
pwo recomputed from the plan file. The solvers are the registry's, so a new solver is tested
here as soon as it has an entry.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import horizon_opt as ho
from horizon_opt.model.load import parse_spec

SOLVERS = list(ho.SOLVERS)
FAST = {"time_limit": 5.0, "workers": 1, "seed": 0}


def build(data: dict[str, Any]) -> ho.Instance:
    return ho.compile_instance(parse_spec(data))


def solve_checked(instance: ho.Instance, solver: str) -> ho.Plan:
    plan = ho.solve(instance, solver, **FAST)
    assert ho.check(instance, plan) == []
    assert plan.objective == pytest.approx(ho.evaluate(instance, plan).pwo)
    if ho.SOLVERS[solver].reports_bound:
        assert plan.bound is not None and plan.gap is not None
        assert plan.bound >= plan.objective - 1e-9
    else:
        assert (plan.bound, plan.gap, plan.status) == (None, None, "heuristic")
    return plan


# Inference needs both nodes at its peak (slots 0-1 and 4-5) and nothing in the trough (2-3).
# FIFO reserves the peak all day, so the 8-GPU job never fits: pwo 0. Elastic reservation lets
# it run in the trough: value = priority 1 * 8 GPUs * 2 slots * 1 h = 16, the optimum.
TROUGH = {
    "name": "trough",
    "horizon": {"slots": 6},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 2, "gpus_per_node": 4}],
    "services": [
        {"name": "chat", "pool": "p", "gpus_per_replica": 4, "demand": [2, 2, 0, 0, 2, 2]}
    ],
    "jobs": [{"id": "a", "priority": 1, "gpus": 8, "duration": 2}],
}

# One 8-GPU node. A long low-priority job L (released first) blocks a high-priority job H with
# a deadline. FIFO runs L at 0-6, H at 6-10: late, so pwo = 1 * 8 * 6 = 48. Running H at 1-5 is
# worth 10 * 8 * 4 = 320; L then cannot end within the 10 slots. Optimum 320.
PRIORITY = {
    "name": "priority",
    "horizon": {"slots": 10},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 8}],
    "jobs": [
        {"id": "L", "priority": 1, "gpus": 8, "duration": 6, "release": 0},
        {"id": "H", "priority": 10, "gpus": 8, "duration": 4, "release": 1, "deadline": 6},
    ],
}

# Two 4-GPU nodes, 4 slots. In release order FIFO puts a (2 GPUs, 0-2) and b (2 GPUs, 0-4) on
# node 0 and c (2 GPUs, 0-4) on node 1, so the whole-node gang g never finds a free node:
# pwo = a 4 + b 8 + c 8 = 20. Keeping one node for g (10 * 4 * 2 = 80) runs everything: 100.
FRAGMENT = {
    "name": "fragment",
    "horizon": {"slots": 4},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 2, "gpus_per_node": 4}],
    "jobs": [
        {"id": "a", "priority": 1, "gpus": 2, "duration": 2},
        {"id": "b", "priority": 1, "gpus": 2, "duration": 4},
        {"id": "c", "priority": 1, "gpus": 2, "duration": 4},
        {"id": "g", "priority": 10, "gpus": 4, "duration": 2, "release": 0, "deadline": 4},
    ],
}

# Two pools, a chain train -> quant -> eval, and a deadline that only the fast pool meets.
# h = 0.5 h per slot. train: 8 GPUs, 4 slots on h100 (work 8*4*0.5 = 16 GPU-h, value 5*16 = 80);
# quant: 1 GPU 2 slots (1 GPU-h, value 3); eval: 1 GPU 1 slot after quant (0.5 GPU-h, value 1 * 0.5 = 0.5).
# All fit on h100 (train 0-4, quant 4-6, eval 6-7): optimum 83.5.
CHAIN = {
    "name": "chain",
    "horizon": {"slots": 8, "slot_minutes": 30},
    "pools": [
        {"name": "h100", "gpu_type": "H100", "nodes": 1, "gpus_per_node": 8},
        {"name": "a100", "gpu_type": "A100", "nodes": 1, "gpus_per_node": 8},
    ],
    "jobs": [
        {
            "id": "train",
            "kind": "training",
            "priority": 5,
            "gpus": 8,
            "duration": {"a100": 8, "h100": 4},
        },
        {
            "id": "quant",
            "kind": "quantization",
            "priority": 3,
            "gpus": 1,
            "duration": 2,
            "after": ["train"],
            "deadline": 7,
        },
        {
            "id": "eval",
            "kind": "evaluation",
            "priority": 1,
            "gpus": 1,
            "duration": 1,
            "after": ["quant"],
        },
    ],
}

# Two 4-GPU nodes, 2 one-GPU replicas of chat all day. The elastic layout packs both replicas on
# node 0, leaving 2 + 4 GPUs: only one 3-GPU job (value 1 * 3 * 4 = 12) fits. One replica per
# node leaves 3 + 3: both fit, 24. Only a model that decides the layout finds (and proves) it.
LAYOUT = {
    "name": "layout",
    "horizon": {"slots": 4},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 2, "gpus_per_node": 4}],
    "services": [{"name": "chat", "pool": "p", "gpus_per_replica": 1, "demand": [2, 2, 2, 2]}],
    "jobs": [
        {"id": "a", "priority": 1, "gpus": 3, "duration": 4},
        {"id": "b", "priority": 1, "gpus": 3, "duration": 4},
    ],
}

# Three 4-GPU nodes, 1-GPU replicas: 5, 2, 0, 5 of them at slots 0-3, so 7, 10, 12, 7 GPUs free.
# The pool-level optimum runs all five jobs (3 + 8 + 2 + 8 + 9 = 30): "gang" (a whole node) over
# 0-1, "pair" over 0-3, "three" over 1-3, "short" at 2, "one" over 2-3. It packs on nodes only if
# the replicas move: stacked on the lowest nodes (node 0 full, one on node 1, at slots 0 and 3),
# no plan runs all five, as "gang" needs node 2, "pair" then node 1, and "three" finds no node
# with 3 GPUs over three slots.
REPLICAS_IN_THE_WAY = {
    "name": "replicas-in-the-way",
    "horizon": {"slots": 4},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 3, "gpus_per_node": 4}],
    "services": [{"name": "chat", "pool": "a", "gpus_per_replica": 1, "demand": [5, 2, 0, 5]}],
    "jobs": [
        {"id": "short", "priority": 1, "gpus": 3, "duration": 1, "release": 2, "deadline": 4},
        {"id": "gang", "priority": 1, "gpus": 4, "duration": 2, "deadline": 4},
        {"id": "one", "priority": 1, "gpus": 1, "duration": 2, "release": 2, "deadline": 4},
        {"id": "pair", "priority": 1, "gpus": 2, "duration": 4, "deadline": 4},
        {"id": "three", "priority": 1, "gpus": 3, "duration": 3, "deadline": 4},
    ],
}

# An idle 16-GPU cluster, a 48-slot horizon and one 16-GPU job of 72 slots. With an open end the
# horizon extends to slot 72 and every solver starts it at 0: 5 * 16 * 72 = 5,760. (Without, no
# plan can start it: test_open_end.py.)
LONG = {
    "name": "long",
    "horizon": {"slots": 48, "open_end": True},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 2, "gpus_per_node": 8}],
    "jobs": [{"id": "pretrain", "priority": 5, "gpus": 16, "duration": "72h"}],
}

# One 4-GPU node, 2-GPU replicas: demand 0, 0, 0, 1 in a 4-slot horizon with an open end. Past
# slot 4 the forecast repeats its last value (the horizon is shorter than a day), so one replica
# holds 2 GPUs from slot 3 on, for good: "wide" (4 GPUs for 6 slots) never fits; "half" (2 GPUs
# for 6 slots) runs over 0-6 beside the replica: 1 * 2 * 6 = 12, the optimum.
OPEN_TAIL = {
    "name": "open-tail",
    "horizon": {"slots": 4, "open_end": True},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 4}],
    "services": [{"name": "chat", "pool": "p", "gpus_per_replica": 2, "demand": [0, 0, 0, 1]}],
    "jobs": [
        {"id": "wide", "priority": 1, "gpus": 4, "duration": 6},
        {"id": "half", "priority": 1, "gpus": 2, "duration": 6},
    ],
}

OPTIMUM = {
    "trough": 16.0,
    "priority": 320.0,
    "fragment": 100.0,
    "chain": 83.5,
    "long": 5760.0,
    "open-tail": 12.0,
}
FIFO = {"trough": 0.0, "priority": 48.0, "fragment": 20.0}
INSTANCES = {
    d["name"]: d
    for d in (TROUGH, PRIORITY, FRAGMENT, CHAIN, LAYOUT, REPLICAS_IN_THE_WAY, LONG, OPEN_TAIL)
}


@pytest.mark.parametrize("name", INSTANCES)
@pytest.mark.parametrize("solver", SOLVERS)
def test_every_plan_is_valid(name: str, solver: str) -> None:
    solve_checked(build(INSTANCES[name]), solver)


@pytest.mark.parametrize("name", FIFO)
def test_fifo_is_provably_bad_here(name: str) -> None:
    assert solve_checked(build(INSTANCES[name]), "fifo").objective == FIFO[name]


@pytest.mark.parametrize("name", OPTIMUM)
def test_cpsat_proves_the_hand_optimum(name: str) -> None:
    plan = solve_checked(build(INSTANCES[name]), "cpsat")
    assert plan.objective == pytest.approx(OPTIMUM[name])
    assert plan.status == "optimal"
    assert plan.bound == pytest.approx(OPTIMUM[name])
    assert plan.gap == pytest.approx(0.0)


def test_cpsat_decides_the_inference_layout() -> None:
    inst = build(LAYOUT)
    assert solve_checked(inst, "greedy").objective == pytest.approx(12.0)
    plan = solve_checked(inst, "cpsat")
    assert plan.objective == pytest.approx(24.0)
    assert plan.status == "optimal"
    assert {b.node for b in plan.inference} == {"p-0", "p-1"}


@pytest.mark.parametrize("name", ["trough", "priority"])
def test_greedy_finds_what_fifo_misses(name: str) -> None:
    assert solve_checked(build(INSTANCES[name]), "greedy").objective == OPTIMUM[name]


def test_cpsat_repeatable_with_one_worker() -> None:
    inst = build(FRAGMENT)
    a = ho.solve(inst, "cpsat", **FAST)
    b = ho.solve(inst, "cpsat", **FAST)
    assert a.assignments == b.assignments


def test_unknown_solver() -> None:
    with pytest.raises(ValueError, match="unknown solver"):
        ho.solve(build(TROUGH), "magic")


def placeable_pools(pools: list[dict[str, Any]], gang: int) -> list[dict[str, Any]]:
    """The pools (spec dicts) that can place a gang: on one node, or on whole nodes."""
    return [
        p
        for p in pools
        if gang <= p["gpus_per_node"]
        or (gang % p["gpus_per_node"] == 0 and gang // p["gpus_per_node"] <= p["nodes"])
    ]


@st.composite
def small_instances(draw: st.DrawFn) -> dict[str, Any]:
    slots = draw(st.integers(3, 8))
    gpn = draw(st.sampled_from([2, 4, 8]))
    nodes = draw(st.integers(1, 3))
    pools = [{"name": "p", "gpu_type": "x", "nodes": nodes, "gpus_per_node": gpn}]
    if draw(st.booleans()):
        pools.append(
            {"name": "q", "gpu_type": "y", "nodes": draw(st.integers(1, 2)), "gpus_per_node": 4}
        )
    services = []
    if draw(st.booleans()):
        demand = draw(st.lists(st.integers(0, nodes), min_size=slots, max_size=slots))
        services.append({"name": "s", "pool": "p", "gpus_per_replica": gpn, "demand": demand})
    jobs = []
    for i in range(draw(st.integers(1, 6))):
        gang = draw(st.sampled_from([1, 2, 4, gpn, 2 * gpn]))
        job: dict[str, Any] = {
            "id": f"j{i}",
            "priority": draw(st.integers(1, 10)),
            "gpus": gang,
            "duration": {p["name"]: draw(st.integers(1, slots)) for p in pools},
            "release": draw(st.integers(0, slots - 1)),
        }
        fits = placeable_pools(pools, gang)
        if not fits:
            continue
        job["duration"] = {p["name"]: job["duration"][p["name"]] for p in fits}
        if draw(st.booleans()):
            job["deadline"] = draw(st.integers(job["release"], slots))
        if draw(st.booleans()):  # a blackout: starts with holes
            a = draw(st.integers(0, slots - 1))
            job["blackout"] = [{"start": a, "end": draw(st.integers(a + 1, slots))}]
        if jobs and draw(st.booleans()):
            job["after"] = [draw(st.sampled_from(jobs))["id"]]
        jobs.append(job)
    data = {
        "name": "random",
        "horizon": {"slots": slots},
        "pools": pools,
        "services": services,
        "jobs": jobs,
    }
    if draw(st.booleans()):  # a team with a hard limit on p, and one without; quotas or not
        limit = draw(st.integers(1, nodes * gpn))
        quota_a, quota_b = draw(st.integers(0, limit)), draw(st.integers(0, nodes * gpn))
        data["teams"] = [
            {"name": "a", "limit": {"p": limit}, "quota": {"p": quota_a}},
            {"name": "b", "quota": {"p": quota_b}},
        ]
        for job in jobs:
            team = draw(st.sampled_from([None, "a", "b"]))
            if team is not None:
                job["team"] = team
    return data


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances())
def test_property_random_instances(data: dict[str, Any]) -> None:
    inst = build(data)
    plans = {s: solve_checked(inst, s) for s in SOLVERS}
    best = max(plans["fifo"].objective, plans["greedy"].objective)
    assert plans["cpsat"].objective >= best - 1e-9
    assert (
        plans["cpsat"].bound is not None and plans["cpsat"].bound >= plans["cpsat"].objective - 1e-9
    )
