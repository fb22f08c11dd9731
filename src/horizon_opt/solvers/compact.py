"""Compaction: every job as early as the plan's other jobs and its inference layout let it.

pwo counts a job once it ends on time, whenever that is, so a search stopped by its time limit
can leave jobs later than they need to be, and gaps that a left-out job could use. Two passes,
both keeping the inference layout and never lowering pwo:

- `left_shift`: each job, in start order, to the earliest window on its own pool where it fits
  beside everything else (the jobs before it at their new starts, the jobs after it where they
  are): it delays no job, so waits only shrink;
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
from horizon_opt.solvers.grid import Fit
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
    instance: Instance, placements: Sequence[Placement], layout: Layout
) -> list[Placement]:
    """The placements, each started as early as the others allow (see the module). Placed jobs
    (running or held) and jobs holding a promise stay where the plan put them."""
    grid = grid_beside(instance, layout, placements)
    ends: dict[int, int] = {}
    out: list[Placement] = []
    for p in sorted(placements, key=lambda q: (q.start, q.job)):
        job = instance.jobs[p.job]
        if job.placed is not None or job.promise is not None:
            out.append(p)
            ends[p.job] = p.end(instance)
            continue
        gang, duration = job.gangs[p.pool], job.durations[p.pool]
        window = instance.windows[p.job]
        ready = window.after(ends[q] for q in job.after)
        if ready >= p.start:
            out.append(p)
            ends[p.job] = p.end(instance)
            continue
        grid.release(Fit(p.pool, p.start, p.nodes), gang, duration, job.team)
        starts = window.allowed(duration, ready, p.start + duration)
        fit = grid.earliest_in_pool(
            instance.pools[p.pool], gang, duration, starts, "first", job.team
        )
        assert fit is not None  # its own window is free again, so the search finds one
        grid.occupy(fit, gang, duration, job.team)
        moved = Placement(p.job, p.pool, fit.start, fit.nodes)
        out.append(moved)
        ends[p.job] = moved.end(instance)
    return out
