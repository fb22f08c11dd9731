"""`window.first_window_numpy` as loops that numba compiles (the `fast` extra). A node's window
is read from its last slot back to its last blocked one, so a busy node costs a slot or two
instead of the whole window, and nothing is allocated per window. Compiled on first use and
cached on disk."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit


def first_window_loops(
    cols: npt.NDArray[np.signedinteger[Any]],
    s: int,
    duration: int,
    latest_end: int,
    need: int,
    k: int,
    best: bool,
) -> tuple[int, npt.NDArray[np.int64]]:
    nodes = cols.shape[1]
    tightest = best and k == 1
    last_bad = np.zeros(nodes, np.int64)  # per node: 1 + its last blocked row, 0 if it fits
    chosen = np.empty(k, np.int64)
    while s + duration <= latest_end:
        fitting, lowest = 0, np.iinfo(np.int64).max
        for n in range(nodes):
            last_bad[n], low = 0, lowest  # from the tightest so far: only a tighter node moves it
            for r in range(duration - 1, -1, -1):
                free = cols[s + r, n]
                if free < need:
                    last_bad[n] = r + 1
                    break
                low = min(low, free)
            if last_bad[n] > 0:
                continue
            if not tightest:  # the first k nodes that fit
                chosen[fitting] = n
                fitting += 1
                if fitting == k:
                    return s, chosen
            elif low < lowest:  # the tightest node, the first of equals
                lowest, chosen[0], fitting = low, n, 1
                if low == need:
                    return s, chosen
        if tightest and fitting:
            return s, chosen
        s = s + (last_bad.min() if k == 1 else np.sort(last_bad)[k - 1])
    return -1, np.empty(0, np.int64)


first_window_jit = njit(cache=True, nogil=True)(first_window_loops)
