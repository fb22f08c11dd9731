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

from horizon_opt.model.instance import Gang, Instance, IntArray, Job, Pool
from horizon_opt.model.windows import StartDomain
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
    ones fail too, until a placement is released. With team limits (`Instance.limited`) it also
    keeps each team's room per pool and slot (`Instance.team_room`): a job's window must fit
    both. Runs that `free` already leaves out count against their team through `hold`."""

    def __init__(self, instance: Instance, free: IntArray, limits: bool = True) -> None:
        self.instance = instance
        # [S, N], mutated as jobs are placed. Time-major and small (GPUs per node fit int16):
        # a window's per-node minimum then reduces over contiguous rows.
        small = free.max(initial=0) < np.iinfo(np.int16).max
        dtype = np.int16 if small else np.int64
        self.free: npt.NDArray[np.signedinteger[Any]] = np.ascontiguousarray(free.T, dtype=dtype)
        self._search = search(self.free.size)
        # Per pool, the Pareto front of failed searches as (need, nodes, duration, t0,
        # -latest_end): a search fails if some failed one is <= it in every field.
        # (team-limited searches keep theirs apart, per team)
        self.failed: dict[tuple[int, int | None], list[Failure]] = {}
        self.team_room = instance.team_room.copy() if limits and instance.limited else None

    def hold(self, job: Job, pool: int, start: int, end: int) -> None:
        """Count a run whose GPUs `free` already leaves out against its team's limit."""
        if self.team_room is not None and job.team is not None:
            self.team_room[job.team, pool, max(start, 0) : max(end, 0)] -= job.gpus

    def _limited(self, team: int | None, pool: int) -> int | None:
        """`team` when its limit on `pool` can bind, else None."""
        if self.team_room is None or team is None:
            return None
        return team if pool in self.instance.teams[team].limit else None

    def _known_to_fail(self, pool: int, team: int | None, query: Failure) -> bool:
        need, k, d, t0, neg_latest = query
        for n, kk, dd, tt, ll in self.failed.get((pool, team), ()):
            if n <= need and kk <= k and dd <= d and tt <= t0 and ll <= neg_latest:
                return True
        return False

    def _remember_failure(self, pool: int, team: int | None, query: Failure) -> None:
        # Keep only the Pareto front: drop rows the new failure makes redundant.
        rows = self.failed.setdefault((pool, team), [])
        need, k, d, t0, neg_latest = query
        rows[:] = [
            r
            for r in rows
            if not (r[0] >= need and r[1] >= k and r[2] >= d and r[3] >= t0 and r[4] >= neg_latest)
        ]
        rows.append(query)

    def earliest_in_pool(
        self,
        pool: Pool,
        gang: Gang,
        duration: int,
        starts: StartDomain,
        choice: NodeChoice,
        team: int | None,
    ) -> Fit | None:
        """The earliest start in `starts` (`StartWindow.allowed`) where the gang fits on `pool`,
        within `team`'s limit there: the window search, once per interval of the domain."""
        for lo, hi in starts.intervals:
            fit = self._earliest_between(
                pool, gang, duration, max(lo, 0), hi + duration, choice, team
            )
            if fit is not None:
                return fit
        return None

    def _earliest_between(
        self,
        pool: Pool,
        gang: Gang,
        duration: int,
        t0: int,
        latest_end: int,
        choice: NodeChoice,
        team: int | None,
    ) -> Fit | None:
        """Earliest start >= t0 with end <= latest_end where the gang fits on `pool`, within
        `team`'s limit there."""
        s = t0
        if s + duration > latest_end:
            return None
        k, need = gang.nodes, gang.gpus_per_node
        team = self._limited(team, pool.index)
        query = (need, k, duration, t0, -latest_end)
        if self._known_to_fail(pool.index, team, query):
            return None
        cols = self.free[:, pool.first_node : pool.first_node + pool.nodes]
        while True:
            start, nodes = self._search(cols, s, duration, latest_end, need, k, choice == "best")
            if start < 0:
                self._remember_failure(pool.index, team, query)
                return None
            blocked = self._over_limit(team, pool.index, int(start), duration, k * need)
            if blocked < 0:
                return Fit(pool.index, int(start), tuple(int(pool.first_node + n) for n in nodes))
            s = blocked + 1  # every window through the slot over the limit fails too

    def within_limit(self, job: Job, pool: int, start: int, end: int) -> bool:
        """Whether the job's run on `pool` over [start, end) fits its team's room there."""
        team = self._limited(job.team, pool)
        return self._over_limit(team, pool, start, end - start, job.gpus) < 0

    def _over_limit(self, team: int | None, pool: int, start: int, duration: int, gpus: int) -> int:
        """The last slot of [start, start + duration) where `gpus` more exceed the team's room
        on `pool`, or -1."""
        if team is None or self.team_room is None:
            return -1
        short = np.flatnonzero(self.team_room[team, pool, start : start + duration] < gpus)
        return start + int(short[-1]) if len(short) else -1

    def occupy(self, fit: Fit, gang: Gang, duration: int, team: int | None) -> None:
        for n in fit.nodes:  # one column at a time: a slice, not a fancy index
            self.free[fit.start : fit.start + duration, n] -= gang.gpus_per_node
        if self.team_room is not None and team is not None:
            self.team_room[team, fit.pool, fit.start : fit.start + duration] -= gang.nodes * (
                gang.gpus_per_node
            )

    def release(self, fit: Fit, gang: Gang, duration: int, team: int | None) -> None:
        """Give a placement's GPUs back; the pool's failed searches may now succeed."""
        for n in fit.nodes:
            self.free[fit.start : fit.start + duration, n] += gang.gpus_per_node
        if self.team_room is not None and team is not None:
            self.team_room[team, fit.pool, fit.start : fit.start + duration] += gang.nodes * (
                gang.gpus_per_node
            )
        for key in [key for key in self.failed if key[0] == fit.pool]:
            del self.failed[key]


def earliest_start(grid: CapacityGrid, job: Job, t0: int, latest_end: int) -> Fit | None:
    """The earliest-starting fit from slot t0 that ends by `latest_end`, over the job's pools
    (ties: fastest pool, then first), at starts its window allows."""
    best: Fit | None = None
    window = grid.instance.windows[job.index]
    for p, d in job.fastest_first:
        limit = latest_end if best is None else min(latest_end, best.start + d)
        pool = grid.instance.pools[p]
        starts = window.allowed(d, t0, limit)
        fit = grid.earliest_in_pool(pool, job.gangs[p], d, starts, "first", job.team)
        if fit is not None and (best is None or fit.start < best.start):
            best = fit
    return best
