"""Where a job could run with some of a plan's batch jobs kept where they are and the inference
requirement placed to suit it, rather than in the plan's own layout: the `AloneView` search over
the cluster with the kept jobs' GPUs taken (a node that holds one is no longer whole).

The cause codes use it when the plan's inference layout leaves a job no room at all: "the
reservation takes its room" holds only where, with every other planned job kept, some layout of
the replicas gives it room; otherwise batch work is in its way too, and the work that must move
is named with the replicas placed to suit the job. Teams' limits are not part of this view.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

import numpy as np

from horizon_opt.model.instance import Instance, Job
from horizon_opt.solvers.alone import AloneView
from horizon_opt.solvers.assemble import Placement
from horizon_opt.solvers.grid import Fit


def beside(instance: Instance, keep: Iterable[Placement]) -> AloneView:
    """The cluster with the placements `keep` where they are, outages, and the inference
    requirement packed wherever it leaves a job room (`AloneView`)."""
    held = np.zeros((instance.num_nodes, instance.slots), dtype=np.int64)
    if instance.held is not None:
        held += instance.held
    for p in keep:
        held[list(p.nodes), p.start : p.end(instance)] += p.gpus_per_node(instance)
    return AloneView(replace(instance, held=held))


def fits_at(view: AloneView, job: Job, fit: Fit) -> bool:
    """Whether the job fits on the window's pool from its start, in `view`."""
    d = job.durations[fit.pool]
    starts = view.fits(fit.pool, job.gangs[fit.pool], d)
    return 0 <= fit.start < len(starts) and bool(starts[fit.start])


def during(
    instance: Instance, placements: Sequence[Placement], j: int, fit: Fit
) -> list[Placement]:
    """The placements (other than job j's) on the window's pool while job j would run there."""
    end = fit.start + instance.jobs[j].durations[fit.pool]
    return [
        p
        for p in placements
        if p.job != j and p.pool == fit.pool and p.start < end and fit.start < p.end(instance)
    ]


def must_move(
    instance: Instance,
    placements: Sequence[Placement],
    j: int,
    fit: Fit,
    movable: Callable[[int], bool],
    rank: Callable[[int], tuple[float, int]],
) -> set[int]:
    """Jobs (of those `movable`) that must move for job j to start at `fit` with the inference
    requirement placed to suit it. `fit` must hold with only the jobs not `movable` kept: then
    moving every movable job on its pool during the window makes room, and each of those is
    tried back in `rank` order (most valuable first), staying where it is when j still fits."""
    near = sorted({p.job for p in during(instance, placements, j, fit) if movable(p.job)}, key=rank)
    moved = set(near)
    job = instance.jobs[j]
    for q in near:
        keep = (p for p in placements if p.job != j and p.job not in moved - {q})
        if fits_at(beside(instance, keep), job, fit):
            moved.discard(q)
    return moved
