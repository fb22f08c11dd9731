"""Plans guided by the time-indexed LP: which jobs to run, and roughly when and where.

The LP (`mipbound.solve_lp`) relaxes where jobs sit on nodes but keeps every pool's capacity per
slot, every deadline and every dependency, so its solution is a good answer to "which jobs are
worth the horizon's GPU-slots". Greedy answers it by priority alone and runs out of room for
lower-priority jobs that pack well. Placing the LP's jobs first (a list-scheduling rounding of
the LP) beat greedy by 20-53% on the three enterprise medium instances and by 9% on enterprise
large, and gives the LNS a much better start. Which order packs best depends on the instance
(the most GPU-slots first, the largest gangs first, whole-node gangs then the longest jobs
first), and so do aiming at the LP's start and trying the LP's pool first: all 18 combinations
are tried and the best is kept; each is one list scheduling (0.02 s on medium, 0.1 s on large).
Squeaky-wheel passes (`squeaky_wheel`) then improve the best one by moving the LP jobs it left out
forward in its order.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from horizon_opt.inference import IntArray, Layout
from horizon_opt.instance import FloatArray, Instance, Job
from horizon_opt.solvers.assemble import Placement, drop_idle_late
from horizon_opt.solvers.cpsat.bound import earliest_starts
from horizon_opt.solvers.cpsat.mipbound import Relaxation, whole_free_nodes
from horizon_opt.solvers.listsched import Rank, inherited_ranks, place_in_order

SELECTED = 0.5  # a job is "in the LP's plan" when the LP runs at least this share of it
TARGET_SLACK = (None, 0, 2)  # aim at the LP's start (minus this many slots), or not at all
# Per pass, a tenth of the left-out LP jobs (at least 5; drawn by value) move forward: their
# position in the order is multiplied by a draw from SQUEAK. Moving all of them at once
# reshuffles too much: on enterprise large (11 s, three seeds) 481-486k against 488-493k,
# and on xl it found nothing in 110 passes where a tenth gained 1.2% in 28.
SQUEAK = (0.3, 0.9)
SQUEAK_SHARE = 0.1
SQUEAK_MIN = 5
STALL = 100  # squeaky-wheel passes without a better plan before it stops


@dataclass(frozen=True)
class LpGuide:
    share: FloatArray  # [J] the share of each job that the LP runs, 0..1
    start: dict[int, int]  # the start of each job's heaviest LP run (jobs the LP runs)
    pool: dict[int, int]  # the pool of that run

    def selected(self, j: int) -> bool:
        return bool(self.share[j] >= SELECTED)


def lp_guide(relaxation: Relaxation) -> LpGuide | None:
    """The LP's job shares and starts, or None when the LP has no primal solution."""
    cols, lp = relaxation.cols, relaxation.lp
    if lp.x is None or lp.columns is None or not len(lp.columns):
        return None
    ks, x = lp.columns, lp.x
    share = np.zeros(cols.jobs)
    np.add.at(share, cols.job[ks], x)
    start: dict[int, int] = {}
    pool: dict[int, int] = {}
    heaviest: dict[int, float] = {}
    for k, xv in zip(ks.tolist(), x.tolist(), strict=True):
        j = int(cols.job[k])
        if xv > heaviest.get(j, 1e-6):
            heaviest[j], start[j], pool[j] = xv, int(cols.start[k]), int(cols.pool[k])
    return LpGuide(np.minimum(share, 1.0), start, pool)


def whole_node(instance: Instance, job: Job) -> bool:
    """The job takes whole nodes on every pool it may use."""
    return all(gang.whole for gang in job.gangs.values())


def _orders(instance: Instance, guide: LpGuide) -> dict[str, Callable[[Job], Rank]]:
    """Rankings: the LP's jobs first (three ways), then the rest by priority."""

    def energy(job: Job) -> float:
        return job.gpus * min(job.durations.values())

    def rest(job: Job) -> Rank:
        return (-job.priority, -job.gpus, job.index)

    return {
        "LP jobs, most GPU-slots first": lambda j: (
            (0, -energy(j), j.index) if guide.selected(j.index) else (1, *rest(j))
        ),
        "LP jobs, largest gangs first": lambda j: (
            (0, -j.gpus, -j.priority, j.index) if guide.selected(j.index) else (1, *rest(j))
        ),
        # Long jobs on part of a node need the same node all along; they go before short ones.
        "LP jobs, whole-node gangs first, then longest first": lambda j: (
            (0, -whole_node(instance, j), -min(j.durations.values()), -j.gpus, j.index)
            if guide.selected(j.index)
            else (1, *rest(j))
        ),
    }


@dataclass(frozen=True)
class ListRule:
    """One list scheduling of the LP's jobs: an order, start targets and first pools."""

    name: str
    ranks: list[Rank]
    targets: dict[int, int] | None
    pools: dict[int, int] | None

    def place(self, instance: Instance, layout: Layout) -> tuple[float, list[Placement]]:
        placements, _ = place_in_order(instance, layout, self.ranks, self.targets, self.pools)
        placements = drop_idle_late(instance, placements)
        return sum(p.earned(instance) for p in placements), placements


