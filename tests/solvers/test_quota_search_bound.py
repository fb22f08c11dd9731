"""cpsat with quotas searches within them (`quotas.py`), but its bound is of the instance as
written: with the teams' limits in the relaxations, a bound of the searched instance would be
below plans that borrow."""

from __future__ import annotations

from typing import Any

import pytest

import horizon_opt as ho
from horizon_opt.model.load import parse_spec

# One 4-GPU node, one 1-hour slot. Red is entitled to 2 GPUs (quota) and has no limit; r1 (red,
# 4 GPUs, 1 slot, priority 1) is worth 1 * 4 * 1 = 4. Within the quota r1 cannot run (a bound of
# that instance is 0), but it may borrow the idle GPUs: the optimum is 4, and so is the bound.
BORROWS: dict[str, Any] = {
    "name": "borrows",
    "horizon": {"slots": 1},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 4}],
    "teams": [{"name": "red", "quota": {"p": 2}}, {"name": "blue", "quota": {"p": 2}}],
    "jobs": [{"id": "r1", "priority": 1, "gpus": 4, "duration": 1, "team": "red"}],
}


@pytest.mark.parametrize("exact", [True, False])
def test_a_plan_that_borrows_is_proven_optimal_by_the_bound_of_the_instance(exact: bool) -> None:
    """With and without the exact node model (whose bound holds the quotas: replaced by the
    LP's), so that the relaxations' own bounds are the ones kept too."""
    inst = ho.compile_instance(parse_spec(BORROWS))
    params = ho.SearchParams(full_model_max_intervals=4_000 if exact else 0)
    plan = ho.solve(inst, "cpsat", time_limit=3.0, workers=1, seed=0, params=params)
    assert ho.check(inst, plan) == []
    assert (plan.objective, plan.bound, plan.status) == (4.0, 4.0, "optimal")
