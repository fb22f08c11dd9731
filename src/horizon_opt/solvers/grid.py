"""Free GPUs per node and slot, and the search for the earliest window where a gang fits.

Shared by the list-scheduling solvers (fifo, greedy). The search never rescans the whole grid:
it inspects only the window [s, s + d) of the pool's nodes and jumps s past the last blocking
slot, so a job costs O(nodes x duration) per jump and there are few jumps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from horizon_opt.inference import IntArray
from horizon_opt.instance import Instance, Pool

NodeChoice = Literal["first", "best"]


@dataclass(frozen=True)
class Fit:
    pool: int
    start: int
    nodes: tuple[int, ...]  # global node indices


class CapacityGrid:
    """Free GPUs that only ever decrease, so a failed search proves later, harder ones fail too."""

    def __init__(self, instance: Instance, free: IntArray) -> None:
        self.instance = instance
        self.free = free.astype(np.int64).copy()  # [N, S], mutated as jobs are placed
        # per pool: (GPUs per node, nodes) -> Pareto front of (duration, t0, latest_end) that failed
        self.failed: list[dict[tuple[int, int], list[tuple[int, int, int]]]] = [
            {} for _ in instance.pools
        ]

    def _known_to_fail(self, pool: int, need: int, k: int, d: int, t0: int, latest: int) -> bool:
        for (n, kk), rows in self.failed[pool].items():
            if n <= need and kk <= k:
                for dd, tt, ll in rows:
                    if dd <= d and tt <= t0 and ll >= latest:
                        return True
        return False

    def _remember_failure(self, pool: int, need: int, k: int, d: int, t0: int, latest: int) -> None:
        rows = self.failed[pool].setdefault((need, k), [])
        # Keep only the Pareto front: drop rows the new failure makes redundant.
        rows[:] = [r for r in rows if not (d <= r[0] and t0 <= r[1] and latest >= r[2])]
        rows.append((d, t0, latest))

    def earliest_in_pool(
        self, pool: Pool, gpus: int, duration: int, t0: int, latest_end: int, choice: NodeChoice
    ) -> Fit | None:
        """Earliest start >= t0 with end <= latest_end where the gang fits on `pool`."""
        k = pool.nodes_needed(gpus)
        if k is None:
            return None
        need = gpus if k == 1 else pool.gpus_per_node
        if self._known_to_fail(pool.index, need, k, duration, t0, latest_end):
            return None
        rows = self.free[pool.first_node : pool.first_node + pool.nodes]
        s = max(t0, 0)
        while s + duration <= latest_end:
            window = rows[:, s : s + duration]
            low = window.min(axis=1)
            fits = np.flatnonzero(low >= need)
            if len(fits) >= k:
                if choice == "best" and k == 1:
                    # Tightest node first: keeps emptier nodes whole for large gangs.
                    fits = fits[np.argsort(low[fits], kind="stable")]
                chosen = tuple(int(pool.first_node + n) for n in fits[:k])
                return Fit(pool.index, s, chosen)
            # A node can next fit just past the last slot of this window where it is too full.
            last_bad = duration - np.argmax(window[:, ::-1] < need, axis=1)
            next_start = np.where(low < need, s + last_bad, s)
            s = int(next_start.min() if k == 1 else np.partition(next_start, k - 1)[k - 1])
        self._remember_failure(pool.index, need, k, duration, t0, latest_end)
        return None

    def occupy(self, fit: Fit, gpus: int, duration: int) -> None:
        pool = self.instance.pools[fit.pool]
        per_node = gpus if len(fit.nodes) == 1 else pool.gpus_per_node
        self.free[list(fit.nodes), fit.start : fit.start + duration] -= per_node
