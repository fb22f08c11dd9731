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
    def __init__(self, instance: Instance, free: IntArray) -> None:
        self.instance = instance
        self.free = free.astype(np.int64).copy()  # [N, S], mutated as jobs are placed

    def earliest_in_pool(
        self, pool: Pool, gpus: int, duration: int, t0: int, latest_end: int, choice: NodeChoice
    ) -> Fit | None:
        """Earliest start >= t0 with end <= latest_end where the gang fits on `pool`."""
        k = pool.nodes_needed(gpus)
        if k is None:
            return None
        need = gpus if k == 1 else pool.gpus_per_node
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
            bad = window < need
            last_bad = duration - 1 - np.argmax(bad[:, ::-1], axis=1)
            next_start = np.where(bad.any(axis=1), s + last_bad + 1, s)
            s = int(np.partition(next_start, k - 1)[k - 1])
        return None

    def occupy(self, fit: Fit, gpus: int, duration: int) -> None:
        pool = self.instance.pools[fit.pool]
        per_node = gpus if len(fit.nodes) == 1 else pool.gpus_per_node
        self.free[list(fit.nodes), fit.start : fit.start + duration] -= per_node
