"""The cpsat solver, as a pipeline: start, relax, (solve exactly), guide, improve, prove, assemble.
(With teams' quotas, the pipeline runs within them and borrowing comes after: `quotas.py`.)

1. Start: the best of the fifo plan, the greedy plan and a user hint (`starts.py`), so the
   result is never worse than any of them.
2. Relax: the time-indexed LP (`relaxation`); its certified bound is known from then on, and its
   solution guides the search (`bounding.py` decides when HiGHS's MIP tightens the bound, and
   when the pool-level CP-SAT model proves a second bound). The pool-level model's solution,
   once it has one, is placed on nodes too (`starts.pool_start`): at once on small instances,
   during the search on larger ones.
3. Small instances: CP-SAT solves the whole node-level model, first with the inference layout
   fixed, then with the replicas decided too, so it can prove optimality (`exact.py`).
4. Otherwise: a list scheduling of the LP's jobs, improved by squeaky-wheel passes, becomes the
   incumbent when it is better (`starts.py`); then a large-neighbourhood search with rounds of
   ejection moves, for the time left (`lns.py`).
5. Prove: the bound, tightened with the time kept for it (`bounding.py`).
6. Assemble: every job as early as the others let it (`compact.py`), concrete GPU indices,
   inference blocks, metrics, status and gap (`assemble.py`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import partial
from typing import IO

import horizon_opt.solvers.cpsat.bounding as bounding
import horizon_opt.solvers.cpsat.exact as exact
import horizon_opt.solvers.cpsat.starts as starts
from horizon_opt.model.instance import Instance
from horizon_opt.plans.plan import Plan, Status
from horizon_opt.plans.tolerance import reaches
from horizon_opt.solvers.assemble import build_plan, drop_idle_late
from horizon_opt.solvers.compact import fill_gaps, left_shift
from horizon_opt.solvers.cpsat.guide import lp_guide
from horizon_opt.solvers.cpsat.incumbent import Incumbent
from horizon_opt.solvers.cpsat.lns import Lns
from horizon_opt.solvers.cpsat.quotas import quota_first
from horizon_opt.solvers.cpsat.search import Search
from horizon_opt.solvers.diagnosis import unscheduled_causes
from horizon_opt.solvers.options import SolveOptions
from horizon_opt.solvers.reclaim import quotas_bind


def solve(instance: Instance, options: SolveOptions | None = None) -> Plan:
    options = options or SolveOptions()
    if quotas_bind(instance):
        # (quotas.py: the search runs within the quotas, its bounds hold for the instance)
        return quota_first(instance, options, partial(_search_plan, bounds_for=instance))
    return _search_plan(instance, options)


def _search_plan(
    instance: Instance, options: SolveOptions, bounds_for: Instance | None = None
) -> Plan:
    """The pipeline's plan of `instance`; its relaxation bounds are of `bounds_for` (when
    given: an instance with more room, so that they hold for it too)."""
    with _search_log(options) as log:
        search = Search(instance, options, log, bounds_for)
        try:
            with search.runner.installed():
                inc = starts.initial(search)
                search.report(inc)
                bound = _optimize(search, inc)
            return _assemble(search, inc, bound)
        finally:
            search.close_log()


def _optimize(search: Search, inc: Incumbent) -> float | None:
    """Improve `inc` within the budget, or until the stop criterion says stop; returns a proven
    bound on pwo (None on Ctrl-C)."""
    budget = search.budget
    small = exact.fits(search)
    relaxation = None
    tightened = False  # the bound already had its MIP, and nothing is left to tighten it
    if not budget.out_of_time():
        relaxation = bounding.relax(search)
        search.lower_bound_to(relaxation.lp.bound, "lp")
        bounding.start_pool_bound(search, inc, at_once=small)
        search.track(inc)  # (the stop criterion judges the search from here on)
        starts.pool_start(search, inc)  # (when it ran at once; else the LNS tries it later)
        if small and not budget.deterministic and not search.pool_closed:
            bounding.tighten_now(search, relaxation)  # the full models stop at the bound
            tightened = True
        search.report(inc)
    if small:
        exact.run(search, inc)
    if relaxation is not None and not search.settled(inc) and not budget.out_of_time():
        bounding.plan_tightening(search, relaxation)
        guide = lp_guide(relaxation, search.params.selected_share)
        if guide is not None and not budget.out_of_time():
            starts.guided_start(search, inc, guide)
            search.report(inc)
        Lns(search, inc, guide).run()
    if budget.interrupted:
        return None
    if budget.stopped_by is not None:  # the plan is good enough: no time for a tighter bound
        bounding.stop_background(search)
        bound = "none" if search.bound is None else f"{search.bound:.3f}"
        search.write_log(
            f"search stopped by {budget.stopped_by} in {budget.elapsed():.2f}s: "
            f"pwo {inc.value():.3f}, bound {bound}"
        )
    elif not tightened or search.background is not None:
        search.lower_bound_to(*bounding.final_bound(search, relaxation, search.proven(inc)))
    search.report(inc)
    return search.bound


def _assemble(search: Search, inc: Incumbent, bound: float | None) -> Plan:
    inst = search.inst
    inc.replace(
        list(inc.placements),
        {p.job: p for p in drop_idle_late(inst, list(inc.placements.values()))},
    )
    value = inc.value()  # pwo, plus the bonuses of kept promises when re-planning for stability
    pwo = value - sum(p.bonus(inst) for p in inc.placements.values() if p.earned(inst) > 0)
    proven = bound is not None and reaches(value, bound)
    # Optimal for pwo only when no bonus is in the way: the bound is then pwo's own.
    status: Status = "optimal" if proven and pwo >= value - 1e-9 else "feasible"
    placements = list(inc.placements.values())
    if search.params.left_shift:
        placements = left_shift(inst, placements, search.layout, search.params.shift_pools)
    if search.params.fill_gaps:
        placements = fill_gaps(inst, placements, search.layout)
    return build_plan(
        inst,
        "cpsat",
        placements,
        search.layout,
        unscheduled_causes(
            inst, placements, search.layout, "the search did not place it there in its time"
        ),
        started=search.budget.started,
        status=status,
        bound=value if proven else bound,
        bound_source=None if bound is None else search.bound_source,
        build_seconds=round(search.build_seconds, 3),
    )


@contextlib.contextmanager
def _search_log(options: SolveOptions) -> Iterator[IO[str] | None]:
    if options.log is None:
        yield None
        return
    with open(options.log, "w") as log:
        yield log
