"""Compaction: every job as early as the plan's other jobs and its inference layout let it.

pwo counts a job once it ends on time, whenever that is, so a search stopped by its time limit
can leave jobs later than they need to be, and GPUs idle now that a later start could use. Two
passes, both keeping the inference layout and never lowering pwo:

- `relist`: the plan's jobs placed again in the order of their starts, each at its earliest-ending
  fit on any of its pools and nodes (a serial schedule in the plan's order), kept only when
  every job still earns what it earned and the ends sum lower: the search's own tie-break
  (docs/design.md), improved where the plan left a node idle that a later start could use;
- `left_shift`: each job, in start order, to the earliest window on its own pool where it fits
  beside everything else (the jobs before it at their new starts, the jobs after it where they
  are): it delays no job, so waits only shrink.

A job that starts earlier frees its GPUs earlier for whatever the next plan places there.
"""

from __future__ import annotations

from collections.abc import Sequence

from horizon_opt.inference import Layout
from horizon_opt.instance import Instance
from horizon_opt.solvers.assemble import Placement
from horizon_opt.solvers.grid import CapacityGrid, Fit
from horizon_opt.solvers.listsched import earliest_end


def relist(instance: Instance, placements: Sequence[Placement], layout: Layout) -> list[Placement]:
    """The placements as a serial schedule in their start order (see the module) when it earns
    as much from every job and ends sooner in all; otherwise the placements unchanged. Placed
    jobs (running or held) and jobs holding a promise stay."""
    stays = [p for p in placements if _stays(instance, p)]
    free = layout.free.copy()
    for p in stays:
        free[list(p.nodes), p.start : p.end(instance)] -= p.gpus_per_node(instance)
    grid = CapacityGrid(instance, free)
    ends = {p.job: p.end(instance) for p in stays}
    out = list(stays)
    for p in sorted(
        (p for p in placements if not _stays(instance, p)), key=lambda q: (q.start, q.job)
    ):
        job, window = instance.jobs[p.job], instance.windows[p.job]
        t0 = window.after(ends[q] for q in job.after)
        on_time = p.earned(instance) > 0
        fit = earliest_end(grid, job, t0, window.latest_end if on_time else window.horizon)
        if fit is None:
            return list(placements)
        grid.occupy(fit, job.gangs[fit.pool], job.durations[fit.pool])
        moved = Placement(p.job, fit.pool, fit.start, fit.nodes)
        if on_time and moved.earned(instance) <= 0:
            return list(placements)
        out.append(moved)
        ends[p.job] = moved.end(instance)
    if sum(ends.values()) < sum(p.end(instance) for p in placements):
        return out
    return list(placements)


def _stays(instance: Instance, p: Placement) -> bool:
    job = instance.jobs[p.job]
    return job.placed is not None or job.promise is not None


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