def guided_placements(
    instance: Instance, layout: Layout, guide: LpGuide
) -> tuple[ListRule, list[Placement]]:
    """The best list scheduling of the LP's jobs over a few orders, start targets and pools."""
    best: tuple[float, ListRule | None, list[Placement]] = (-1.0, None, [])
    lp_pools = {j: p for j, p in guide.pool.items() if guide.selected(j)}
    for name, rank in _orders(instance, guide).items():
        ranks = inherited_ranks(instance, rank)
        for slack, pools in itertools.product(TARGET_SLACK, (None, lp_pools)):
            targets = (
                None if slack is None else {j: max(0, s - slack) for j, s in guide.start.items()}
            )
            label = name + ("" if slack is None else f", aimed at LP start - {slack}")
            rule = ListRule(
                label + ("" if pools is None else ", LP pool first"), ranks, targets, pools
            )
            value, placements = rule.place(instance, layout)
            if value > best[0] + 1e-9:
                best = (value, rule, placements)
    assert best[1] is not None
    return best[1], best[2]


def squeaky_wheel(
    instance: Instance,
    layout: Layout,
    guide: LpGuide,
    rule: ListRule,
    first: list[Placement],
    rng: np.random.Generator,
    stop: Callable[[], bool],
) -> tuple[float, list[Placement], int]:
    """Squeaky-wheel optimization of the list scheduling: after each pass, the LP's jobs that it
    left out (or late) move forward in the order, and the list is scheduled again.

    `first` is the rule's own plan (from `guided_placements`). A list scheduling of the LP's
    jobs leaves some of them out: jobs placed earlier took their
    room. Moving some of those forward, by a random share of their position, lets the next pass
    pack them and displaces others. On enterprise large, 128 passes (7.5 s) raised the LP-guided
    plan from 467.5k to 493.2k; the LNS needed about 100 s for 20k. Stops after STALL passes
    without a better plan, or when `stop()` says so. Returns the best pass's pwo and placements,
    and the number of passes run.
    """
    J = len(instance.jobs)
    position = np.empty(J)
    position[sorted(range(J), key=rule.ranks.__getitem__)] = np.arange(J, dtype=float)
    best_value, best = sum(p.earned(instance) for p in first), first
    placements, since, passes = best, 0, 0
    while since < STALL and not stop():
        on_time = {p.job for p in placements if p.earned(instance) > 0}
        left_out = np.array([j for j in range(J) if guide.selected(j) and j not in on_time])
        if not len(left_out):
            break  # every LP job is in: the order would not change
        worth = np.array([instance.jobs[j].value for j in left_out]) + 1e-9
        k = min(len(left_out), max(SQUEAK_MIN, round(SQUEAK_SHARE * len(left_out))))
        moved = rng.choice(left_out, size=k, replace=False, p=worth / worth.sum())
        position[moved] *= rng.uniform(*SQUEAK, size=k)
        ranks = inherited_ranks(instance, lambda job: (position[job.index], job.index))
        value, placements = replace(rule, ranks=ranks).place(instance, layout)
        passes += 1
        since += 1
        if value > best_value + 1e-9:
            best_value, best, since = value, placements, 0
    return best_value, best, passes


def gang_reservation(instance: Instance, guide: LpGuide, ranks: list[Rank]) -> IntArray:
    """[N, S] GPUs that the LP's whole-node gangs would use, for `inference.elastic_layout(around=...)`.

    The gangs (in `ranks` order, aimed at the LP's start and pool) are first placed by counts
    alone: at each slot a pool's gangs take at most the nodes that inference can leave whole.
    That is the LP's own rule, and with inference free to sit on any node it is enough: gangs
    are intervals, and interval partitioning onto identical nodes never needs more nodes than
    the most gangs running at once. Then each gang, by start, takes nodes that are up and not
    yet taken all along its run, preferring those whose last gang ended latest (tight in time).
    """
    S, N = instance.slots, len(instance.node_names)
    est = earliest_starts(instance)
    room = whole_free_nodes(instance).astype(np.int64)
    gangs = [j.index for j in instance.jobs if guide.selected(j.index) and whole_node(instance, j)]
    planned: list[tuple[int, int, int]] = []  # (start, job, pool)
    for j in sorted(gangs, key=ranks.__getitem__):
        job = instance.jobs[j]
        lp_pool = guide.pool.get(j)
        pools = sorted(job.durations, key=lambda p: (p != lp_pool, job.durations[p], p))
        for p in pools:
            d, n = job.durations[p], job.gangs[p].nodes
            lo, hi = est[j], job.latest_end(S) - d
            aim = min(max(lo, guide.start.get(j, lo)), hi + 1)
            starts = itertools.chain(range(aim, hi + 1), range(lo, aim))
            start = next((s for s in starts if room[p, s : s + d].min() >= n), None)
            if start is not None:
                room[p, start : start + d] -= n
                planned.append((start, j, p))
                break
    kept = np.zeros((N, S), dtype=np.int64)
    last_end = np.full(N, -1)
    for start, j, p in sorted(planned):
        pool, job = instance.pools[p], instance.jobs[j]
        end, n = start + job.durations[p], job.gangs[p].nodes
        nodes = [
            q
            for q in pool.node_range
            if instance.up[q, start:end].all() and not kept[q, start:end].any()
        ]
        if len(nodes) >= n:
            nodes.sort(key=lambda q: -last_end[q])
            kept[nodes[:n], start:end] = pool.gpus_per_node
            last_end[nodes[:n]] = end
    return kept
