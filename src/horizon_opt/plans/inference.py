"""Where inference replicas sit: node-by-node layouts of the reserved replicas per slot.

Solvers place batch work into the capacity that a layout leaves free. Two policies exist:
`static_peak_layout` (what FIFO schedulers do: reserve every service's peak all day) and
`elastic_layout` (reserve exactly `req[v][t]` per slot). Both pack replicas first-fit onto the
lowest-index nodes that are up, so a demand trough frees whole nodes at the top of the pool, where
large gangs can use them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from horizon_opt.model.instance import Instance
from horizon_opt.model.packing import IntArray, pack
from horizon_opt.plans.plan import Plan


@dataclass(frozen=True)
class Layout:
    """Replicas per (service, node of its pool, slot) and the GPUs that stay free for batch work."""

    replicas: tuple[IntArray, ...]  # per service: [nodes of its pool, S]
    free: IntArray  # [N, S] GPUs free for batch work (0 while a node is down)


def _layout(
    instance: Instance, targets: list[IntArray], file_order: bool, kept: IntArray | None = None
) -> Layout:
    """Pack `targets[v][t]` replicas of each service at every slot; never fewer than req.
    With `kept` ([N, S] GPUs), replicas avoid those GPUs at every slot where the rest suffices."""
    free = instance.capacity.astype(np.int64).copy()
    replicas = [
        np.zeros((instance.pools[s.pool].nodes, instance.slots), dtype=np.int64)
        for s in instance.services
    ]
    for pool in instance.pools:
        members = [s for s in instance.services if s.pool == pool.index]
        if not members:
            continue
        rows = slice(pool.first_node, pool.first_node + pool.nodes)
        for t in range(instance.slots):
            demands = [(s.gpus_per_replica, int(targets[s.index][t])) for s in members]
            order = list(range(len(members))) if file_order else None
            held = 0 if kept is None else kept[rows, t]
            placed, left = pack(free[rows, t] - held, demands, order)
            left = left + held
            if any(placed[i].sum() < s.req[t] for i, s in enumerate(members)):
                # File order (or `kept`) left a service short: its requirement goes first, on
                # every GPU, then the top-up.
                need = [(s.gpus_per_replica, int(s.req[t])) for s in members]
                placed, left = pack(free[rows, t], need)
                extra = [(s.gpus_per_replica, int(targets[s.index][t] - s.req[t])) for s in members]
                more, left = pack(left, extra, order)
                placed = placed + more
            for i, s in enumerate(members):
                replicas[s.index][:, t] = placed[i]
            free[rows, t] = left
    for r in replicas:
        r.setflags(write=False)
    free.setflags(write=False)
    return Layout(tuple(replicas), free)


def elastic_layout(instance: Instance, around: IntArray | None = None) -> Layout:
    """Reserve exactly `req[v][t]` replicas at each slot (largest replicas packed first).

    `around`: [N, S] GPUs that planned batch gangs will use (`guide.gang_reservation`). Replicas
    then go first-fit onto the rest of each pool, and onto those GPUs only at slots where the
    rest is too small. Without it, replicas stack on the lowest nodes, so the nodes they leave
    whole change with demand, and a long whole-node gang needs nodes that stay whole across
    every peak of its run, which the stacked layout often does not leave.
    """
    return _layout(instance, [s.req for s in instance.services], file_order=False, kept=around)


def plan_layout(instance: Instance, plan: Plan) -> Layout | None:
    """The layout of a plan's inference blocks, when it is one for `instance`: every block on a
    node of its service's pool, at least `req` replicas at every slot, and room for them on
    every node (GPUs that placed jobs hold included). So a re-plan can keep the previous plan's
    reservation, and with it every start that the reservation allowed."""
    by_name = {s.name: s for s in instance.services}
    replicas = [
        np.zeros((instance.pools[s.pool].nodes, instance.slots), dtype=np.int64)
        for s in instance.services
    ]
    for b in plan.inference:
        s = by_name.get(b.service)
        n = instance.node_index.get(b.node)
        if s is None or n is None or int(instance.node_pool[n]) != s.pool or b.end > instance.slots:
            return None
        replicas[s.index][n - instance.pools[s.pool].first_node, b.start : b.end] += b.replicas
    free = instance.capacity.astype(np.int64).copy()
    for s in instance.services:
        pool = instance.pools[s.pool]
        if (replicas[s.index].sum(axis=0) < s.req).any():
            return None
        free[pool.first_node : pool.first_node + pool.nodes] -= (
            replicas[s.index] * s.gpus_per_replica
        )
    if (free < 0).any():
        return None
    for r in replicas:
        r.setflags(write=False)
    free.setflags(write=False)
    return Layout(tuple(replicas), free)


def static_peak_layout(instance: Instance) -> Layout:
    """FIFO's static reservation: every service's peak at every slot, in file order, first-fit."""
    peaks = [np.full(instance.slots, int(s.req.max(initial=0))) for s in instance.services]
    return _layout(instance, peaks, file_order=True)
