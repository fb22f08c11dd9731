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
"""

from __future__ import annotations

import threading
import time

from horizon_opt.relaxation import Relaxation, mip_fits, proven_bound, solve_lp, tighten
from horizon_opt.solvers.cpsat.search import Search


def relax(search: Search) -> Relaxation:
    """The time-indexed LP, within `lp_share` of the time limit."""
    budget = search.budget
    deadline = min(budget.deadline, budget.started + search.params.lp_share * budget.time_limit)
    return solve_lp(
        search.inst, max(deadline, time.perf_counter() + 0.5), search.write_log, search.params
    )


def tighten_now(search: Search, relaxation: Relaxation) -> None:
    """Tighten the bound at once, with a small share of the time left (small instances)."""
    now = time.perf_counter()
    left = max(0.0, search.budget.deadline - now)
    deadline = now + min(search.params.small_bound_share * left, search.params.small_bound_seconds)
    search.bound = tighten(relaxation, deadline, search.write_log, search.params).value
    search.bound_reserve = 0.0


def plan_tightening(search: Search, relaxation: Relaxation) -> None:
    """Decide when the bound gets tightened after the start plans (see the module docstring)."""
    if relaxation.lp.converged and not mip_fits(relaxation.cols, search.params):
        search.bound_reserve = 0.0
        return
    if not relaxation.lp.converged or search.opt.workers < 2 or search.budget.deterministic:
        return

    def work() -> None:
        found = tighten(relaxation, search.budget.deadline, search.write_log, search.params)
        search.background_bound = found.value

    search.bound_reserve = 0.0
    search.lns_workers = search.opt.workers - 1
    search.background = threading.Thread(target=work, daemon=True)
    search.background.start()


def final_bound(search: Search, relaxation: Relaxation | None) -> float:
    """A bound valid for every plan: the LP's (solved before, or now), then tightened."""
    budget = search.budget
    if search.background is not None:
        search.background.join(max(0.0, budget.deadline - time.perf_counter()) + 5.0)
        assert relaxation is not None
        tightened = search.background_bound
        value = relaxation.lp.bound if tightened is None else min(tightened, relaxation.lp.bound)
        search.write_log(f"proven bound {value:.3f} (tightened during the search)")
        return value
    # The bound gets the time left, at least `bound_min_seconds` (or `bound_min_share`).
    now = time.perf_counter()
    deadline = now + max(
        search.params.bound_min_seconds,
        budget.deadline - now,
        search.params.bound_min_share * budget.time_limit,
    )
    if relaxation is None:
        found = proven_bound(
            search.inst, deadline - time.perf_counter(), search.write_log, search.params
        )
    else:
        found = tighten(relaxation, deadline, search.write_log, search.params)
    search.write_log(f"proven bound {found.value:.3f} ({found.method}, {found.seconds:.2f}s)")
    return found.value
