"""Compaction: every job as early as the plan's other jobs and its inference layout let it.

pwo counts a job once it ends on time, whenever that is, so a search stopped by its time limit
can leave jobs later than they need to be, and gaps that a left-out job could use. Two passes,
both keeping the inference layout and never lowering pwo:

- `left_shift`: each job, in start order, to the earliest window on its own pool where it fits
  beside everything else (the jobs before it at their new starts, the jobs after it where they
  are): it delays no job, so waits only shrink. With `any_pool`, the window may be on another of
  its pools when the job still ends no later there: a slower pool left idle starts work at once
  that would otherwise wait for a faster one;
- `fill_gaps`: the jobs the plan leaves out, highest priority first, each at its earliest-ending
  fit in what the plan leaves free, when it ends on time there (`listsched.place_in_order`
  around the plan's placements): pwo only rises. A search stopped by its time limit can leave
  such a gap, and compaction can open one.

A job that starts earlier frees its GPUs earlier for whatever the next plan places there.
"""

from __future__ import annotations

from collections.abc import Sequence

from horizon_opt.model.instance import Instance
from horizon_opt.plans.inference import Layout
from horizon_opt.solvers.assemble import Placement
from horizon_opt.solvers.grid import CapacityGrid, Fit
from horizon_opt.solvers.listsched import (
    grid_beside,
    inherited_ranks,
    place_in_order,
    priority_deadline_first,
)


def fill_gaps(
    instance: Instance, placements: Sequence[Placement], layout: Layout
) -> list[Placement]:
    """The placements and the left-out jobs that fit beside them and end on time (see the
    module): a list scheduling of the rest around them, highest priority first."""
    ranks = inherited_ranks(instance, priority_deadline_first)
    return place_in_order(instance, layout, ranks, fixed=placements, late=False)


def left_shift(
    instance: Instance, placements: Sequence[Placement], layout: Layout, any_pool: bool = False
) -> list[Placement]:
    """The placements, each started as early as the others allow (see the module), with
    `any_pool` on whichever of its pools it starts earliest while ending no later. Placed jobs
    (running or held) and jobs holding a promise of a start stay where the plan put them; a
    job holding a `by` promise moves earlier on its own pool only, which keeps the promise."""
    grid = grid_beside(instance, layout, placements)
    ends: dict[int, int] = {}
    out: list[Placement] = []
    for p in sorted(placements, key=lambda q: (q.start, q.job)):
        job = instance.jobs[p.job]
        promise = job.promise
        if job.placed is not None or (promise is not None and not promise.by):
            out.append(p)
            ends[p.job] = p.end(instance)
            continue
        gang, duration = job.gangs[p.pool], job.durations[p.pool]
        ready = instance.windows[p.job].after(ends[q] for q in job.after)
        if ready >= p.start:
            out.append(p)
            ends[p.job] = p.end(instance)
            continue
        grid.release(Fit(p.pool, p.start, p.nodes), gang, duration, job.team)
        fit = _earliest_by(grid, instance, p, ready, any_pool and promise is None)
        grid.occupy(fit, job.gangs[fit.pool], job.durations[fit.pool], job.team)
        moved = Placement(p.job, fit.pool, fit.start, fit.nodes)
        out.append(moved)
        ends[p.job] = moved.end(instance)
    return out


def _earliest_by(
    grid: CapacityGrid, instance: Instance, p: Placement, ready: int, any_pool: bool
) -> Fit:
    """The earliest start from `ready` at which the job fits and ends by its current end: on
    its own pool, or with `any_pool` on any of its pools (its own on a tie), so that a pool left
    idle takes work that would otherwise wait for a faster one."""
    job, window = instance.jobs[p.job], instance.windows[p.job]
    end = p.end(instance)
    pools = sorted(job.durations, key=lambda q: q != p.pool) if any_pool else [p.pool]
    best: Fit | None = None
    for q in pools:
        gang, duration = job.gangs[q], job.durations[q]
        starts = window.allowed(duration, ready, end)
        if not starts:
            continue
        fit = grid.earliest_in_pool(instance.pools[q], gang, duration, starts, "first", job.team)
        if fit is not None and (best is None or fit.start < best.start):
            best = fit
    assert best is not None  # its own window is free again, so the search finds one
    return best
