"""First-fit packing of inference replicas onto nodes: one rule for the compiler's feasibility
check and for the solvers' layouts, so a layout never fails where the compiler said it fits."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


def first_fit(free: IntArray, gpus_per_replica: int, count: int) -> IntArray:
    """Replicas per node when `count` replicas are placed one by one on the first node with room.

    `free` holds each node's free GPUs (it is not modified). The result may place fewer than
    `count` replicas when they do not fit; the caller compares its sum with `count`.
    """
    cap = free // gpus_per_replica
    before = np.cumsum(cap) - cap
    take: IntArray = np.minimum(cap, np.maximum(0, count - before))
    return take


def pack(
    free: IntArray, demands: list[tuple[int, int]], order: list[int] | None = None
) -> tuple[IntArray, IntArray]:
    """First-fit pack several services (gpus_per_replica, count) onto nodes with `free` GPUs.

    Services go in `order` (default: largest replica first, the order that packs best).
    Returns (replicas[service, node], remaining free GPUs per node).
    """
    free = free.copy()
    placed = np.zeros((len(demands), len(free)), dtype=np.int64)
    if order is None:
        order = sorted(range(len(demands)), key=lambda i: -demands[i][0])
    for i in order:
        gpr, count = demands[i]
        if count <= 0:
            continue
        take = first_fit(free, gpr, count)
        placed[i] = take
        free -= take * gpr
    return placed, free
