"""The most valuable waiting job held to the start backfill would give it (`reserve_top`).

Slurm's backfill reserves the start of the job at the head of its queue and lets nothing
delay it. A plan that maximizes pwo has no such rule: a big job with room before its deadline
can end anywhere before it at no cost, so each plan may put other work first and the job
slides. With `reserve_top`, each re-plan holds the most valuable ready job that cannot start
now to the start a backfill plan of the same state gives it, as a held promise worth
`TOP_WEIGHT` times its value (`replan.with_held_promises`): the plan keeps it unless the rest
gains more than that.
"""

from __future__ import annotations

from horizon_opt.loop.replan import with_held_promises
from horizon_opt.model.instance import Instance
from horizon_opt.solvers import SolveOptions, solve

TOP_WEIGHT = 1.0  # of the job's value


def with_top_reserved(state: Instance, options: SolveOptions) -> Instance:
    """`state` with its most valuable ready, waiting job promised backfill's start for it (or
    the start already promised it, when earlier)."""
    starts = {a.job: a.start for a in solve(state, "backfill", options).assignments}
    waiting = [
        j
        for j in state.jobs
        if j.placed is None and j.release <= state.now and starts.get(j.id, -1) > state.now
    ]
    if not waiting:
        return state
    top = max(waiting, key=lambda j: (j.value, -j.index))
    start = starts[top.id]
    if top.promise is not None and top.promise.by:
        start = min(start, top.promise.start)
    return with_held_promises(state, {top.id: start}, TOP_WEIGHT)
