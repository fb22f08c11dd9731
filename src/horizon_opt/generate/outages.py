"""Maintenance windows, kept only where they leave inference its reservation, so every generated
instance validates."""

from __future__ import annotations

import numpy as np

from horizon_opt.generate.aliases import InstanceData, IntArray, Rng
from horizon_opt.generate.sizes import Size


def make_outages(
    size: Size, rng: Rng, reserved: dict[str, IntArray]
) -> tuple[list[InstanceData], dict[str, IntArray]]:
    """Maintenance windows that never leave inference short. Returns them and nodes up per pool."""
    up = {p.name: np.full(size.slots, p.nodes, dtype=np.int64) for p in size.pools}
    by_node: set[str] = set()
    outages: list[InstanceData] = []
    weights = np.array([p.nodes for p in size.pools], dtype=np.float64)
    for _ in range(size.outages):
        pool = size.pools[int(rng.choice(len(size.pools), p=weights / weights.sum()))]
        node = f"{pool.name}-{int(rng.integers(pool.nodes))}"
        length = max(1, round(float(rng.uniform(4, 24)) * 60 / size.slot_minutes))
        start = int(rng.integers(0, max(1, size.slots - length)))
        end = min(size.slots, start + length)
        trial = up[pool.name].copy()
        trial[start:end] -= 1
        # Replica sizes are powers of two dividing the node, so first-fit decreasing packs them
        # perfectly: the total is the only test needed.
        if node in by_node or np.any(reserved[pool.name] > trial * pool.gpus_per_node):
            continue
        by_node.add(node)
        up[pool.name] = trial
        outages.append({"node": node, "start": start, "end": end})
    return outages, up
