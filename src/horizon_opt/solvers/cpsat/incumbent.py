"""The search's current best placements, with the batch GPUs they use per node and slot."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from horizon_opt.model.instance import Instance, IntArray
from horizon_opt.plans.plan import Plan
from horizon_opt.solvers.assemble import Placement
from horizon_opt.solvers.cpsat.objective import end_weights


@dataclass
class Incumbent:
    """The current best placements and the batch GPUs they use per node and slot."""

    instance: Instance
    free: IntArray  # [N, S] left by the inference layout
    placements: dict[int, Placement] = field(default_factory=dict)
    weights: tuple[int, ...] | None = None  # the tie-break's end weights (None: by value)
    rate: float = 0.0  # pwo per weighted end slot (`objective.end_rate`; 0: a tie-break only)

    def __post_init__(self) -> None:
        self.version = 0  # counts changes, for caches of derived data
        self.end_weights = self.weights or end_weights(self.instance)
        self._count_used()

    def _count_used(self) -> None:
        self.used = np.zeros_like(self.free)
        for p in self.placements.values():
            self._add(p, 1)

    def _add(self, p: Placement, sign: int) -> None:
        gpus = sign * p.gpus_per_node(self.instance)
        self.used[list(p.nodes), p.start : p.end(self.instance)] += gpus

    def fits(self, p: Placement) -> bool:
        window = (self.free - self.used)[list(p.nodes), p.start : p.end(self.instance)]
        return bool((window >= p.gpus_per_node(self.instance)).all())

    def replace(self, old: list[int], new: dict[int, Placement]) -> None:
        self.version += 1
        for j in old:
            if j in self.placements:
                self._add(self.placements.pop(j), -1)
        for j, p in new.items():
            self.placements[j] = p
            self._add(p, 1)

    def rebase(self, free: IntArray, placements: dict[int, Placement]) -> None:
        """Switch to another inference layout's free GPUs, with placements that fit it."""
        self.version += 1
        self.free = free
        self.placements = dict(placements)
        self._count_used()

    def value(self) -> float:
        return sum(p.earned(self.instance) for p in self.placements.values())

    def weighted_ends(self) -> int:
        return weighted_ends(self.instance, self.end_weights, self.placements.values())

    def beaten_by(self, value: float, ends: int) -> bool:
        """A plan of pwo `value` and weighted end sum `ends` ranks above this one."""
        return ranks_above(value, ends, self.value(), self.weighted_ends(), self.rate)


def weighted_ends(
    instance: Instance, weights: Sequence[int], placements: Iterable[Placement]
) -> int:
    """The tie-break's value-weighted sum of end slots (`weights`: `objective.end_weights`)."""
    return sum(weights[p.job] * p.end(instance) for p in placements)


def ranks_above(
    value: float, ends: int, than_value: float, than_ends: int, rate: float = 0.0
) -> bool:
    """Plans rank by pwo, then by value-weighted end slots, fewer first; with an end `rate`, by
    pwo less `rate` times their weighted end slots."""
    tol = 1e-9 * max(1.0, abs(than_value))
    if rate > 0:
        return value - rate * ends > than_value - rate * than_ends + tol
    return value > than_value + tol or (value >= than_value - tol and ends < than_ends)


def placements_from_plan(instance: Instance, plan: Plan, free: IntArray) -> dict[int, Placement]:
    """The jobs of a plan that fit `free` and their dependencies, in start order."""
    placements = []
    for a in plan.assignments:
        j = instance.job_index.get(a.job)
        pool = instance.pool_index.get(a.pool)
        if j is None or pool is None or pool not in instance.jobs[j].durations:
            continue
        nodes = tuple(sorted(instance.node_index[n] for n in a.gpus if n in instance.node_index))
        placements.append(Placement(j, pool, a.start, nodes))
    return fitting_placements(instance, placements, free)


def fitting_placements(
    instance: Instance, placements: Iterable[Placement], free: IntArray
) -> dict[int, Placement]:
    """The placements that fit `free`, their teams' limits and their dependencies, taken in
    start order (ties: job order), each on its nodes in ascending order."""
    inc = Incumbent(instance, free)
    room = instance.team_room.copy() if instance.limited else None
    ordered = sorted(placements, key=lambda p: (p.start, p.job))
    for p in (Placement(q.job, q.pool, q.start, tuple(sorted(q.nodes))) for q in ordered):
        j, pool, nodes, job = p.job, p.pool, p.nodes, instance.jobs[p.job]
        ok = (
            p.start in instance.windows[j].starts(pool)
            and len(nodes) == job.gangs[pool].nodes
            and all(instance.node_pool[n] == pool for n in nodes)
            and all(
                q in inc.placements and inc.placements[q].end(instance) <= p.start
                for q in job.after
            )
            and inc.fits(p)
            and _take_room(room, instance, p)
        )
        if ok:
            inc.replace([], {j: p})
    return inc.placements


def _take_room(room: IntArray | None, instance: Instance, p: Placement) -> bool:
    """Whether `p` fits its team's room (`Instance.team_room`, less what was taken); if so, it
    takes its GPUs there."""
    job = instance.jobs[p.job]
    if room is None or job.team is None:
        return True
    window = room[job.team, p.pool, p.start : p.end(instance)]
    if (window < job.gpus).any():
        return False
    window -= job.gpus
    return True
