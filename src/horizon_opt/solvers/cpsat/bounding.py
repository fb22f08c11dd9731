"""The proven bound: the relaxation first, then tightened where and when it pays.

The LP's bound is known as soon as the LP is solved, and guides the search from then on. Whether
and when HiGHS's MIP (or more column generation) tightens it depends on the instance:

- small instances: at once, briefly, because the full models stop as soon as their plan reaches
  the bound (not with one worker: a MIP stopped by the clock would make the plan depend on the
  machine's speed);
- LP stopped early: column generation resumes at the end, in `bound_share` of the time kept;
- LP converged, model too large for the MIP: not at all, no time kept;
- LP converged, MIP fits, 2+ workers and no need to repeat exactly: one worker runs it during
  the whole search (HiGHS releases the GIL); on Ctrl-C that daemon thread is not waited for;
- otherwise: at the end, in `bound_share` of the time kept.

Beside it, a second bound from the pool-level CP-SAT model (`relaxation.pool_model`), right
after the LP. With one worker, or on a small instance, at once (with one worker within a
deterministic limit, so that a rerun repeats it; on a small instance for longer,
`SearchParams.pool_share_small`). Otherwise on one worker in the background, for at most
`PoolShares.background` of the time limit, and less when its bound is still no better than the
LP's halfway through; the background MIP waits for it. Once the pool-level model is solved, the
MIP and the time kept for tightening are skipped: both are relaxations of it. The reported bound
is the lowest of all, and `Search.bound_source` names the source that proved it. Its solution
goes to the search as a start plan (`starts.pool_start`).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ortools.sat.python import cp_model

from horizon_opt.relaxation import Bound, Relaxation, mip_fits, proven_bound, solve_lp, tighten
from horizon_opt.relaxation.pool_model import PoolBound, PoolLimits, pool_bound
from horizon_opt.solvers.cpsat.incumbent import Incumbent
from horizon_opt.solvers.cpsat.search import Search

POOL_SOURCE = "pool-cpsat"


@dataclass(frozen=True)
class PoolShares:
    """How much of the time limit the pool-level model may take. It stops earlier when solved,
    as small instances often are within a few seconds."""

    background: float = 0.2
    """With 2+ workers: at most this share of the time limit, on one worker beside the search..."""
    give_up: float = 0.5
    """...and after this share of that, no longer once its bound is not below the best known."""
    at_once: float = 0.15
    """At once with one worker: at most this share, before the search (on a small instance
    `SearchParams.pool_share_small`)..."""
    units_per_second: float = 0.3
    """...with one worker as CP-SAT deterministic units, at about the rate the pool model spends
    them per second; they are charged to the search's budget converted at this rate."""


POOL = PoolShares()


def source_of(bound: Bound) -> str:
    """A relaxation bound's source, as the plan file names it."""
    return "mip" if bound.method == "time-indexed MIP" else "lp"


def relax(search: Search) -> Relaxation:
    """The time-indexed LP, within `lp_share` of the time limit (a repeatable budget: within
    its count of steps)."""
    budget = search.budget
    steps = budget.lp_steps(search.params)
    if steps is not None:
        return solve_lp(search.bound_inst, math.inf, search.write_log, search.params, steps)
    deadline = min(budget.deadline, budget.started + search.params.lp_share * budget.time_limit)
    return solve_lp(
        search.bound_inst, max(deadline, time.perf_counter() + 0.5), search.write_log, search.params
    )


def tighten_now(search: Search, relaxation: Relaxation) -> None:
    """Tighten the bound at once, with a small share of the time left (small instances)."""
    now = time.perf_counter()
    left = max(0.0, search.budget.deadline - now)
    deadline = now + min(search.params.small_bound_share * left, search.params.small_bound_seconds)
    found = tighten(relaxation, deadline, search.write_log, search.params)
    search.lower_bound_to(found.value, source_of(found))
    search.bound_reserve = 0.0


def start_pool_bound(search: Search, inc: Incumbent, at_once: bool) -> None:
    """The pool-level model's bound: at once (one worker, or a small instance), else in the
    background beside the search."""
    budget = search.budget
    hint = {p.job: (p.pool, p.start) for p in inc.placements.values()}
    if at_once or budget.deterministic:
        share = search.params.pool_share_small if at_once else POOL.at_once
        seconds = share * budget.time_limit
        units = seconds * POOL.units_per_second if budget.deterministic else None
        # (with a deterministic limit, the wall clock is only a safety that stops it later)
        safety = math.inf if budget.repeatable else seconds * (2 if units else 1)
        limits = PoolLimits(safety, deterministic=units, seed=search.opt.seed)
        found = pool_bound(search.bound_inst, limits, hint, _stoppable(search))
        if budget.deterministic:
            budget.charge(found.deterministic_time * budget.per_second / POOL.units_per_second)
        pool_done(search, found)
        if found.value is not None:
            search.lower_bound_to(found.value, POOL_SOURCE)
        return
    seconds = POOL.background * budget.time_limit
    limits = PoolLimits(seconds, seed=search.opt.seed, give_up_after=POOL.give_up * seconds)

    def work() -> None:
        found = pool_bound(
            search.bound_inst, limits, hint, _stoppable(search), lambda: search.bound
        )
        pool_done(search, found)
        if found.value is not None:
            search.background_found.append((found.value, POOL_SOURCE))
        if search.background is thread:  # no MIP waits for this worker: the search gets it back
            search.lns_workers = search.opt.workers

    thread = threading.Thread(target=work, daemon=True)
    search.lns_workers = search.opt.workers - 1
    search.background = thread
    thread.start()


