"""Values near the instance limits: every solver's plan still checks, and cpsat's objective
(value units times the end-time tie-break weight) stays inside CP-SAT's 64-bit integers."""

from __future__ import annotations

import pytest

import horizon_opt as ho
from horizon_opt.model.load import parse_spec
from horizon_opt.solvers.cpsat import objective

# Twenty nodes of 1,024 GPUs, weekly slots. Two whole-node gangs of 12 and 10 nodes for 6,000
# of 10,000 slots: only one fits, while the LP runs more, so cpsat builds its full model. Each is
# worth about 1e16 (1e18 value units at the scale that makes them integers), and the tie-break
# weight is 20,001: CP-SAT would reject the model as invalid.
BIG = {
    "name": "big",
    "horizon": {"slots": 10000, "slot_minutes": 10080},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 20, "gpus_per_node": 1024}],
    "jobs": [
        {"id": "x", "priority": 999999.12, "gpus": 12288, "duration": 6000},
        {"id": "y", "priority": 999999.13, "gpus": 10240, "duration": 6000},
    ],
}


def test_the_scale_keeps_the_objective_in_range() -> None:
    inst = ho.compile_instance(parse_spec(BIG))
    scale = objective.value_scale(inst)
    weight = 1 + objective.END_WEIGHT_STEPS * len(inst.jobs) * inst.slots
    assert (
        sum(objective.value_units(j.value, scale) for j in inst.jobs) * weight
        <= objective.MAX_OBJECTIVE
    )
    assert scale < 1


@pytest.mark.parametrize("solver", list(ho.SOLVERS))
def test_huge_values_give_valid_plans(solver: str) -> None:
    inst = ho.compile_instance(parse_spec(BIG))
    plan = ho.solve(inst, solver, time_limit=3.0, workers=1, seed=0)
    assert ho.check(inst, plan) == []
    assert plan.objective == pytest.approx(ho.evaluate(inst, plan).pwo)
    if plan.bound is not None:
        assert plan.bound >= plan.objective
