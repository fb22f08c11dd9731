"""The FIFO baseline, exactly as FORMAT.md defines it: static peak reservation, release order.

This is the policy most clusters run today and the one the optimizer is measured against.
`elastic=True` gives the ablation "FIFO with per-slot reservation" (same order, req[v][t] only).
"""

from __future__ import annotations

import time

from horizon_opt.model.instance import Instance, topological_order
from horizon_opt.plans.inference import Layout, elastic_layout, static_peak_layout
from horizon_opt.plans.plan import Plan
from horizon_opt.solvers.assemble import Placement, build_plan
from horizon_opt.solvers.diagnosis import unscheduled_causes
from horizon_opt.solvers.grid import CapacityGrid, Fit
from horizon_opt.solvers.options import SolveOptions


def release_order(instance: Instance) -> list[int]:
    """Jobs by release, ties in file order; a job never comes before a job it runs after.

    A predecessor with a later release than its successor holds the successor back: the
    successor's effective release is the latest release along its chain of predecessors. Next
    comes, among the jobs whose predecessors are all taken, the one with the earliest effective
    release, then the first in the file: file order holds wherever the dependencies allow it.
    """
    eff: dict[int, int] = {}
    for j in topological_order(instance):
        eff[j] = instance.windows[j].after(eff[p] for p in instance.jobs[j].after)
    return topological_order(instance, key=eff.__getitem__)


def fifo_placements(instance: Instance, layout: Layout) -> list[Placement]:
    """FIFO's placements beside `layout`: jobs in release order, each at its earliest start on
    the nodes first in order, never before the job placed before it."""
    grid = CapacityGrid(instance, layout.free)
    placements: dict[int, Placement] = {}
    floor = 0  # FIFO: no job starts before the job scheduled before it
    for j in release_order(instance):
        job = instance.jobs[j]
        if any(p not in placements for p in job.after):
            continue
        window = instance.windows[j]
        t0 = max(floor, window.after(placements[p].end(instance) for p in job.after))
        best: Fit | None = None
        for pool_idx, d in sorted(job.durations.items()):
            fit = grid.earliest_in_pool(
                instance.pools[pool_idx],
                job.gangs[pool_idx],
                d,
                window.allowed(d, t0, window.horizon),
                "first",
                job.team,
            )
            if fit is not None and (best is None or fit.start < best.start):
                best = fit
        if best is None:
            continue
        grid.occupy(best, job.gangs[best.pool], job.durations[best.pool], job.team)
        placements[j] = Placement(j, best.pool, best.start, best.nodes)
        floor = best.start
    return list(placements.values())


def solve(
    instance: Instance, options: SolveOptions | None = None, *, elastic: bool = False
) -> Plan:
    started = time.perf_counter()
    layout = elastic_layout(instance) if elastic else static_peak_layout(instance)
    done = fifo_placements(instance, layout)
    rule = "FIFO starts no job before one released ahead of it has started"
    reasons = unscheduled_causes(instance, done, layout, rule)
    name = "fifo-elastic" if elastic else "fifo"
    return build_plan(instance, name, done, layout, reasons, started=started)
