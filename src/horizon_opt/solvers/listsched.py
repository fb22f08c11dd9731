"""List scheduling: jobs in rank order, each at the placement that ends earliest.

Shared by greedy (which ranks by priority) and cpsat (which ranks by the LP's solution and uses
it for its start plans and ejection moves). A predecessor inherits the rank of its most urgent
successor, so a valuable job is not starved by a cheap job it must run after.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from horizon_opt.model.instance import Instance, IntArray, Job, topological_order
from horizon_opt.plans.inference import Layout
from horizon_opt.solvers.assemble import Placement
from horizon_opt.solvers.grid import CapacityGrid, Fit

Rank = tuple[float, ...]


def _deadline(job: Job) -> float:
    return math.inf if job.deadline is None else job.deadline


def priority_large_first(j: Job) -> Rank:
    return (-j.priority, -j.work_hours, _deadline(j), j.index)


def priority_deadline_first(j: Job) -> Rank:
    return (-j.priority, _deadline(j), -j.work_hours, j.index)


def priority_release_order(j: Job) -> Rank:
    return (-j.priority, j.release, j.index)


def inherited_ranks(instance: Instance, rank: Callable[[Job], Rank]) -> list[Rank]:
    """Each job's rank, lowered to the best rank among the jobs that (transitively) need it."""
    ranks = [rank(j) for j in instance.jobs]
    for j in reversed(topological_order(instance)):
        for p in instance.jobs[j].after:
            ranks[p] = min(ranks[p], ranks[j])
    return ranks


def earliest_end(
    grid: CapacityGrid, job: Job, t0: int, latest: int, only: int | None = None
) -> Fit | None:
    """The fit that ends earliest over the job's allowed pools (ties: fastest pool, then first),
    or on pool `only` when given.

    Pools are searched fastest first, and a slower pool only for an end strictly earlier than the
    best so far, which keeps its search window short.
    """
    best: Fit | None = None
    best_end = latest + 1
    pools = job.fastest_first if only is None else [(only, job.durations[only])]
    window = grid.instance.windows[job.index]
    for pool_idx, d in pools:
        starts = window.allowed(d, t0, min(latest, best_end - 1))
        pool = grid.instance.pools[pool_idx]
        fit = grid.earliest_in_pool(pool, job.gangs[pool_idx], d, starts, "best", job.team)
        if fit is not None:
            best, best_end = fit, fit.start + d
    return best


def free_beside(instance: Instance, layout: Layout, placements: Sequence[Placement]) -> IntArray:
    """[N, S] GPUs that the layout and `placements` leave free (a copy)."""
    free = layout.free.copy()
    for p in placements:
        free[list(p.nodes), p.start : p.end(instance)] -= p.gpus_per_node(instance)
    return free


def grid_beside(
    instance: Instance, layout: Layout, placements: Sequence[Placement]
) -> CapacityGrid:
    """A grid of what the layout and `placements` leave free, their teams' room taken too."""
    grid = CapacityGrid(instance, free_beside(instance, layout, placements))
    for p in placements:
        grid.hold(instance.jobs[p.job], p.pool, p.start, p.end(instance))
    return grid


def place_in_order(
    instance: Instance,
    layout: Layout,
    ranks: list[Rank],
    targets: dict[int, int] | None = None,
    pools: dict[int, int] | None = None,
    fixed: Sequence[Placement] = (),
    late: bool = True,
) -> list[Placement]:
    """Place jobs in rank order (predecessors first), each at its earliest-ending fit; a job
    that fits nowhere (or whose predecessor did not) is left out.

    Optional, per job: `targets`, a start to aim for (the job first looks for a fit from there,
    then from its earliest start), and `pools`, a pool to try before all of its pools. `fixed`
    placements stay where they are and are returned first; the other jobs fit around them.
    With `late`, a job too late to earn its own value is still placed when a job after it may
    earn its own.
    """
    # (the list schedulings of the search fix nothing: no copy on their path)
    grid = grid_beside(instance, layout, fixed) if fixed else CapacityGrid(instance, layout.free)
    placements: dict[int, Placement] = {p.job: p for p in fixed}
    for j in topological_order(instance, key=ranks.__getitem__):
        job = instance.jobs[j]
        if j in placements or any(p not in placements for p in job.after):
            continue
        window = instance.windows[j]
        t0 = window.after(placements[p].end(instance) for p in job.after)
        latest = window.latest_end
        best = None
        for only in ([pools[j]] if pools is not None and j in pools else []) + [None]:
            if targets is not None and targets.get(j, t0) > t0:
                best = earliest_end(grid, job, targets[j], latest, only)
            if best is None:
                best = earliest_end(grid, job, t0, latest, only)
            if best is not None:
                break
        if best is None and late and instance.successors[j]:
            # Too late to earn its own value, but its successors may still earn theirs.
            best = earliest_end(grid, job, t0, window.horizon)
        if best is None:
            continue
        grid.occupy(best, job.gangs[best.pool], job.durations[best.pool], job.team)
        placements[j] = Placement(j, best.pool, best.start, best.nodes)
    return list(placements.values())