def _stoppable(search: Search) -> Callable[[cp_model.CpSolver], None]:
    """Registers a background solve, so that the search can stop it (Ctrl-C, search over)."""

    def register(solver: cp_model.CpSolver) -> None:
        search.stop_background.append(solver.stop_search)
        if search.budget.interrupted:
            solver.stop_search()

    return register


def pool_done(search: Search, found: PoolBound) -> None:
    """Once the pool-level model is solved, no relaxation can prove less (each is a relaxation
    of it): the time kept to tighten the bound goes back to the search. Its solution goes to
    the search as `SearchParams.pool_start` says."""
    if found.optimal:
        search.pool_closed = True
        search.bound_reserve = 0.0
    use = search.params.pool_start
    if use == "any" or (use == "solved" and found.optimal):  # (see `starts.pool_start`)
        search.pool_solution = found.solution
    _log_pool(search, found)


def _log_pool(search: Search, found: PoolBound) -> None:
    state = "optimal" if found.optimal else "not closed"
    search.write_log(
        f"pool-level model: bound {found.value} ({state}, {found.seconds:.2f}s, "
        f"{found.deterministic_time:.3f} deterministic)"
    )


def plan_tightening(search: Search, relaxation: Relaxation) -> None:
    """Decide when the bound gets tightened after the start plans (see the module docstring)."""
    if search.pool_closed or (
        relaxation.lp.converged and not mip_fits(relaxation.cols, search.params)
    ):
        search.bound_reserve = 0.0
        return
    if not relaxation.lp.converged or search.opt.workers < 2 or search.budget.deterministic:
        return
    before = search.background  # the pool-level model's worker: the MIP runs after it

    def work() -> None:
        if before is not None:
            before.join()
        if search.pool_closed or search.budget.stopped_by is not None:
            return
        found = tighten(relaxation, search.budget.deadline, search.write_log, search.params)
        search.background_found.append((found.value, source_of(found)))

    search.bound_reserve = 0.0
    search.lns_workers = search.opt.workers - 1
    search.background = threading.Thread(target=work, daemon=True)
    search.background.start()


def stop_background(search: Search) -> None:
    """The search stopped before its time (`SolveOptions.stop`): stop the background's CP-SAT
    solves and take the bounds proven so far. A MIP already running is not waited for, as on
    Ctrl-C: its daemon thread ends at its own deadline."""
    for stop in search.stop_background:
        stop()
    search.take_background_bound()


def final_bound(search: Search, relaxation: Relaxation | None, proven: bool) -> tuple[float, str]:
    """A bound valid for every plan, and its source: the LP's (solved before, or now), then
    tightened. `proven`: the plan already reaches the bound, so background solves may stop."""
    budget = search.budget
    if search.background is not None:
        if proven:
            for stop in search.stop_background:  # nothing left to prove
                stop()
        search.background.join(max(0.0, budget.deadline - time.perf_counter()) + 5.0)
        assert relaxation is not None
        search.take_background_bound()
        value, source = relaxation.lp.bound, "lp"
        for tighter, by in list(search.background_found):
            if tighter < value:
                value, source = tighter, by
        search.write_log(f"proven bound {value:.3f} ({source}, tightened during the search)")
        return value, source
    if search.pool_closed and relaxation is not None:
        search.write_log(f"proven bound {search.bound:.3f} ({search.bound_source})")
        return relaxation.lp.bound, "lp"  # (the pool-level bound, lower, is already taken)
    # The bound gets the time left, at least `bound_min_seconds` (or `bound_min_share`).
    now = time.perf_counter()
    deadline = now + max(
        search.params.bound_min_seconds,
        budget.deadline - now,
        search.params.bound_min_share * budget.time_limit,
    )
    if relaxation is None:
        found = proven_bound(
            search.bound_inst, deadline - time.perf_counter(), search.write_log, search.params
        )
    else:
        found = tighten(relaxation, deadline, search.write_log, search.params)
    search.write_log(f"proven bound {found.value:.3f} ({found.method}, {found.seconds:.2f}s)")
    return found.value, source_of(found)
