"""The greedy baseline: elastic reservation and value order, one job at a time.

Inference reserves only `req[v][t]` at each slot, so demand troughs are open to batch work. Jobs
are placed in value-density order. A job's value density is `priority * work / (gpus * duration
* h)`, which equals its priority on its fastest pool, so the order is by priority; ties go to
the order's secondary rule. Each job takes the placement that ends earliest among those that fit
and end on time (tightest node first), or stays unscheduled. A predecessor inherits the rank of
its most urgent successor, so a valuable job is not starved by a cheap job it must run after.

Several secondary rules are tried (large jobs first, deadlines first, release order) and the plan with the highest pwo is kept: each pass is cheap, and which rule
packs best depends on the instance.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from horizon_opt.inference import Layout, elastic_layout
from horizon_opt.instance import Instance, Job, topological_order
from horizon_opt.plan import Plan
from horizon_opt.solvers.assemble import Placement, build_plan, drop_idle_late, ready_at
from horizon_opt.solvers.grid import CapacityGrid, Fit
from horizon_opt.solvers.options import SolveOptions

Rank = tuple[float, ...]


def _deadline(job: Job) -> float:
    return math.inf if job.deadline is None else job.deadline


RULES: dict[str, Callable[[Job], Rank]] = {
    "priority, large first": lambda j: (-j.priority, -j.work_hours, _deadline(j), j.index),
    "priority, deadline first": lambda j: (-j.priority, _deadline(j), -j.work_hours, j.index),
    "priority, release order": lambda j: (-j.priority, j.release, j.index),
}


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
    pools = job.durations.items() if only is None else [(only, job.durations[only])]
    for pool_idx, d in sorted(pools, key=lambda item: (item[1], item[0])):
        limit = min(latest, best_end - 1)
        fit = grid.earliest_in_pool(grid.instance.pools[pool_idx], job.gpus, d, t0, limit, "best")
        if fit is not None:
            best, best_end = fit, fit.start + d
    return best


def place_in_order(
    instance: Instance,
    layout: Layout,
    ranks: list[Rank],
    targets: dict[int, int] | None = None,
    pools: dict[int, int] | None = None,
) -> tuple[list[Placement], dict[int, str]]:
    """Place jobs in rank order (predecessors first), each at its earliest-ending fit.

    Optional, per job: `targets`, a start to aim for (the job first looks for a fit from there,
    then from its earliest start), and `pools`, a pool to try before all of its pools.
    """
    grid = CapacityGrid(instance, layout.free)
    placements: dict[int, Placement] = {}
    reasons: dict[int, str] = {}
    for j in topological_order(instance, key=ranks.__getitem__):
        job = instance.jobs[j]
        missing = [instance.jobs[p].id for p in job.after if p not in placements]
        if missing:
            reasons[j] = f"runs after {', '.join(missing)}, which is not scheduled"
            continue
        t0 = ready_at(instance, j, placements)
        latest = job.latest_end(instance.slots)
        best = None
        for only in ([pools[j]] if pools is not None and j in pools else []) + [None]:
            if targets is not None and targets.get(j, t0) > t0:
                best = earliest_end(grid, job, targets[j], latest, only)
            if best is None:
                best = earliest_end(grid, job, t0, latest, only)
            if best is not None:
                break
        if best is None and instance.successors[j]:
            # Too late to earn its own value, but its successors may still earn theirs.
            best = earliest_end(grid, job, t0, instance.slots)
        if best is None:
            until = (
                "its deadline"
                if job.deadline is not None and latest < instance.slots
                else "the end of the horizon"
            )
            reasons[j] = (
                f"no capacity from slot {t0} to {until} (slot {latest}) after higher-ranked jobs"
            )
            continue
        grid.occupy(best, job.gpus, job.durations[best.pool])
        placements[j] = Placement(j, best.pool, best.start, best.nodes)
    return list(placements.values()), reasons


def solve(instance: Instance, options: SolveOptions | None = None) -> Plan:
    started = time.perf_counter()
    layout = elastic_layout(instance)
    best: tuple[float, list[Placement], dict[int, str]] | None = None
    for rule in RULES.values():
        placements, reasons = place_in_order(instance, layout, inherited_ranks(instance, rule))
        placements = drop_idle_late(instance, placements)
        kept = {p.job for p in placements}
        for j in instance.jobs:
            if j.index not in kept and j.index not in reasons:
                reasons[j.index] = (
                    "cannot end by its deadline, and no job that runs after it could be scheduled"
                )
        value = sum(p.earned(instance) for p in placements)
        if best is None or value > best[0] + 1e-9:
            best = (value, placements, reasons)
    assert best is not None
    return build_plan(instance, "greedy", best[1], layout, best[2], started=started)
