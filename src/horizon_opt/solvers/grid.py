"""Free GPUs per node and slot, and the search for the earliest window where a gang fits.

Shared by the list schedules (fifo, greedy, cpsat's starts and ejection moves) and the cause
codes. The window search itself is `window.search`'s: it inspects only the window [s, s + d) of
the pool's nodes and jumps s past the last blocking slot, so it never rescans the whole grid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from horizon_opt.instance import Gang, Instance, IntArray, Job, Pool
from horizon_opt.solvers.window import search

NodeChoice = Literal["first", "best"]
Failure = tuple[int, int, int, int, int]


@dataclass(frozen=True)
class Fit:
    pool: int
    start: int
    nodes: tuple[int, ...]  # global node indices


class CapacityGrid:
    """Free GPUs that decrease as placements are made, so a failed search proves later, harder
    ones fail too, until a placement is released."""

    def __init__(self, instance: Instance, free: IntArray) -> None:
        self.instance = instance
        # [S, N], mutated as jobs are placed. Time-major and small (GPUs per node fit int16):
        # a window's per-node minimum then reduces over contiguous rows.
        small = free.max(initial=0) < np.iinfo(np.int16).max
        dtype = np.int16 if small else np.int64
        self.free: npt.NDArray[np.signedinteger[Any]] = np.ascontiguousarray(free.T, dtype=dtype)
        self._search = search(self.free.size)
        # Per pool, the Pareto front of failed searches as (need, nodes, duration, t0,
        # -latest_end): a search fails if some failed one is <= it in every field.
        self.failed: list[list[Failure]] = [[] for _ in instance.pools]

    def _known_to_fail(self, pool: int, query: Failure) -> bool:
        need, k, d, t0, neg_latest = query
        for n, kk, dd, tt, ll in self.failed[pool]:
            if n <= need and kk <= k and dd <= d and tt <= t0 and ll <= neg_latest:
                return True
        return False

    def _remember_failure(self, pool: int, query: Failure) -> None:
        # Keep only the Pareto front: drop rows the new failure makes redundant.
        rows = self.failed[pool]
        need, k, d, t0, neg_latest = query
        rows[:] = [
            r
            for r in rows
            if not (r[0] >= need and r[1] >= k and r[2] >= d and r[3] >= t0 and r[4] >= neg_latest)
        ]
        rows.append(query)

    def earliest_in_pool(
        self, pool: Pool, gang: Gang, duration: int, t0: int, latest_end: int, choice: NodeChoice
    ) -> Fit | None:
        """Earliest start >= t0 with end <= latest_end where the gang fits on `pool`."""
        s = max(t0, 0)
        if s + duration > latest_end:
            return None
        k, need = gang.nodes, gang.gpus_per_node
        query = (need, k, duration, t0, -latest_end)
        if self._known_to_fail(pool.index, query):
            return None
        cols = self.free[:, pool.first_node : pool.first_node + pool.nodes]
        start, nodes = self._search(cols, s, duration, latest_end, need, k, choice == "best")
        if start < 0:
            self._remember_failure(pool.index, query)
            return None
        return Fit(pool.index, int(start), tuple(int(pool.first_node + n) for n in nodes))

    def occupy(self, fit: Fit, gang: Gang, duration: int) -> None:
        for n in fit.nodes:  # one column at a time: a slice, not a fancy index
            self.free[fit.start : fit.start + duration, n] -= gang.gpus_per_node

    def release(self, fit: Fit, gang: Gang, duration: int) -> None:
        """Give a placement's GPUs back; the pool's failed searches may now succeed."""
        for n in fit.nodes:
            self.free[fit.start : fit.start + duration, n] += gang.gpus_per_node
        self.failed[fit.pool] = []


def earliest_start(grid: CapacityGrid, job: Job, t0: int, latest_end: int) -> Fit | None:
    """The earliest-starting fit from slot t0 that ends by `latest_end`, over the job's pools
    (ties: fastest pool, then first)."""
    best: Fit | None = None
    for p, d in job.fastest_first:
        limit = latest_end if best is None else min(latest_end, best.start + d)
        fit = grid.earliest_in_pool(grid.instance.pools[p], job.gangs[p], d, t0, limit, "first")
        if fit is not None and (best is None or fit.start < best.start):
            best = fit
    return best
