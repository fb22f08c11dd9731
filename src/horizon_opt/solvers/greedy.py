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

import time
from collections.abc import Callable

from horizon_opt.model.instance import Instance, Job
from horizon_opt.plans.inference import Layout, elastic_layout
from horizon_opt.plans.plan import Plan
from horizon_opt.solvers.assemble import Placement, build_plan, drop_idle_late
from horizon_opt.solvers.diagnosis import unscheduled_causes
from horizon_opt.solvers.listsched import (
    Rank,
    inherited_ranks,
    place_in_order,
    priority_deadline_first,
    priority_large_first,
    priority_release_order,
)
from horizon_opt.solvers.options import SolveOptions

# The secondary rules tried, best plan kept: which one packs best depends on the instance.
RULES: tuple[Callable[[Job], Rank], ...] = (
    priority_large_first,
    priority_deadline_first,
    priority_release_order,
)


def greedy_placements(instance: Instance, layout: Layout) -> list[Placement]:
    """Greedy's placements beside `layout`: the best of its rules' list schedules."""
    best: tuple[float, list[Placement]] | None = None
    for rule in RULES:
        placements = place_in_order(instance, layout, inherited_ranks(instance, rule))
        placements = drop_idle_late(instance, placements)
        value = sum(p.earned(instance) for p in placements)
        if best is None or value > best[0] + 1e-9:
            best = (value, placements)
    assert best is not None
    return best[1]


def solve(instance: Instance, options: SolveOptions | None = None) -> Plan:
    started = time.perf_counter()
    layout = elastic_layout(instance)
    placements = greedy_placements(instance, layout)
    reasons = unscheduled_causes(instance, placements, layout)
    return build_plan(instance, "greedy", placements, layout, reasons, started=started)
