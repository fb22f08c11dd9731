"""Plans guided by the time-indexed LP: which jobs to run, and roughly when and where.

The LP (`relaxation.solve_lp`) relaxes where jobs sit on nodes but keeps every pool's capacity
per slot, every deadline and every dependency, so its solution is a good answer to "which jobs
are worth the horizon's GPU-slots". Greedy answers it by priority alone and runs out of room for
lower-priority jobs that pack well. Placing the LP's jobs first (a list-scheduling rounding of
the LP) gives the LNS a much better start. Which order packs best depends on the instance (the
most GPU-slots first, the largest gangs first, whole-node gangs then the longest jobs first), and
so do aiming at the LP's start and trying the LP's pool first: every combination is tried, each
one cheap list scheduling, and the best is kept. Squeaky-wheel passes (`squeaky_wheel`) then
improve it by moving the LP jobs it left out forward in its order.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from horizon_opt.model.instance import FloatArray, Instance, IntArray, Job
from horizon_opt.params import SearchParams
from horizon_opt.plans.inference import Layout
from horizon_opt.relaxation import Relaxation, whole_free_nodes
from horizon_opt.solvers.assemble import Placement, drop_idle_late
from horizon_opt.solvers.listsched import Rank, inherited_ranks, place_in_order


@dataclass(frozen=True)
class LpGuide:
    share: FloatArray  # [J] the share of each job that the LP runs, 0..1
    start: dict[int, int]  # the start of each job's heaviest LP run (jobs the LP runs)
    pool: dict[int, int]  # the pool of that run
    threshold: float  # a job is "in the LP's plan" when the LP runs at least this share of it

    def selected(self, j: int) -> bool:
        return bool(self.share[j] >= self.threshold)


def lp_guide(relaxation: Relaxation, threshold: float) -> LpGuide | None:
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
    return LpGuide(np.minimum(share, 1.0), start, pool, threshold)


def solution_guide(instance: Instance, runs: dict[int, tuple[int, int]]) -> LpGuide:
    """An integral solution of a relaxation (job -> (pool, start)) as a guide: the list
    scheduling then tries to place exactly its jobs, at its starts and on its pools."""
    share = np.zeros(len(instance.jobs))
    share[list(runs)] = 1.0
    start = {j: s for j, (_, s) in runs.items()}
    pool = {j: p for j, (p, _) in runs.items()}
    return LpGuide(share, start, pool, 0.5)


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
        placements = place_in_order(instance, layout, self.ranks, self.targets, self.pools)
        placements = drop_idle_late(instance, placements)
        return sum(p.earned(instance) for p in placements), placements


def guided_placements(
    instance: Instance, layout: Layout, guide: LpGuide, target_slack: tuple[int | None, ...]
) -> tuple[ListRule, list[Placement]]:
    """The best list scheduling of the LP's jobs over a few orders, start targets (the LP's
    start minus each of `target_slack`, None: no target) and pools."""
    best: tuple[float, ListRule | None, list[Placement]] = (-1.0, None, [])
    lp_pools = {j: p for j, p in guide.pool.items() if guide.selected(j)}
    for name, rank in _orders(instance, guide).items():
        ranks = inherited_ranks(instance, rank)
        for slack, pools in itertools.product(target_slack, (None, lp_pools)):
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
    params: SearchParams,
) -> tuple[float, list[Placement], int]:
    """Squeaky-wheel optimization of the list scheduling: after each pass, the LP's jobs that it
    left out (or late) move forward in the order, and the list is scheduled again.

    `first` is the rule's own plan (from `guided_placements`). A list scheduling of the LP's
    jobs leaves some of them out: jobs placed earlier took their room. Moving a share of those
    forward (drawn by value), by a random factor of their position, lets the next pass pack
    them and displaces others; moving all of them at once reshuffles too much. Stops after
    `params.squeak_stall` passes without a better plan, or when `stop()` says so. Returns the
    best pass's pwo and placements, and the number of passes run.
    """
    J = len(instance.jobs)
    position = np.empty(J)
    position[sorted(range(J), key=rule.ranks.__getitem__)] = np.arange(J, dtype=float)
    best_value, best = sum(p.earned(instance) for p in first), first
    placements, since, passes = best, 0, 0
    while since < params.squeak_stall and not stop():
        on_time = {p.job for p in placements if p.earned(instance) > 0}
        left_out = np.array([j for j in range(J) if guide.selected(j) and j not in on_time])
        if not len(left_out):
            break  # every LP job is in: the order would not change
        worth = np.array([instance.jobs[j].value for j in left_out]) + 1e-9
        k = min(len(left_out), max(params.squeak_min, round(params.squeak_share * len(left_out))))
        moved = rng.choice(left_out, size=k, replace=False, p=worth / worth.sum())
        position[moved] *= rng.uniform(*params.squeak_factor, size=k)
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
    room = whole_free_nodes(instance).astype(np.int64)
    gangs = [j.index for j in instance.jobs if guide.selected(j.index) and whole_node(instance, j)]
    planned: list[tuple[int, int, int]] = []  # (start, job, pool)
    for j in sorted(gangs, key=ranks.__getitem__):
        job = instance.jobs[j]
        lp_pool = guide.pool.get(j)
        pools = sorted(job.durations, key=lambda p: (p != lp_pool, job.durations[p], p))
        for p in pools:
            d, n = job.durations[p], job.gangs[p].nodes
            window = instance.windows[j]
            lo = window.ready
            allowed = window.allowed(d, lo, window.latest_end)
            hi = allowed.last()
            if hi is None:
                continue  # no start ends in time on this pool
            aim = min(max(lo, guide.start.get(j, lo)), hi + 1)
            starts = itertools.chain(range(aim, hi + 1), range(lo, aim))
            start = next(
                (s for s in starts if s in allowed and room[p, s : s + d].min() >= n), None
            )
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
            if instance.whole[q, start:end].all() and not kept[q, start:end].any()
        ]
        if len(nodes) >= n:
            nodes.sort(key=lambda q: -last_end[q])
            kept[nodes[:n], start:end] = pool.gpus_per_node
            last_end[nodes[:n]] = end
    return kept
