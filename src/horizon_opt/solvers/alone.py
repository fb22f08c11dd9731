"""Where a job could run alone: the cluster with its outages and inference requirement, and no
other batch work, with inference free to sit on any node.

A fixed inference layout would answer "could it run here?" for that layout only (the elastic one
stacks replicas on the lowest nodes, so a gang that needs the nodes they sit on looks impossible
when another packing leaves room). Here, at each slot, the question is whether the requirement
still packs (`packing.pack`, exact when replica sizes divide each other, as GPU counts do) into
what the job leaves: a whole-node gang leaves every other up node, so any k nodes that stay up
and whole through the window are as good as any other k; a one-node gang leaves the rest of its
node, and nodes of equal free GPUs are alike.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

import numpy as np

from horizon_opt.model.instance import BoolArray, Gang, Instance, IntArray, Job
from horizon_opt.model.packing import pack
from horizon_opt.solvers.grid import Fit


def _run_lengths(ok: BoolArray) -> IntArray:
    """[..., S]: how many slots in a row from each slot on (last axis) are True."""
    S = ok.shape[-1]
    slot = np.arange(S)
    next_false = np.minimum.accumulate(np.where(ok, S, slot)[..., ::-1], axis=-1)[..., ::-1]
    out: IntArray = next_false - slot
    return out


def _window_min(values: IntArray, d: int) -> IntArray:
    """[..., S - d + 1]: the minimum over each window of d slots (last axis), by doubling: the
    minimum over 2^k slots, then over two such spans that cover the window."""
    span, length = values, 1
    while 2 * length <= d:
        span = np.minimum(span[..., :-length], span[..., length:])
        length *= 2
    n = values.shape[-1] - d + 1
    out: IntArray = np.minimum(span[..., :n], span[..., d - length : d - length + n])
    return out


class AloneView:
    """Earliest windows of a job alone on the cluster."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self._packs: dict[tuple[bytes, tuple[tuple[int, int], ...]], bool] = {}
        self._most_whole: dict[int, IntArray] = {}  # pool -> [S] whole nodes a gang may take
        self._most_gpus: dict[int, IntArray] = {}  # pool -> [nodes, S] GPUs one node may give
        self._run_lengths: dict[tuple[int, Gang], tuple[IntArray, IntArray]] = {}
        self._kth: dict[tuple[int, Gang], IntArray] = {}
        self._fits: dict[tuple[int, Gang, int], BoolArray] = {}

    def _rows(self, p: int) -> slice:
        pool = self.instance.pools[p]
        return slice(pool.first_node, pool.first_node + pool.nodes)

    def _demands(self, p: int, t: int) -> tuple[tuple[int, int], ...]:
        return tuple(
            (s.gpus_per_replica, int(s.req[t])) for s in self.instance.services if s.pool == p
        )

    def _packs_into(self, free: IntArray, demands: tuple[tuple[int, int], ...]) -> bool:
        key = (free.tobytes(), demands)
        if key not in self._packs:
            placed, _ = pack(free, list(demands))
            self._packs[key] = bool(all(placed[i].sum() >= n for i, (_, n) in enumerate(demands)))
        return self._packs[key]

    def most_whole(self, p: int) -> IntArray:
        """[S]: the most whole (up, unheld) nodes of pool p a gang may take at each slot with
        the requirement still packed on the rest."""
        if p not in self._most_whole:
            inst, rows = self.instance, self._rows(p)
            cap, whole = inst.capacity[rows], inst.whole[rows]
            out = whole.sum(axis=0).astype(np.int64)
            G = inst.pools[p].gpus_per_node
            services = [s for s in inst.services if s.pool == p]
            sizes = sorted({s.gpus_per_replica for s in services} | {G})
            chain = all(b % a == 0 for a, b in pairwise(sizes))
            if chain and ((cap == 0) | (cap == G)).all():
                # Equal nodes, replica sizes that divide each other and the node: first-fit
                # decreasing packs the requirement iff it is no larger than the nodes left.
                need = sum((s.req * s.gpus_per_replica for s in services), np.zeros(inst.slots))
                spare = (cap.sum(axis=0) - need) // G
                self._most_whole[p] = np.clip(np.minimum(out, spare), 0, None).astype(np.int64)
                return self._most_whole[p]
            for t in range(inst.slots):
                demands = self._demands(p, t)
                if not demands:
                    continue
                free, nodes = cap[:, t].copy(), np.flatnonzero(whole[:, t])
                lo, hi = 0, len(nodes)  # the largest k in [lo, hi] that packs
                while lo < hi:
                    k = (lo + hi + 1) // 2
                    taken = free.copy()
                    taken[nodes[:k]] = 0
                    if self._packs_into(taken, demands):
                        lo = k
                    else:
                        hi = k - 1
                out[t] = lo
            self._most_whole[p] = out
        return self._most_whole[p]

    def most_gpus(self, p: int) -> IntArray:
        """[nodes of pool p, S]: the most GPUs a one-node gang may take on each node at each
        slot with the requirement still packed on the rest."""
        if p not in self._most_gpus:
            inst, rows = self.instance, self._rows(p)
            cap = inst.capacity[rows].astype(np.int64)
            out = cap.copy()
            for t in range(inst.slots):
                demands = self._demands(p, t)
                if not demands:
                    continue
                free = cap[:, t]
                for c in np.unique(free[free > 0]):
                    n = int(np.flatnonzero(free == c)[0])
                    lo, hi = 0, int(c)
                    while lo < hi:
                        m = (lo + hi + 1) // 2
                        taken = free.copy()
                        taken[n] -= m
                        if self._packs_into(taken, demands):
                            lo = m
                        else:
                            hi = m - 1
                    out[free == c, t] = lo
            self._most_gpus[p] = out
        return self._most_gpus[p]

    def _runs(self, p: int, gang: Gang) -> tuple[IntArray, IntArray]:
        """Per node of pool p and slot: how many slots from there on the node can hold the
        gang's share; per slot: how many slots from there the pool can give the gang its nodes
        while the requirement still packs."""
        key = (p, gang)
        if key not in self._run_lengths:
            inst, rows = self.instance, self._rows(p)
            if gang.whole:
                per_node = inst.whole[rows]
                pool_ok = self.most_whole(p) >= gang.nodes
            else:
                per_node = self.most_gpus(p) >= gang.gpus_per_node
                pool_ok = np.ones(inst.slots, dtype=bool)
            self._run_lengths[key] = (_run_lengths(per_node), _run_lengths(pool_ok))
        return self._run_lengths[key]

    def _kth_longest(self, p: int, gang: Gang) -> IntArray:
        """[S]: the gang's k-th longest run over the nodes of pool p from each slot (k = its
        nodes): k nodes hold it for d slots from s iff this is at least d."""
        key = (p, gang)
        if key not in self._kth:
            per_node, _ = self._runs(p, gang)
            n, k = per_node.shape[0], gang.nodes
            kth = np.partition(per_node, n - k, axis=0)[n - k] if k <= n else per_node[0] * 0
            self._kth[key] = kth
        return self._kth[key]

    def fits(self, p: int, gang: Gang, d: int) -> BoolArray:
        """For each start s (0 .. S - d): whether the gang fits on pool p through [s, s + d)."""
        key = (p, gang, d)
        if key not in self._fits:
            n = max(self.instance.slots - d + 1, 0)
            _, pool_ok = self._runs(p, gang)
            self._fits[key] = (self._kth_longest(p, gang)[:n] >= d) & (pool_ok[:n] >= d)
        return self._fits[key]

    def most_nodes(self, p: int, gang: Gang, d: int) -> int:
        """The most nodes of pool p that could hold the gang's share through any d slots in a
        row (counted whole-node gangs: no more than the requirement leaves)."""
        n = self.instance.slots - d + 1
        if n <= 0:
            return 0
        per_node, _ = self._runs(p, gang)
        count = (per_node[:, :n] >= d).sum(axis=0)
        if gang.whole:
            count = np.minimum(count, _window_min(self.most_whole(p), d))
        return int(count.max(initial=0))

    def _nodes(self, p: int, gang: Gang, s: int, d: int) -> tuple[int, ...]:
        inst, rows = self.instance, self._rows(p)
        if gang.whole:
            ok = inst.whole[rows, s : s + d].all(axis=1)
        else:
            ok = self.most_gpus(p)[:, s : s + d].min(axis=1) >= gang.gpus_per_node
        first = inst.pools[p].first_node
        return tuple(first + int(n) for n in np.flatnonzero(ok)[: gang.nodes])

    def _first(self, job: Job, t0: int, latest_end: int) -> tuple[int, int] | None:
        """(pool, start) of the earliest-starting window from t0 that ends by `latest_end`
        (ties: fastest pool)."""
        best: tuple[int, int] | None = None
        window = self.instance.windows[job.index]
        for p, d in job.fastest_first:
            fits = self.fits(p, job.gangs[p], d)
            for lo, hi in window.allowed(d, t0, min(latest_end, len(fits) - 1 + d)).intervals:
                k = int(fits[lo : hi + 1].argmax())
                if fits[lo + k]:
                    if best is None or lo + k < best[1]:
                        best = (p, lo + k)
                    break
        return best

    def can_start(self, job: Job, t0: int, latest_end: int) -> bool:
        """Whether some window from t0 ends by `latest_end`."""
        return self._first(job, t0, latest_end) is not None

    def earliest_start(self, job: Job, t0: int, latest_end: int) -> Fit | None:
        """The earliest-starting window from t0 that ends by `latest_end` (ties: fastest pool),
        with the nodes it would take."""
        first = self._first(job, t0, latest_end)
        if first is None:
            return None
        p, s = first
        return Fit(p, s, self._nodes(p, job.gangs[p], s, job.durations[p]))

    def earliest_end(self, job: Job, t0: int, latest_end: int) -> Fit | None:
        """The window from t0 that ends earliest, by `latest_end` (ties: fastest pool)."""
        best: Fit | None = None
        best_end = latest_end + 1
        for p, d in job.fastest_first:
            fit = self.earliest_start(_only(job, p), t0, min(latest_end, best_end - 1))
            if fit is not None:
                best, best_end = fit, fit.start + d
        return best


def _only(job: Job, p: int) -> Job:
    """The job on pool p alone."""
    return replace(job, durations={p: job.durations[p]}, gangs={p: job.gangs[p]})
