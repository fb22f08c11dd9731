"""The earliest window where a gang fits on one pool's grid of free GPUs: the inner loop of every
list schedule (fifo, greedy, cpsat's starts and repairs) and of the cause codes.

Two implementations give the same answer. With numba installed (the `fast` extra) the search
on a large grid runs as compiled loops that stop reading a node at its last blocked slot and
allocate nothing per window; otherwise, as numpy reductions over whole windows. Both jump past
the last blocked slot of the nodes that could fit next, so a search costs few windows however
late the fit is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

Grid = npt.NDArray[np.signedinteger[Any]]  # [slots, nodes] free GPUs of one pool
Nodes = npt.NDArray[np.int64]  # pool-local node indices
Search = Callable[[Grid, int, int, int, int, int, bool], tuple[int, Nodes]]

NONE: Nodes = np.empty(0, dtype=np.int64)


def first_window_numpy(
    cols: Grid, s: int, duration: int, latest_end: int, need: int, k: int, best: bool
) -> tuple[int, Nodes]:
    """The earliest start >= s ending by `latest_end` where `k` nodes keep `need` GPUs free for
    `duration` slots, and those nodes (the first k; with `best` and k == 1, the tightest), or
    (-1, none)."""
    rows = np.arange(1, duration + 1, dtype=cols.dtype)[:, None]
    while s + duration <= latest_end:
        window = cols[s : s + duration]
        low = window.min(axis=0)
        fits = np.flatnonzero(low >= need)
        if len(fits) >= k:
            if best and k == 1:
                # Tightest node first: keeps emptier nodes whole for large gangs.
                fits = fits[np.argsort(low[fits], kind="stable")]
            return s, fits[:k].astype(np.int64)
        # A node can next fit just past the last slot of this window where it is too full
        # (0 for a node that fits throughout): (window < need) * rows, maxed over the rows.
        last_bad = ((window < need) * rows).max(axis=0)
        if k == 1:  # every node is too full somewhere
            s += int(last_bad.min())
        else:
            s = int(np.partition(s + last_bad, k - 1)[k - 1])
    return -1, NONE


# Grid cells (nodes x slots) from which the compiled search is used: below, loading numba (a
# fixed cost per process) takes longer than the numpy search it would replace.
COMPILED_FROM = 100_000


def search(cells: int) -> Search:
    """The search for a grid of `cells` entries: compiled when numba is installed and the grid is
    large enough to repay loading it, else numpy."""
    return _compiled() if cells >= COMPILED_FROM else first_window_numpy


@functools.cache
def _compiled() -> Search:
    try:
        from horizon_opt.solvers.window_jit import first_window_jit
    except ImportError:
        return first_window_numpy
    compiled: Search = first_window_jit
    return compiled
