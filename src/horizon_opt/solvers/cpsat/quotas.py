"""cpsat with teams' quotas: search within the quotas, then let teams borrow where rule 9 allows.

The node-level search knows nothing of FORMAT.md's rule 9 (no job waits within its team's quota
while others' borrowing holds its GPUs), and the reclaim that keeps the rule (`reclaim.py`) can
tear a plan built on borrowing apart. So with quotas cpsat first searches the instance with each
team's limit lowered to its quota (0 on a pool where it has none): no team borrows, so no job is
ever kept out. Each idle window of that plan is filled with borrowing work (`compact.fill_gaps`,
under the real limits), and the reclaim keeps whatever that filling broke. Greedy's, fifo's and
backfill's plans, reclaimed the same way, are the fallbacks when worth more (so cpsat is never
below any of them). The rest of the time goes to the pool-level model with rule 9 written in
(`quota_model.py`), started from the best of those: it lets a gang larger than its team's quota
run on what the others leave idle, where the search within quotas never could. It runs with
two or more workers (on one, CP-SAT's search of it rarely improves on its start) and on small
instances (`quota_model.fits`; on larger ones the search within the quotas does better).

The bound: the LP, MIP and pool-level models relax the instance as written (`search` is given
it for its bounds), with its real limits and without quotas, so they hold for every valid plan;
the exact node model's bound (`node-cpsat`) held the lowered limits, so it is replaced by the
LP's.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace

from horizon_opt.model.instance import Instance
from horizon_opt.plans.inference import Layout, elastic_layout, static_peak_layout
from horizon_opt.plans.plan import Plan, Status
from horizon_opt.plans.tolerance import same
from horizon_opt.relaxation import proven_bound
from horizon_opt.solvers.assemble import Placement, build_plan
from horizon_opt.solvers.backfill import solve as backfill_plan
from horizon_opt.solvers.compact import fill_gaps
from horizon_opt.solvers.cpsat import quota_model
from horizon_opt.solvers.diagnosis import unscheduled_causes
from horizon_opt.solvers.fifo import fifo_placements
from horizon_opt.solvers.greedy import greedy_placements
from horizon_opt.solvers.options import SolveOptions
from horizon_opt.solvers.progress import Progress
from horizon_opt.solvers.reclaim import best_with_quotas, solver_placements
from horizon_opt.solvers.stop import AnyOf, ElapsedAtLeast

RELAXED_BOUND_SHARE = 0.1  # of the time limit, for the LP's bound when the exact model's fails


def within_quotas(instance: Instance) -> Instance:
    """The instance with each team's limit on every pool lowered to its quota there (a limit
    is never below the quota)."""
    teams = tuple(
        replace(team, limit={p.index: team.quota.get(p.index, 0) for p in instance.pools})
        for team in instance.teams
    )
    return replace(instance, teams=teams)


def quota_first(
    instance: Instance, options: SolveOptions, search: Callable[[Instance, SolveOptions], Plan]
) -> Plan:
    """The plan of `search` within the quotas, filled with borrowing and reclaimed, or a
    fallback's when worth more; then the model with rule 9's, when worth more (see the module)."""
    started = time.perf_counter()
    # (on one worker CP-SAT's search of that model rarely improves on its start: all to the search)
    use_model = options.workers > 1 and quota_model.fits(instance)
    share = options.params.quota_model_share if use_model else 0.0
    with _ctrl_c_heard() as heard:
        plan = search(within_quotas(instance), _stopped_early(options, share))
    if heard:  # (Ctrl-C ended the search: the plan so far, at once)
        share = 0.0
    placements, layout = solver_placements(instance, plan)
    elastic, static = elastic_layout(instance), static_peak_layout(instance)
    candidates = [
        (fill_gaps(instance, placements, layout), layout),
        (greedy_placements(instance, elastic), elastic),
        (fifo_placements(instance, static), static),
        solver_placements(instance, backfill_plan(instance, options)),
    ]
    chosen, layout = best_with_quotas(instance, candidates)
    bound, source = plan.bound, plan.bound_source
    if bound is not None and source == "node-cpsat":
        seconds = max(1.0, RELAXED_BOUND_SHARE * options.time_limit)
        bound, source = proven_bound(instance, seconds).value, "lp"
    if share > 0:
        chosen, layout = _with_borrowing(instance, options, started, (chosen, layout), bound)
    pwo = sum(p.earned(instance) for p in chosen)
    # (a bound below the plan is not taken for a proof: the plan's guard drops it, loudly)
    optimal = bound is not None and same(pwo, bound)
    status: Status = "optimal" if optimal else "feasible"
    why = "the search did not place it there in its time"
    return build_plan(
        instance,
        "cpsat",
        chosen,
        layout,
        unscheduled_causes(instance, chosen, layout, why),
        started=started,
        status=status,
        bound=pwo if optimal else bound,
        bound_source=source,
        build_seconds=plan.build_seconds,
    )


def _with_borrowing(
    instance: Instance,
    options: SolveOptions,
    started: float,
    plan: tuple[list[Placement], Layout],
    bound: float | None,
) -> tuple[list[Placement], Layout]:
    """`plan`, or the model with rule 9's (`quota_model`) in the time left when worth more; the
    model is not run when `plan` meets the bound or the caller's stop criterion."""
    seconds = options.time_limit - (time.perf_counter() - started)
    value = sum(p.earned(instance) for p in plan[0])
    progress = Progress(time.perf_counter() - started, value, bound)
    stop = options.stop is not None and options.stop(progress) is not None
    if seconds <= 0 or stop or (bound is not None and same(value, bound)):
        return plan
    borrowing = quota_model.quota_plan(instance, options, seconds, plan[0])
    return plan if borrowing is None else best_with_quotas(instance, [plan, borrowing])


def _stopped_early(options: SolveOptions, share: float) -> SolveOptions:
    """The search's options: it stops once `1 - share` of the time limit has passed, the rest
    being the model's; its relaxation keeps its shares of the whole limit, so that the bound
    is as tight as without the model. A full-model solve, which the stop cannot end once
    started, gets its share of the search's part only."""
    if share <= 0:
        return options
    ends = ElapsedAtLeast((1 - share) * options.time_limit)
    params = replace(options.params, full_model_share=options.params.full_model_share * (1 - share))
    stop = ends if options.stop is None else AnyOf(ends, options.stop)
    return replace(options, stop=stop, params=params)


@contextlib.contextmanager
def _ctrl_c_heard() -> Iterator[list[bool]]:
    """A list that gets True when Ctrl-C comes while the block runs (the search's handler
    passes it on: `cpsat.runner.Runner`); main thread only, as any signal handler."""
    heard: list[bool] = []
    if threading.current_thread() is not threading.main_thread():
        yield heard
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: heard.append(True))
    try:
        yield heard
    finally:
        signal.signal(signal.SIGINT, previous)
