"""Start plans: the best of fifo, greedy and the user's hint, then guided list schedulings.

Each start is re-checked against the elastic reservation, so cpsat's plan is never worse than
any of them. Two guides lead a list scheduling: the time-indexed LP's solution, and the
pool-level model's once it has one (its jobs, starts and pools: where those pack on nodes, the
plan is worth what the model's solution is, and a solved model proves it optimal). Each is tried
on two inference layouts: replicas stacked on the lowest nodes, and replicas packed around the
nodes the guide's whole-node gangs would use (the stacked layout moves the whole-node boundary
with demand, so a long gang may find no node that stays whole across every peak of its run).
"""

from __future__ import annotations

import time

import horizon_opt.solvers.cpsat.exact as exact
from horizon_opt.plans.inference import Layout, elastic_layout, plan_layout, static_peak_layout
from horizon_opt.solvers.assemble import Placement
from horizon_opt.solvers.cpsat.guide import (
    ListRule,
    LpGuide,
    gang_reservation,
    guided_placements,
    solution_guide,
    squeaky_wheel,
)
from horizon_opt.solvers.cpsat.incumbent import (
    Incumbent,
    fitting_placements,
    placements_from_plan,
    weighted_ends,
)
from horizon_opt.solvers.cpsat.search import Search
from horizon_opt.solvers.fifo import fifo_placements
from horizon_opt.solvers.greedy import greedy_placements


def initial(search: Search) -> Incumbent:
    """The best of the fifo plan, the greedy plan and the hint, on the elastic layout; the hint
    also on its own inference layout (a re-plan's previous plan keeps its starts that way)."""
    inst, free = search.inst, search.layout.free
    hint = search.opt.hint
    candidates = [  # placements only: these plans' reasons and metrics would go unused
        ("fifo", fitting_placements(inst, fifo_placements(inst, static_peak_layout(inst)), free)),
        ("greedy", fitting_placements(inst, greedy_placements(inst, elastic_layout(inst)), free)),
    ]
    if hint is not None:
        candidates.append((hint.solver, placements_from_plan(inst, hint, free)))
    best: Incumbent | None = None
    for name, placements in candidates:
        inc = Incumbent(inst, free, placements, search.end_weights, search.end_rate)
        search.write_log(f"start candidate {name}: pwo {inc.value():.3f}")
        if best is None or best.beaten_by(inc.value(), inc.weighted_ends()):
            best = inc
    assert best is not None
    own = None if hint is None else plan_layout(inst, hint)
    if hint is not None and own is not None:
        placements = placements_from_plan(inst, hint, own.free)
        inc = Incumbent(inst, own.free, placements, search.end_weights, search.end_rate)
        search.write_log(f"start candidate {hint.solver}, its own layout: pwo {inc.value():.3f}")
        if best.beaten_by(inc.value(), inc.weighted_ends()):
            search.layout = own
            best = inc
    return best


def pool_start(search: Search, inc: Incumbent) -> None:
    """The pool-level model's solution, once it has one, placed on nodes as `guided_start`
    places the LP's: where a solved model's plan packs, the plan is proven optimal at once.
    When the list scheduling does not pack a solved model's runs, on instances small enough
    for the full model, CP-SAT places them with the inference replicas decided too
    (`exact.pack_runs`). A solution worth no more than the incumbent is not tried: it would
    lead to a plan no better (with an open end, one worth as much may end its work sooner)."""
    solution, search.pool_solution = search.pool_solution, None
    if solution is None:
        return
    worth, tol = solution.value - inc.value(), 1e-9 * max(1.0, inc.value())
    if worth < -tol or (worth <= tol and not search.open_end):  # (open end: it may end sooner)
        return
    if not search.settled(inc) and not search.only_bound_time_left():
        guided_start(search, inc, solution_guide(search.inst, solution.runs), "pool-guided")
        search.report(inc)
    packable = search.pool_closed and exact.fits(search)
    if packable and not search.settled(inc) and not search.budget.out_of_time():
        limit = search.budget.remaining() * search.params.full_model_share
        exact.pack_runs(search, inc, solution.runs, limit)
        search.report(inc)


def guided_start(search: Search, inc: Incumbent, guide: LpGuide, name: str = "LP-guided") -> None:
    """Take the list scheduling that `guide` leads, improved by squeaky-wheel passes (at most
    `squeaky_share` of the budget), when it beats the incumbent."""
    inst, params, budget = search.inst, search.params, search.budget

    def candidate(layout: Layout, label: str) -> tuple[float, ListRule, list[Placement]]:
        started = time.perf_counter()
        rule, placements = guided_placements(inst, layout, guide, params.target_slack)
        value = sum(p.earned(inst) for p in placements)
        search.write_log(
            f"start candidate {name}{label} ({rule.name}): pwo {value:.3f} "
            f"({time.perf_counter() - started:.2f}s)"
        )
        return value, rule, placements

    layout = search.layout
    found, rule, placements = candidate(layout, "")
    around = elastic_layout(inst, around=gang_reservation(inst, guide, rule.ranks))
    found2, rule2, placements2 = candidate(around, ", inference around its gangs")
    if found2 > found + 1e-9:
        found, rule, placements, layout = found2, rule2, placements2, around
    until = budget.spent() + params.squeaky_share
    per_pass = params.deterministic_per_pass_and_job * len(inst.jobs)
    last_report = time.perf_counter()

    def stop() -> bool:
        nonlocal last_report
        budget.charge(per_pass)
        if time.perf_counter() - last_report > 1.0:  # live progress keeps its clock going
            search.report(inc)
            last_report = time.perf_counter()
        return search.only_bound_time_left() or budget.spent() >= until

    started = time.perf_counter()
    value, placements, passes = squeaky_wheel(
        inst, layout, guide, rule, placements, search.rng, stop, params
    )
    search.write_log(
        f"start candidate {name}, squeaky wheel: pwo {value:.3f} ({passes} passes, "
        f"{time.perf_counter() - started:.2f}s)"
    )
    if inc.beaten_by(value, weighted_ends(inst, search.end_weights, placements)):
        search.layout = layout  # the plan's inference layout from now on
        inc.rebase(layout.free, {p.job: p for p in placements})
