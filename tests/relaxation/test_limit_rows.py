"""Team limits (validity rule 8) in every bound: the LP, the MIP and the pool-level model, each
on a tiny instance with its hand arithmetic; and the bounds stay above every solver's valid plan
on the teams instances."""

from __future__ import annotations

import copy
import math
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import horizon_opt as ho
from horizon_opt.generate import generate
from horizon_opt.model.load import parse_spec
from horizon_opt.relaxation import build_columns, proven_bound
from horizon_opt.relaxation.limits import limit_caps
from horizon_opt.relaxation.mip import mip_dual_bound
from horizon_opt.relaxation.pool_model import PoolLimits, pool_bound
from horizon_opt.solvers.residual import residual_instance

# One pool of two 8-GPU nodes, one 1-hour slot. Red may hold 8 GPUs of it; r1 and r2 (red, 8
# GPUs, 1 slot, priority 1) are worth 1 * 8 * 1 = 8 each. Both fit on the nodes, but red's
# limit lets only one run: every bound is 8; without the limit, 16.
PAIR: dict[str, Any] = {
    "name": "pair",
    "horizon": {"slots": 1},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 2, "gpus_per_node": 8}],
    "teams": [{"name": "red", "quota": {"p": 8}, "limit": {"p": 8}}],
    "jobs": [
        {"id": "r1", "priority": 1, "gpus": 8, "duration": 1, "team": "red"},
        {"id": "r2", "priority": 1, "gpus": 8, "duration": 1, "team": "red"},
    ],
}

# The same pool over 2 slots, `now` 1. r0 (red, placed on p-0 over slots 0-1, priority 1: 16)
# holds red's 8 GPUs at slot 1, so r1 (8 GPUs, 1 slot: 8) cannot run beside it, although the
# other node is free: the bound is r0's 16 alone; without the limit, 16 + 8 = 24.
PLACED: dict[str, Any] = {
    "name": "placed",
    "horizon": {"slots": 2},
    "now": 1,
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 2, "gpus_per_node": 8}],
    "teams": [{"name": "red", "quota": {"p": 8}, "limit": {"p": 8}}],
    "jobs": [
        {
            "id": "r0",
            "priority": 1,
            "gpus": 8,
            "duration": 2,
            "team": "red",
            "placed": {"pool": "p", "start": 0, "gpus": {"p-0": list(range(8))}},
        },
        {"id": "r1", "priority": 1, "gpus": 8, "duration": 1, "release": 1, "team": "red"},
    ],
}


def build(data: dict[str, Any]) -> ho.Instance:
    return ho.compile_instance(parse_spec(data))


def unlimited(data: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(data)
    for team in out["teams"]:
        team.pop("limit", None)
    return out


def bounds(inst: ho.Instance) -> tuple[float, float, float]:
    """The LP's, the MIP's and the pool-level model's bounds."""
    lp = proven_bound(inst, time_limit=5.0).value
    mip = mip_dual_bound(build_columns(inst), math.inf, 5.0)
    pool = pool_bound(inst, PoolLimits(seconds=5.0))
    assert mip is not None and pool.value is not None and pool.optimal
    return lp, mip, pool.value


def test_a_limit_lets_every_bound_count_one_of_two_jobs() -> None:
    assert bounds(build(PAIR)) == pytest.approx((8.0, 8.0, 8.0), rel=1e-6)
    assert bounds(build(unlimited(PAIR))) == pytest.approx((16.0, 16.0, 16.0), rel=1e-6)


def test_a_placed_job_counts_towards_its_teams_limit() -> None:
    assert bounds(build(PLACED)) == pytest.approx((16.0, 16.0, 16.0), rel=1e-6)
    assert bounds(build(unlimited(PLACED))) == pytest.approx((24.0, 24.0, 24.0), rel=1e-6)


def test_the_residual_instance_gives_its_free_jobs_the_room_placed_ones_leave() -> None:
    """Left out of the residual instance, r0 still holds red's 8 GPUs at slot 1 (`team_held`):
    the room there is 8 - 8 = 0, and r1 earns nothing."""
    residual = residual_instance(build(PLACED))
    assert limit_caps(residual)[0, 0].tolist() == [0.0, 0.0]
    assert bounds(residual) == pytest.approx((0.0, 0.0, 0.0), abs=1e-6)


def test_a_limit_lowered_under_placed_work_caps_at_what_it_holds() -> None:
    """Red's limit 4 (quota 0) under r0's 8 GPUs: the checker allows max(4, 8) = 8 at slot
    1, so the rows do too (r0 alone fills it: r1 still earns nothing)."""
    data = copy.deepcopy(PLACED)
    data["teams"][0].update(quota={}, limit={"p": 4})
    inst = build(data)
    assert limit_caps(inst)[0, 0].tolist() == [8.0, 8.0]
    assert bounds(inst) == pytest.approx((16.0, 16.0, 16.0), rel=1e-6)


TEAMS = ["teams.yaml", "enterprise-teams", "trace-teams"]


@cache
def teams_bounds(name: str) -> tuple[ho.Instance, float, float]:
    """The instance (instances/teams.yaml, or a small one of a generated teams family: no file
    under instances/bench/ has teams), its LP's and its pool-level model's bounds."""
    if name.endswith(".yaml"):
        inst = ho.load_instance(Path(__file__).parents[2] / "instances" / name)
    else:
        inst = ho.compile_instance(parse_spec(generate(name, "small", 0)))
    pool = pool_bound(inst, PoolLimits(seconds=10.0)).value
    assert pool is not None
    return inst, proven_bound(inst, time_limit=5.0).value, pool


@pytest.mark.parametrize("name", TEAMS)
@pytest.mark.parametrize("solver", list(ho.SOLVERS))
def test_the_teams_bounds_hold_for_every_solvers_plan(name: str, solver: str) -> None:
    inst, lp, pool = teams_bounds(name)
    plan = ho.solve(inst, solver, time_limit=2.0, workers=1, seed=0)
    assert ho.check(inst, plan) == []
    assert plan.objective <= min(lp, pool) + 1e-6
    if plan.bound is not None:
        assert plan.objective <= plan.bound + 1e-6
