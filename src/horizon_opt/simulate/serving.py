"""Inference in a replay's world: the plan's reservation, the replicas that ran and the demand
they served. Each slot the world's demand takes the reserved replicas first, then free GPUs
(`extra`), then preempts batch work through the replayer. Extra replicas take free GPUs that
no start planned at the slot is about to take before those that one is: a replica that lands
on a starting gang's GPUs blocks it, while GPUs beside it may sit idle.

The reservation is inference's on its pool, not one service's: a reserved replica its service
does not need at the slot (demand below the reservation) does not run, and its GPUs serve another
service of the pool above its own reservation before any free GPU or batch job is taken, as a
serving stack's autoscaler moves replicas between the services of a GPU type."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from horizon_opt.model.instance import FloatArray, Instance, IntArray, Service
from horizon_opt.plans.inference import Layout
from horizon_opt.simulate.world import World

Preempt = Callable[[int, int, int, dict[int, int]], bool]
"""`(pool, slot, GPUs one replica needs, room per node) -> whether batch work was stopped`."""


class Serving:
    """The reservation in force (`reserved` GPUs per node and slot, the layout's replicas; `held`,
    what it was at each slot served), and per service the replicas that ran ([nodes of its pool,
    S]) and the demand served ([S])."""

    def __init__(self, instance: Instance, world: World) -> None:
        self.inst = instance
        self.world = world
        self.ran_replicas = [
            np.zeros((instance.pools[s.pool].nodes, instance.slots), dtype=np.int64)
            for s in instance.services
        ]
        self.served: list[FloatArray] = [np.zeros(instance.slots) for _ in instance.services]
        self.layout_replicas: tuple[IntArray, ...] = ()
        self.replicas: dict[int, IntArray] = {}  # service -> [S] reserved replicas
        self.reserved: IntArray = np.zeros((instance.num_nodes, instance.slots), dtype=np.int64)
        self.held: IntArray = np.zeros_like(self.reserved)  # the reservation in force, by slot
        # what the plan's inference leaves to batch work, [N, the plan's slots]
        self.batch_room: IntArray = instance.capacity.astype(np.int64)
        self.extra: IntArray = np.zeros(instance.num_nodes, dtype=np.int64)  # at this slot

    def adopt(self, layout: Layout) -> None:
        """Take a plan's inference layout (it may reach past the replayed horizon)."""
        inst = self.inst
        self.reserved = inst.capacity - layout.free[:, : inst.slots]
        self.batch_room = layout.free
        self.layout_replicas = layout.replicas
        self.replicas = {s.index: layout.replicas[s.index].sum(axis=0) for s in inst.services}

    def serve(
        self,
        t: int,
        batch_gpus: Callable[[], IntArray],
        preempt: Preempt,
        starting: IntArray | None = None,
    ) -> tuple[float, float, float, bool]:
        """Inference at `t`: the reserved replicas first, then free GPUs (those that `starting`,
        [N] GPUs the plan's starts at `t` take, leaves first), then `preempt(pool, t, gpus,
        room)` of batch work, `room` the GPUs per node a replica could take now. Returns (GPUs
        serving demand, replicas of demand, replicas of demand short, whether a job was
        preempted)."""
        serving = demand = short = 0.0
        preempted = False
        self.extra = np.zeros(self.inst.num_nodes, dtype=np.int64)
        self.held[:, t] = self.reserved[:, t]
        needs = [math.ceil(float(self.world.demand[s.index][t]) - 1e-9) for s in self.inst.services]
        idle = self._run_reserved(t, needs)
        for s in self.inst.services:
            actual = float(self.world.demand[s.index][t])
            need = needs[s.index]
            missing = max(need - int(self.replicas[s.index][t]), 0)
            rows = list(self.inst.pools[s.pool].node_range)
            ran = self.ran_replicas[s.index][:, t]
            while missing > 0:
                batch = batch_gpus()  # (only a preemption changes it)
                for keep in (starting, None):
                    missing = self._extra(s, t, rows, missing, ran, batch, keep, idle)
                if missing == 0:
                    break
                free = np.maximum(self._free(t, rows, batch), 0)
                room = {n: int(idle[n] + f) for n, f in zip(rows, free, strict=True)}
                if not preempt(s.pool, t, s.gpus_per_replica, room):
                    break
                preempted = True
            got = min(actual, need - missing)
            self.served[s.index][t] = got
            serving += got * s.gpus_per_replica
            demand += actual
            short += actual - got
        return serving, demand, short, preempted

    def _run_reserved(self, t: int, needs: list[int]) -> IntArray:
        """Run each service's reserved replicas at `t`, up to its `needs` (the last nodes of its
        pool give up the rest first); returns [N] the GPUs of the replicas that do not run."""
        idle = np.zeros(self.inst.num_nodes, dtype=np.int64)
        for s in self.inst.services:
            rows = list(self.inst.pools[s.pool].node_range)
            ran = self.ran_replicas[s.index][:, t]
            ran += self.layout_replicas[s.index][:, t]
            surplus = int(ran.sum()) - needs[s.index]
            for k in reversed(range(len(rows))):
                if surplus <= 0:
                    break
                give = min(int(ran[k]), surplus)
                ran[k] -= give
                idle[rows[k]] += give * s.gpus_per_replica
                surplus -= give
        return idle

    def _free(self, t: int, rows: list[int], batch: IntArray) -> IntArray:
        """GPUs of `rows` at `t` that neither batch work, the reservation nor an extra replica
        holds (callers clamp it at 0)."""
        return self.inst.capacity[rows, t] - batch[rows] - self.reserved[rows, t] - self.extra[rows]

    def _extra(
        self,
        s: Service,
        t: int,
        rows: list[int],
        missing: int,
        ran: IntArray,
        batch: IntArray,
        keep: IntArray | None,
        idle: IntArray,
    ) -> int:
        """Place up to `missing` replicas of `s` on the `idle` reserved GPUs (taking them) and free
        GPUs of `rows`, leaving `keep` GPUs per node free; returns how many are still missing."""
        free = self._free(t, rows, batch)
        if keep is not None:
            free = free - keep[rows]
        for k, n in enumerate(rows):
            fit = min((int(idle[n]) + max(int(free[k]), 0)) // s.gpus_per_replica, missing)
            taken = min(int(idle[n]), fit * s.gpus_per_replica)
            idle[n] -= taken
            self.extra[n] += fit * s.gpus_per_replica - taken
            ran[k] += fit
            missing -= fit
        return missing
