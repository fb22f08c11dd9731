"""The whole node-level model, on instances small enough for CP-SAT to solve it outright.

First with the inference layout fixed (quick; its optimum holds for that layout only), then
exact, with the replicas decided too: then it can prove a plan optimal. The same model with
every job's pool and start fixed packs a solved pool-level model's runs on nodes (`pack_runs`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from horizon_opt.solvers.cpsat.incumbent import Incumbent, weighted_ends
from horizon_opt.solvers.cpsat.model import NodeModel, Subproblem, pack_subproblem, room_beside
from horizon_opt.solvers.cpsat.objective import placement_units
from horizon_opt.solvers.cpsat.search import Search


def model_size(search: Search) -> int:
    """(job, candidate node) intervals of the full model."""
    inst = search.inst
    return sum(inst.pools[p].nodes for j in inst.jobs for p in j.durations)


def fits(search: Search) -> bool:
    return model_size(search) <= search.params.full_model_max_intervals


def full_subproblem(search: Search, inc: Incumbent, decide_layout: bool) -> Subproblem:
    inst = search.inst
    jobs = [j.index for j in inst.jobs]
    return Subproblem(
        jobs=jobs,
        nodes=list(range(inst.num_nodes)),
        residual=(inst.capacity if decide_layout else search.layout.free).astype(np.int64),
        earliest={j: search.est[j] for j in jobs},
        latest_end={j: inst.windows[j].horizon for j in jobs},
        hint=dict(inc.placements),
        inference_hint=search.layout if decide_layout else None,
        team_room=room_beside(inst, []),
    )


def _solve_against(
    search: Search, inc: Incumbent, nm: NodeModel, limit: float
) -> tuple[Any, cp_model.CpSolver]:
    """Solve `nm`, stopped once its bound proves that nothing beats the incumbent, or a plan
    reaches the best bound known: the rest would only settle the end-time tie-break, which
    can take the whole limit."""
    if search.open_end:  # the tie-break is what ranks plans: CP-SAT stops at optimal only
        return search.runner.solve_until_proven(
            nm, limit, search.opt.seed, search.opt.workers, -1, math.inf
        )
    units = sum(placement_units(search.inst, p, search.scale) for p in inc.placements.values())
    target = math.inf if search.bound is None else search.bound * search.scale - 1e-6
    return search.runner.solve_until_proven(
        nm, limit, search.opt.seed, search.opt.workers, units, target
    )


def solve_full(
    search: Search, inc: Incumbent, limit: float, decide_layout: bool
) -> tuple[bool, float | None]:
    """Solve the whole model; returns (proven optimal, proven bound on pwo).

    With `decide_layout`, inference replicas are variables too: the model is exact, and a
    better plan brings its own layout for the rest of the search. Without, they stay where
    the current layout puts them, and "optimal" holds only for that layout.
    """
    inst = search.inst
    nm = search.build(full_subproblem(search, inc, decide_layout))
    status, solver = _solve_against(search, inc, nm, limit)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        found = nm.extract(solver)
        if sum(p.earned(inst) for p in found.values()) >= inc.value() - 1e-9:
            if decide_layout:
                search.layout = nm.extract_layout(solver)
            inc.rebase(search.layout.free, found)
    if status == cp_model.INFEASIBLE or status == cp_model.MODEL_INVALID:
        raise RuntimeError(f"internal error: full model status {solver.status_name(status)}")
    if status == cp_model.UNKNOWN:
        return False, None
    bound = nm.weighing.units_bound(solver.best_objective_bound) / search.scale
    return status == cp_model.OPTIMAL or inc.value() >= bound - 1e-9 * max(1.0, bound), bound


def pack_runs(
    search: Search, inc: Incumbent, runs: Mapping[int, tuple[int, int]], limit: float
) -> bool:
    """Place `runs` (job -> (pool, start), a relaxation's solution) on nodes as they are, with
    the inference replicas decided too, and take the plan when it beats the incumbent.

    The list scheduling places runs beside a fixed inference layout, whose replicas can hold
    a node that some run needs: with the replicas decided too, the runs may pack where the list
    scheduling finds no node, and when they are a solved pool-level model's, a plan worth its
    value is proven optimal. Returns whether the incumbent changed.
    """
    inst = search.inst
    nm = search.build(pack_subproblem(search.inst, search.layout, runs))
    nm.keep_only(runs)
    status, solver = _solve_against(search, inc, nm, limit)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return False
    found = nm.extract(solver)
    value = sum(p.earned(inst) for p in found.values())
    search.write_log(f"pool-level runs packed with the replicas decided: pwo {value:.3f}")
    if not inc.beaten_by(value, weighted_ends(inst, search.end_weights, found.values())):
        return False
    search.layout = nm.extract_layout(solver)
    inc.rebase(search.layout.free, found)
    return True


def run(search: Search, inc: Incumbent) -> None:
    """The full model, layout fixed then decided, each with a share of the time left."""
    for decide_layout in (False, True):
        if search.settled(inc) or search.budget.out_of_time():
            break
        limit = search.budget.remaining() * search.params.full_model_share
        optimal, full_bound = solve_full(search, inc, limit, decide_layout)
        layout = "decided" if decide_layout else "fixed"
        search.write_log(
            f"full model (inference layout {layout}): optimal {optimal}, "
            f"bound {full_bound}, pwo {inc.value():.3f}"
        )
        if decide_layout and full_bound is not None:
            search.lower_bound_to(full_bound, "node-cpsat")
