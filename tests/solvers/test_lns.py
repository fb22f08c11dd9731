"""The cpsat path that medium and larger instances take: LP first, LP-guided start, LNS.

Tiny instances normally go through the full model; here it is switched off (a parameter), so
the LP, the guided list scheduling, the LNS and the background bound run on instances small
enough to solve in a few seconds.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from test_solvers import FAST, INSTANCES, OPTIMUM, build

import horizon_opt as ho
from horizon_opt.generate import generate
from horizon_opt.model.load import parse_spec
from horizon_opt.params import SearchParams
from horizon_opt.plans.inference import Layout, elastic_layout
from horizon_opt.relaxation import solve_lp
from horizon_opt.solvers.assemble import Placement, build_plan
from horizon_opt.solvers.cpsat.budget import Budget
from horizon_opt.solvers.cpsat.guide import (
    ListRule,
    LpGuide,
    gang_reservation,
    guided_placements,
    lp_guide,
    squeaky_wheel,
)
from horizon_opt.solvers.diagnosis import unscheduled_causes

PARAMS = SearchParams()
LNS_ONLY = SearchParams(full_model_max_intervals=0)  # no full model, however small


def small_generated() -> ho.Instance:
    return ho.compile_instance(parse_spec(generate("enterprise", "small", 0)))


def assert_sound(instance: ho.Instance, plan: ho.Plan) -> None:
    assert ho.check(instance, plan) == []
    assert plan.objective == pytest.approx(ho.evaluate(instance, plan).pwo)
    assert plan.bound is not None and plan.bound >= plan.objective - 1e-6
    greedy = ho.solve(instance, "greedy")
    assert plan.objective >= greedy.objective - 1e-9


def guided(inst: ho.Instance) -> tuple[LpGuide, Layout, ListRule, list[Placement]]:
    """The LP's guide, the elastic layout, and the best LP-guided list scheduling."""
    guide = lp_guide(solve_lp(inst, deadline=1e18), PARAMS.selected_share)
    assert guide is not None
    layout = elastic_layout(inst)
    rule, placements = guided_placements(inst, layout, guide, PARAMS.target_slack)
    return guide, layout, rule, placements


def as_plan(inst: ho.Instance, layout: Layout, placements: list[Placement]) -> ho.Plan:
    reasons = unscheduled_causes(inst, placements, layout)
    return build_plan(inst, "guided", placements, layout, reasons, started=time.perf_counter())


# Inference needs one of the two 4-GPU nodes at slots 1 and 4. Gang "early" must run over slots
# 1-2 and "late" over 2-4. Stacked on node 0, inference leaves only node 1 whole for either run,
# and they collide at slot 2: one of them fits (pwo 1 x 4 x 3 = 12). Packed around them (early
# on node 0, late on node 1, inference on the other node at slots 1 and 4), both fit:
# 4 x 2 + 4 x 3 = 20.
GANGS = {
    "name": "gangs",
    "horizon": {"slots": 5},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 2, "gpus_per_node": 4}],
    "services": [{"name": "chat", "pool": "a", "gpus_per_replica": 4, "demand": [0, 1, 0, 0, 1]}],
    "jobs": [
        {"id": "early", "priority": 1, "gpus": 4, "duration": 2, "release": 1, "deadline": 3},
        {"id": "late", "priority": 1, "gpus": 4, "duration": 3, "release": 2, "deadline": 5},
    ],
}


def test_layout_around_the_lp_gangs_fits_what_stacking_cannot() -> None:
    inst = build(GANGS)
    guide, stacked, rule, placements = guided(inst)
    assert as_plan(inst, stacked, placements).objective == pytest.approx(12)
    around = elastic_layout(inst, around=gang_reservation(inst, guide, rule.ranks))
    _, placements = guided_placements(inst, around, guide, PARAMS.target_slack)
    plan = as_plan(inst, around, placements)
    assert ho.check(inst, plan) == []
    assert plan.objective == pytest.approx(20)


@pytest.mark.parametrize("name", [*INSTANCES, "gangs", "generated"])
def test_layout_around_reserves_req_and_gives_valid_plans(name: str) -> None:
    if name == "generated":
        inst = small_generated()
    else:
        inst = build(GANGS if name == "gangs" else INSTANCES[name])
    guide, _, rule, _ = guided(inst)
    around = elastic_layout(inst, around=gang_reservation(inst, guide, rule.ranks))
    for s in inst.services:
        assert (around.replicas[s.index].sum(axis=0) == s.req).all()
    _, placements = guided_placements(inst, around, guide, PARAMS.target_slack)
    assert ho.check(inst, as_plan(inst, around, placements)) == []


