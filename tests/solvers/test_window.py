"""The window search: a hand grid, the compiled and numpy searches against each other and against
every window tried one by one, the same plans whichever search the solvers use, and the numpy
search when numba is missing."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from horizon_opt.model.instance import Gang, Instance
from horizon_opt.model.windows import StartDomain
from horizon_opt.plans.plan import Plan
from horizon_opt.solvers import grid, solve, window
from horizon_opt.solvers.grid import CapacityGrid, Fit
from horizon_opt.solvers.window import COMPILED_FROM, first_window_numpy, search
from horizon_opt.solvers.window_jit import first_window_jit, first_window_loops

SEARCHES = {
    "numpy": first_window_numpy,
    "compiled": first_window_jit,
    "loops": first_window_loops,  # the compiled search's source, run by Python
}

Grid = npt.NDArray[np.int16]


def brute_force(
    cols: Grid, s: int, duration: int, latest_end: int, need: int, k: int, best: bool
) -> tuple[int, list[int]]:
    """Every start in turn, every node's whole window: the definition, slowly."""
    for start in range(s, latest_end - duration + 1):
        low = cols[start : start + duration].min(axis=0)
        fits = [n for n in range(cols.shape[1]) if low[n] >= need]
        if len(fits) >= k:
            if best and k == 1:
                fits = sorted(fits, key=lambda n: (low[n], n))
            return start, fits[:k]
    return -1, []


# Free GPUs of 3 nodes over 6 slots (rows are slots).
HAND = np.array(
    [
        [8, 2, 8],
        [8, 4, 0],
        [0, 4, 8],
        [8, 4, 8],
        [8, 6, 8],
        [8, 8, 8],
    ],
    dtype=np.int16,
)


@pytest.mark.parametrize("name", sorted(SEARCHES))
def test_hand_grid(name: str) -> None:
    find = SEARCHES[name]
    # 4 GPUs for 3 slots on one node: node 1 holds 4+ from slot 1 (4, 4, 4); node 0 is blocked
    # at slot 2, node 2 at slot 1, so the earliest start is 1, on node 1.
    start, nodes = find(HAND, 0, 3, 6, 4, 1, False)
    assert (start, nodes.tolist()) == (1, [1])
    # 8 GPUs for 2 slots: node 0 at slot 0 (8, 8).
    start, nodes = find(HAND, 0, 2, 6, 8, 1, False)
    assert (start, nodes.tolist()) == (0, [0])
    # Two nodes with 8 for 2 slots: nodes 0 and 2 both hold 8 only from slot 3 (node 0 is
    # blocked at 2, node 2 at 1), so slot 3, nodes 0 and 2.
    start, nodes = find(HAND, 0, 2, 6, 8, 2, False)
    assert (start, nodes.tolist()) == (3, [0, 2])
    # Tightest first: 4 GPUs for 1 slot at slot 3: node 1 (4 free) before nodes 0 and 2 (8).
    start, nodes = find(HAND, 3, 1, 6, 4, 1, True)
    assert (start, nodes.tolist()) == (3, [1])
    # Three nodes with 8 for 2 slots: node 1 has 8 only at slot 5, so the window would be
    # slots 5-6, ending at 7, past the end (6): none.
    assert find(HAND, 0, 2, 6, 8, 3, False)[0] == -1


@pytest.mark.parametrize("seed", range(40))
def test_searches_agree_with_the_definition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    slots, nodes = int(rng.integers(1, 30)), int(rng.integers(1, 12))
    cols = rng.choice([0, 2, 4, 6, 8], size=(slots, nodes), p=[0.2, 0.1, 0.2, 0.1, 0.4])
    cols = cols.astype(np.int16)
    for _ in range(25):
        duration = int(rng.integers(1, slots + 1))
        s = int(rng.integers(0, slots))
        latest_end = int(rng.integers(s, slots + 1))
        need, k = int(rng.choice([1, 2, 4, 8])), int(rng.integers(1, min(nodes, 4) + 1))
        best = bool(rng.integers(0, 2))
        expected = brute_force(cols, s, duration, latest_end, need, k, best)
        for name, find in SEARCHES.items():
            start, chosen = find(cols, s, duration, latest_end, need, k, best)
            assert (int(start), chosen.tolist()) == expected, (name, s, duration, need, k, best)


def test_the_compiled_search_is_used_on_large_grids() -> None:
    assert search(COMPILED_FROM) is first_window_jit
    assert search(COMPILED_FROM - 1) is first_window_numpy


def _plans(instance: Instance) -> dict[str, Plan]:
    return {name: solve(instance, name) for name in ("fifo", "greedy")}


def test_same_plans_with_either_search(any_instance: Instance, monkeypatch: Any) -> None:
    monkeypatch.setattr(grid, "search", lambda cells: first_window_jit)
    compiled = _plans(any_instance)
    monkeypatch.setattr(grid, "search", lambda cells: first_window_numpy)
    numpy_ = _plans(any_instance)
    for name, plan in compiled.items():
        ignore = {"wall_seconds"}
        assert plan.model_dump(exclude=ignore) == numpy_[name].model_dump(exclude=ignore)


def test_a_released_placement_makes_a_failed_search_succeed(tiny: Instance) -> None:
    # Pool a: 2 nodes x 4 GPUs, 4 slots, all free here. Both nodes taken for slots 0-3: a
    # 4-GPU, 2-slot gang fits nowhere (and the grid remembers that). Node a-1 given back: it
    # fits there from slot 0.
    a = tiny.pools[0]
    grid = CapacityGrid(tiny, np.full((len(tiny.node_names), tiny.slots), 4, dtype=np.int64))
    gang = Gang(nodes=1, gpus_per_node=4, whole=True)
    for n in a.node_range:
        grid.occupy(Fit(a.index, 0, (n,)), gang, 4, None)
    assert grid.earliest_in_pool(a, gang, 2, StartDomain.span(0, 2), "first", None) is None
    grid.release(Fit(a.index, 0, (a.first_node + 1,)), gang, 4, None)
    assert grid.earliest_in_pool(a, gang, 2, StartDomain.span(0, 2), "first", None) == Fit(
        a.index, 0, (a.first_node + 1,)
    )


def test_without_numba_the_numpy_search_runs(monkeypatch: Any) -> None:
    window._compiled.cache_clear()
    try:
        with monkeypatch.context() as m:
            # A None entry in sys.modules makes the import fail, as without the `fast` extra.
            m.setitem(sys.modules, "horizon_opt.solvers.window_jit", None)
            assert search(COMPILED_FROM) is first_window_numpy
    finally:
        window._compiled.cache_clear()
    assert search(COMPILED_FROM) is first_window_jit
