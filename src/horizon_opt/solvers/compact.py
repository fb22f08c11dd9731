"""Left-shift: each job as early as the plan's other jobs and its inference layout let it.

pwo counts a job once it ends on time, whenever that is, so a search stopped by its time limit
can leave jobs later than they need to be. Moving each job, in start order, to the earliest
window on its own pool where it fits beside everything else (the layout, the jobs before it at
their new starts, the jobs after it where they are) keeps every job's pool, keeps the layout,
and delays no job: pwo cannot fall, waits only shrink, and a job that starts earlier frees its
GPUs earlier for whatever the next plan places there.
"""

from __future__ import annotations

from collections.abc import Sequence

from horizon_opt.inference import Layout
from horizon_opt.instance import Instance
from horizon_opt.solvers.assemble import Placement
from horizon_opt.solvers.grid import CapacityGrid, Fit


def left_shift(
    instance: Instance, placements: Sequence[Placement], layout: Layout
) -> list[Placement]:
    """The placements, each started as early as the others allow (see the module). Placed jobs
    (running or held) and jobs holding a promise (their bonus needs the promised start) stay."""
    free = layout.free.copy()
    for p in placements:
        end = p.end(instance)
        for n in p.nodes:
            free[n, p.start : end] -= p.gpus_per_node(instance)
    grid = CapacityGrid(instance, free)
    ends: dict[int, int] = {}
    out: list[Placement] = []
    for p in sorted(placements, key=lambda q: (q.start, q.job)):
        job = instance.jobs[p.job]
        if job.placed is not None or job.promise is not None:
            out.append(p)
            ends[p.job] = p.end(instance)
            continue
        gang, duration = job.gangs[p.pool], job.durations[p.pool]
        ready = instance.windows[p.job].after(ends[q] for q in job.after)
        if ready >= p.start:
            out.append(p)
            ends[p.job] = p.end(instance)
            continue
        grid.release(Fit(p.pool, p.start, p.nodes), gang, duration)
        fit = grid.earliest_in_pool(
            instance.pools[p.pool], gang, duration, ready, p.start + duration, "first"
        )
        assert fit is not None  # its own window is free again, so the search finds one
        grid.occupy(fit, gang, duration)
        moved = Placement(p.job, p.pool, fit.start, fit.nodes)
        out.append(moved)
        ends[p.job] = moved.end(instance)
    return out