@pytest.mark.parametrize("name", INSTANCES)
def test_lp_guided_plan_is_valid(name: str) -> None:
    inst = build(INSTANCES[name])
    _, layout, _, placements = guided(inst)
    plan = as_plan(inst, layout, placements)
    assert ho.check(inst, plan) == []
    if name in OPTIMUM:  # the LP's jobs are the optimum's here, and list scheduling packs them
        assert plan.objective == pytest.approx(OPTIMUM[name])


def test_squeaky_wheel_keeps_the_best_valid_pass() -> None:
    inst = small_generated()
    guide, layout, rule, first = guided(inst)
    passes = 0

    def stop() -> bool:
        nonlocal passes
        passes += 1
        return passes > 30

    value, placements, done = squeaky_wheel(
        inst, layout, guide, rule, first, np.random.default_rng(0), stop, PARAMS
    )
    assert 1 <= done <= 30  # (it stops early only when every LP job is in)
    assert value >= sum(p.earned(inst) for p in first)
    plan = as_plan(inst, layout, placements)
    assert ho.check(inst, plan) == []
    assert plan.objective == pytest.approx(value)


@pytest.mark.parametrize("name", OPTIMUM)
def test_squeaky_wheel_stops_when_every_lp_job_is_in(name: str) -> None:
    inst = build(INSTANCES[name])
    guide, layout, rule, first = guided(inst)
    value, _, done = squeaky_wheel(
        inst, layout, guide, rule, first, np.random.default_rng(0), lambda: False, PARAMS
    )
    assert done == 0
    assert value == pytest.approx(sum(p.earned(inst) for p in first))


@pytest.mark.parametrize("name", INSTANCES)
def test_lns_path_finds_the_hand_optimum(name: str) -> None:
    inst = build(INSTANCES[name])
    plan = ho.solve(inst, "cpsat", **FAST, params=LNS_ONLY)
    assert_sound(inst, plan)
    if name in OPTIMUM:
        assert plan.objective == pytest.approx(OPTIMUM[name])


@pytest.mark.parametrize("workers", [1, 2])
def test_lns_path_on_a_generated_instance(workers: int) -> None:
    inst = small_generated()
    plan = ho.solve(inst, "cpsat", time_limit=3.0, workers=workers, seed=0, params=LNS_ONLY)
    assert_sound(inst, plan)


def test_lns_path_repeatable_with_one_worker() -> None:
    inst = small_generated()
    a = ho.solve(inst, "cpsat", time_limit=3.0, workers=1, seed=3, params=LNS_ONLY)
    b = ho.solve(inst, "cpsat", time_limit=3.0, workers=1, seed=3, params=LNS_ONLY)
    assert a.assignments == b.assignments


def test_a_repeatable_budget_ignores_the_wall_clock() -> None:
    """Past its wall deadline, a one-worker budget stops unless it is repeatable (then only its
    deterministic units stop it); the LP then takes a count of steps, not a share of the clock."""
    params = SearchParams()
    plain = Budget(0.01, True, params)
    repeatable = Budget(0.01, True, params, repeatable=True)
    time.sleep(0.02)
    assert plain.out_of_time() and not repeatable.out_of_time()
    assert plain.lp_steps(params) is None
    assert repeatable.lp_steps(params) == 1  # ceil(40 steps/s x 0.3 x 0.01 s)
    repeatable.charge(repeatable.units)
    assert repeatable.out_of_time()


def test_the_lp_stops_after_its_steps() -> None:
    inst = small_generated()
    assert solve_lp(inst, float("inf"), max_steps=2).lp.iterations <= 2


def test_repeatable_needs_one_worker() -> None:
    with pytest.raises(ValueError, match="one worker"):
        ho.SolveOptions(workers=2, repeatable=True)


def test_a_search_whose_neighbourhoods_free_no_job_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    """With an open end the search does not stop at the proven pwo; when no window frees a job
    (a state whose every job is placed), it stops anyway: no neighbourhood charges the
    repeatable budget, so it would otherwise never run out."""
    from horizon_opt.solvers.cpsat.lns import Lns

    monkeypatch.setattr(Lns, "neighbourhood", lambda self, *args, **kwargs: None)
    inst = build(
        {**INSTANCES["trough"], "horizon": {**INSTANCES["trough"]["horizon"], "open_end": True}}
    )
    plan = ho.solve(inst, "cpsat", time_limit=3600.0, workers=1, seed=0, params=LNS_ONLY)
    assert ho.check(inst, plan) == []
