"""Ejection moves: make room for a waiting job by evicting the cheapest work in its way.

The LNS re-solves small windows exactly, so it rarely frees the several whole nodes, over a long
run, that a big waiting gang needs: any window that large is too big to solve in time. This move
does it without CP-SAT. For a waiting job it finds the start and nodes where the work that would
have to leave is worth the least, evicts that work, places the job, puts the evicted jobs back
wherever they fit earliest (list scheduling, as greedy does), and keeps the result only when the
plan's pwo went up.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from horizon_opt.model.instance import FloatArray, Instance, IntArray, topological_order
from horizon_opt.solvers.assemble import Placement
from horizon_opt.solvers.cpsat.incumbent import Incumbent
from horizon_opt.solvers.grid import CapacityGrid, Fit
from horizon_opt.solvers.listsched import Rank, earliest_end

PINNED = 1e18  # eviction cost of a job that a scheduled job runs after: it stays


@dataclass(frozen=True)
class Window:
    cost: float  # value of the work in the way (an estimate: shared gangs count per node)
    pool: int
    start: int
    nodes: tuple[int, ...]


@dataclass(frozen=True)
class PoolWork:
    """One row per (scheduled job, node) on a pool: what evicting it from that node costs."""

    row: IntArray  # node index within the pool
    start: IntArray
    end: IntArray
    cost: FloatArray  # the job's earned value, or PINNED


@dataclass
class PassResult:
    tries: int = 0
    hits: int = 0
    gained: float = 0.0


class Ejector:
    """Ejection moves on one incumbent, putting evicted jobs back in `ranks` order.

    Per waiting job, the `candidates` cheapest eviction windows are tried, cheapest first, and
    none whose evicted value exceeds the job's by more than `max_cost_ratio`.
    """

    def __init__(
        self,
        inc: Incumbent,
        ranks: Sequence[Rank],
        candidates: int,
        max_cost_ratio: float,
    ) -> None:
        self.inc = inc
        self.candidates = candidates
        self.max_cost_ratio = max_cost_ratio
        self.inst: Instance = inc.instance
        order = topological_order(self.inst, key=ranks.__getitem__)
        self.position = {q: i for i, q in enumerate(order)}  # evicted jobs go back in this order
        # Window scans over what inference leaves free, cached while that stays the same.
        self._blocked: dict[tuple[int, int], IntArray] = {}
        self._blocked_free = inc.free
        self._work: tuple[int, list[PoolWork]] | None = None  # (incumbent version, per pool)
        # What the incumbent leaves free and its jobs per node, kept in step by the moves and
        # rebuilt only when the incumbent changed otherwise: a copy per try costs the whole
        # cluster's grid, however small the move.
        self._state: tuple[int, CapacityGrid, dict[int, set[int]]] | None = None

    def _blocked_prefix(self, pool: int, need: int) -> IntArray:
        """[nodes, S + 1] running count of slots where inference leaves fewer than `need` GPUs."""
        if self.inc.free is not self._blocked_free:  # the incumbent moved to another layout
            self._blocked, self._blocked_free = {}, self.inc.free
        key = (pool, need)
        if key not in self._blocked:
            p = self.inst.pools[pool]
            free = self.inc.free[p.first_node : p.first_node + p.nodes]
            prefix = np.zeros((p.nodes, self.inst.slots + 1), dtype=np.int64)
            np.cumsum(free < need, axis=1, out=prefix[:, 1:])
            self._blocked[key] = prefix
        return self._blocked[key]

    def _work_by_pool(self) -> list[PoolWork]:
        """Per pool, the work on its nodes; rebuilt only when the incumbent changed."""
        inc, inst = self.inc, self.inst
        if self._work is None or self._work[0] != inc.version:
            rows: list[list[tuple[int, int, int, float]]] = [[] for _ in inst.pools]
            for q, pl in inc.placements.items():
                first = inst.pools[pl.pool].first_node
                v = PINNED if self.pinned(q) else pl.earned(inst)
                for n in pl.nodes:
                    rows[pl.pool].append((n - first, pl.start, pl.end(inst), v))
            tables = []
            for r in rows:
                a = np.array(r, dtype=np.float64).reshape(-1, 4)
                n, start, end = a[:, :3].astype(np.int64).T
                tables.append(PoolWork(n, start, end, a[:, 3]))
            self._work = (inc.version, tables)
        return self._work[1]

    def windows(self, j: int) -> list[Window]:
        """The cheapest eviction windows for waiting job j, over its pools and starts."""
        inst, inc = self.inst, self.inc
        S, job, window = inst.slots, inst.jobs[j], inst.windows[j]
        t0 = window.after(inc.placements[q].end(inst) for q in job.after)
        found: list[Window] = []
        work = self._work_by_pool()
        for p, d in job.durations.items():
            pool = inst.pools[p]
            k, need = job.gangs[p].nodes, job.gangs[p].gpus_per_node
            starts = window.allowed(d, t0, window.latest_end).array()
            if not len(starts):
                continue
            prefix = self._blocked_prefix(p, need)
            fits = prefix[:, starts + d] == prefix[:, starts]  # [nodes, starts]
            # Work on node n overlaps [s, s + d) iff a - d < s < e: a difference array over s.
            row, a, e, v = work[p].row, work[p].start, work[p].end, work[p].cost
            lo = np.maximum(0, a - d + 1)
            keep = lo < e
            diff = np.zeros((pool.nodes, S + 1))
            np.add.at(diff, (row[keep], lo[keep]), v[keep])
            np.add.at(diff, (row[keep], e[keep]), -v[keep])
            cost = np.where(fits, np.cumsum(diff[:, : starts[-1] + 1], axis=1)[:, starts], np.inf)
            cheapest = np.partition(cost, k - 1, axis=0)[:k] if k < pool.nodes else cost
            total = cheapest.sum(axis=0)
            for i in np.argsort(total, kind="stable")[: self.candidates]:
                if total[i] >= PINNED:
                    break
                chosen = np.argsort(cost[:, i], kind="stable")[:k]
                nodes = tuple(sorted(int(pool.first_node + c) for c in chosen))
                found.append(Window(float(total[i]), p, int(starts[i]), nodes))
        found.sort(key=lambda w: (w.cost, w.start))
        return found[: self.candidates]

    def _synced(self) -> tuple[CapacityGrid, dict[int, set[int]]]:
        inc = self.inc
        if self._state is None or self._state[0] != inc.version:
            on_node: dict[int, set[int]] = {}
            for q, pl in inc.placements.items():
                for n in pl.nodes:
                    on_node.setdefault(n, set()).add(q)
            grid = CapacityGrid(self.inst, inc.free - inc.used)
            for q, pl in inc.placements.items():
                grid.hold(self.inst.jobs[q], pl.pool, pl.start, pl.end(self.inst))
            self._state = (inc.version, grid, on_node)
        return self._state[1], self._state[2]

    def _take(self, pl: Placement) -> None:
        assert self._state is not None
        job = self.inst.jobs[pl.job]
        fit = Fit(pl.pool, pl.start, pl.nodes)
        self._state[1].occupy(fit, job.gangs[pl.pool], job.durations[pl.pool], job.team)
        for n in pl.nodes:
            self._state[2].setdefault(n, set()).add(pl.job)

    def _give_back(self, pl: Placement) -> None:
        assert self._state is not None
        job = self.inst.jobs[pl.job]
        fit = Fit(pl.pool, pl.start, pl.nodes)
        self._state[1].release(fit, job.gangs[pl.pool], job.durations[pl.pool], job.team)
        for n in pl.nodes:
            self._state[2][n].discard(pl.job)

    def try_window(self, j: int, w: Window) -> float:
        """Apply the move; keep it and return the pwo gained when positive, else undo it."""
        inst, inc = self.inst, self.inc
        version = inc.version
        grid, on_node = self._synced()
        end = w.start + inst.jobs[j].durations[w.pool]
        near = sorted({q for n in w.nodes for q in on_node.get(n, ())})
        evicted = {
            q: pl
            for q, pl in ((q, inc.placements[q]) for q in near)
            if pl.start < end and pl.end(inst) > w.start
        }
        if j in inc.placements:  # it ran late, for nothing: it moves
            evicted[j] = inc.placements[j]
        moved = Placement(j, w.pool, w.start, w.nodes)
        for pl in evicted.values():
            self._give_back(pl)
        if not grid.within_limit(inst.jobs[j], w.pool, w.start, end):
            for pl in evicted.values():  # its team's limit is in the way, not this work
                self._take(pl)
            return 0.0
        inc.replace(list(evicted), {j: moved})
        self._take(moved)
        # Put the evicted jobs back (and try j's successors), best rank first.
        pending = (set(evicted) - {j}) | set(inst.successors[j])
        back: dict[int, Placement] = {}
        placed = ChainMap(back, inc.placements)
        for q in sorted(pending, key=self.position.__getitem__):
            if any(r not in placed for r in inst.jobs[q].after):
                continue
            job = inst.jobs[q]
            window = inst.windows[q]
            ready = window.after(placed[r].end(inst) for r in job.after)
            fit = earliest_end(grid, job, ready, window.latest_end)
            if fit is not None:
                back[q] = Placement(q, fit.pool, fit.start, fit.nodes)
                self._take(back[q])
        inc.replace([], back)
        self._state = (inc.version, grid, on_node)
        gained = sum(pl.earned(inst) for pl in back.values()) + inc.placements[j].earned(inst)
        gained -= sum(pl.earned(inst) for pl in evicted.values())
        if gained > 1e-9:
            return gained
        inc.replace([j, *back], evicted)
        for pl in [moved, *back.values()]:
            self._give_back(pl)
        for pl in evicted.values():
            self._take(pl)
        self._state = (inc.version, grid, on_node)
        if self._work is not None and self._work[0] == version:
            self._work = (inc.version, self._work[1])  # the same placements as before the try
        return 0.0

    def waiting(self, j: int) -> bool:
        """Not scheduled, or scheduled late for nothing, and free to move: its predecessors
        are scheduled and none of its successors is."""
        placements = self.inc.placements
        p = placements.get(j)
        if p is not None and (p.earned(self.inst) > 0 or self.pinned(j)):
            return False
        return all(q in placements for q in self.inst.jobs[j].after)

    def pinned(self, j: int) -> bool:
        """A scheduled job runs after j, so j stays where it is."""
        return any(s in self.inc.placements for s in self.inst.successors[j])

    def run_pass(self, weights: FloatArray, stop: Callable[[], bool]) -> PassResult:
        """One ejection try per waiting job, most valuable (by `weights`) first."""
        inst = self.inst
        result = PassResult()
        waiting = [j for j in range(len(inst.jobs)) if self.waiting(j)]
        waiting.sort(key=lambda j: (-weights[j], j))
        for j in waiting:
            if stop():
                break
            if not self.waiting(j):
                continue
            for w in self.windows(j):
                if w.cost >= self.max_cost_ratio * inst.jobs[j].value:
                    break
                result.tries += 1
                gained = self.try_window(j, w)
                if gained:
                    result.hits += 1
                    result.gained += gained
                    break
        return result
