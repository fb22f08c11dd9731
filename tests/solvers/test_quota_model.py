"""The pool-level model with rule 9 written in (`cpsat.quota_model`): a gang larger than its
team's quota runs on what the other team leaves idle, never over a slot where it would keep
that team's job out of its quota."""

from __future__ import annotations

from typing import Any

import pytest
from ortools.sat.python import cp_model

import horizon_opt as ho
from horizon_opt.model.load import parse_spec
from horizon_opt.plans.inference import elastic_layout
from horizon_opt.relaxation.pool_model import build_pool_model
from horizon_opt.solvers.assemble import Placement
from horizon_opt.solvers.cpsat.budget import Budget
from horizon_opt.solvers.cpsat.model import NodeModel, pack_subproblem
from horizon_opt.solvers.cpsat.objective import end_weights
from horizon_opt.solvers.cpsat.quota_model import (
    _completed,
    _on_one_pool,
    _pools_by_idleness,
    _runs_in,
    add_quota_rule,
    fits,
)
from horizon_opt.solvers.cpsat.runner import Runner

# Two 8-GPU nodes, 8 one-hour slots, no inference. Red and blue are each entitled to 8 GPUs.
# r1 (red, 16 GPUs, 3 slots, priority 1) is worth 1 * 16 * 3 = 48 and runs only by borrowing
# blue's 8. b1 (blue, 8 GPUs, 2 slots, released at 2, priority 1) is worth 16.
# - r1 at 0..3 holds all 16 GPUs at slot 2, where b1 waits within blue's quota (0 + 8 <= 8)
#   with no GPU free (0 < 8), while red's 8 above its quota would make room (0 + 8 >= 8): b1
#   is kept out (rule 9), so that plan is invalid.
# - b1 at 2..4 and r1 at 4..7: both run, 48 + 16 = 64, the optimum.
BORROWER: dict[str, Any] = {
    "name": "borrower",
    "horizon": {"slots": 8},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 2, "gpus_per_node": 8}],
    "teams": [{"name": "red", "quota": {"p": 8}}, {"name": "blue", "quota": {"p": 8}}],
    "jobs": [
        {"id": "r1", "priority": 1, "gpus": 16, "duration": 3, "team": "red"},
        {"id": "b1", "priority": 1, "gpus": 8, "duration": 2, "release": 2, "team": "blue"},
    ],
}


def _instance() -> ho.Instance:
    return ho.compile_instance(parse_spec(BORROWER))


@pytest.mark.parametrize(("r1_start", "feasible"), [(0, False), (4, True)])
def test_the_rule_forbids_the_borrowing_that_keeps_a_job_out(r1_start: int, feasible: bool) -> None:
    inst = _instance()
    built = build_pool_model(inst)
    add_quota_rule(built.model, inst, built.vars)
    r1, b1 = inst.job_index["r1"], inst.job_index["b1"]
    built.model.add(built.vars.present[r1, 0] == 1)
    built.model.add(built.vars.start[r1, 0] == r1_start)
    built.model.add(built.vars.present[b1, 0] == 1)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    status = solver.solve(built.model)
    assert (status in (cp_model.OPTIMAL, cp_model.FEASIBLE)) == feasible


def test_cpsat_runs_the_gang_that_borrows_and_keeps_the_rule() -> None:
    inst = _instance()
    assert fits(inst)
    plan = ho.solve(inst, "cpsat", time_limit=2.0, workers=2, seed=0)
    assert ho.check(inst, plan) == []
    runs = {a.job: (a.start, a.end) for a in plan.assignments}
    assert plan.objective == 64.0
    assert runs == {"b1": (2, 4), "r1": (4, 7)}


def test_the_pack_hints_each_run_onto_the_nodes_its_packed_start_had() -> None:
    """The model's runs that its start plan (packed) already has pack at once: each is hinted
    onto the nodes it had there, so the pack's hint is a whole solution (r1 on both nodes, b1 on
    one)."""
    inst = _instance()
    r1, b1 = inst.job_index["r1"], inst.job_index["b1"]
    runs = {b1: (0, 2), r1: (0, 4)}
    hint = [Placement(b1, 0, 2, (1,)), Placement(r1, 0, 4, (0, 1))]
    nm = NodeModel(
        inst, pack_subproblem(inst, elastic_layout(inst), runs, hint), 1.0, end_weights(inst)
    )
    nm.keep_only(runs)
    proto = nm.model.proto.solution_hint
    hinted = dict(zip(proto.vars, proto.values, strict=True))
    on_nodes = {j: [hinted.get(z.Index()) for z in nm.on_node[j].values()] for j in (r1, b1)}
    assert sorted(on_nodes[r1]) == [1, 1]
    assert sorted(on_nodes[b1]) == [0, 1]


# BORROWER with a second pool q (one 8-GPU node) that b2 (blue, 8 GPUs, all 8 slots, on q
# only, worth 64) fills. Started from b1 at 2..4 on p and b2 on q, r1 out (worth 16 + 64):
# p's GPUs idle 16 * 8 - 8 * 2 = 112 GPU-slots, q's none, so p is searched alone, b2 fixed;
# there r1 runs after b1 (48 more, the optimum 128).
TWO_POOLS: dict[str, Any] = {
    **BORROWER,
    "pools": [*BORROWER["pools"], {"name": "q", "gpu_type": "y", "nodes": 1, "gpus_per_node": 8}],
    "jobs": [
        {**BORROWER["jobs"][0], "pools": ["p"]},
        BORROWER["jobs"][1],
        {"id": "b2", "priority": 1, "gpus": 8, "duration": 8, "team": "blue", "pools": ["q"]},
    ],
}


def test_the_idlest_pool_is_searched_alone_with_the_other_runs_fixed() -> None:
    inst = ho.compile_instance(parse_spec(TWO_POOLS))
    r1, b1, b2 = (inst.job_index[j] for j in ("r1", "b1", "b2"))
    start = {b1: (0, 2), b2: (1, 0)}
    assert _pools_by_idleness(inst, start) == [0, 1]
    built = build_pool_model(inst, start)
    add_quota_rule(built.model, inst, built.vars)
    options = ho.SolveOptions(time_limit=2.0, workers=1, seed=0)
    runner = Runner(Budget(2.0, False, options.params))
    values = _completed(runner, built, start)
    assert values is not None
    better, closed = _on_one_pool(runner, built, start, 0, values, 2.0, options)
    assert closed
    runs = _runs_in(built.vars, better)
    assert runs.pop(r1) in ((0, 4), (0, 5))  # (after b1, ending by slot 8: both worth 48)
    assert runs == start
