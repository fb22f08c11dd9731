"""The cpsat path that medium and larger instances take: LP first, LP-guided start, LNS.

Tiny instances normally go through the full model; here it is switched off, so the LP, the
guided list scheduling, the LNS and the background bound run on instances small enough to
solve in a few seconds.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from test_solvers import FAST, INSTANCES, OPTIMUM, build

import horizon_opt as ho
from horizon_opt.generate import generate
from horizon_opt.inference import Layout, elastic_layout
from horizon_opt.io import parse_spec
from horizon_opt.solvers.assemble import Placement, build_plan
from horizon_opt.solvers.cpsat import solver as cpsat_solver
from horizon_opt.solvers.cpsat.guide import (
    ListRule,
    LpGuide,
    guided_placements,
    lp_guide,
    squeaky_wheel,
)
from horizon_opt.solvers.cpsat.mipbound import solve_lp


@pytest.fixture
def no_full_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpsat_solver, "FULL_MODEL_MAX_INTERVALS", 0)


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
    guide = lp_guide(solve_lp(inst, deadline=1e18))
    assert guide is not None
    layout = elastic_layout(inst)
    rule, placements = guided_placements(inst, layout, guide)
    return guide, layout, rule, placements


def as_plan(inst: ho.Instance, layout: Layout, placements: list[Placement]) -> ho.Plan:
    placed = {p.job for p in placements}
    reasons = {j.index: "not placed" for j in inst.jobs if j.index not in placed}
    return build_plan(inst, "guided", placements, layout, reasons, started=time.perf_counter())


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
        inst, layout, guide, rule, first, np.random.default_rng(0), stop
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
        inst, layout, guide, rule, first, np.random.default_rng(0), lambda: False
    )
    assert done == 0
    assert value == pytest.approx(sum(p.earned(inst) for p in first))


@pytest.mark.usefixtures("no_full_model")
@pytest.mark.parametrize("name", INSTANCES)
def test_lns_path_finds_the_hand_optimum(name: str) -> None:
    inst = build(INSTANCES[name])
    plan = ho.solve(inst, "cpsat", **FAST)
    assert_sound(inst, plan)
    if name in OPTIMUM:
        assert plan.objective == pytest.approx(OPTIMUM[name])


@pytest.mark.usefixtures("no_full_model")
@pytest.mark.parametrize("workers", [1, 2])
def test_lns_path_on_a_generated_instance(workers: int) -> None:
    inst = small_generated()
    plan = ho.solve(inst, "cpsat", time_limit=3.0, workers=workers, seed=0)
    assert_sound(inst, plan)


@pytest.mark.usefixtures("no_full_model")
def test_lns_path_repeatable_with_one_worker() -> None:
    inst = small_generated()
    a = ho.solve(inst, "cpsat", time_limit=3.0, workers=1, seed=3)
    b = ho.solve(inst, "cpsat", time_limit=3.0, workers=1, seed=3)
    assert a.assignments == b.assignments
