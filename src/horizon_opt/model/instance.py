"""The compiled problem: immutable data with every quantity the solvers need, computed once
(`compiler.compile_instance` builds it from a spec), and the questions asked of its dependency
graph (`topological_order`, `earliest_starts`, `dependency_cycle`).
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from horizon_opt.model.spec import (
    InstanceSpec,
    JobKind,
)
from horizon_opt.model.teams import Team, limit_profile, team_usage
from horizon_opt.model.windows import StartWindow, due, on_time, start_windows

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Pool:
    index: int
    name: str
    gpu_type: str
    nodes: int
    gpus_per_node: int
    first_node: int  # global index of its first node (names: `Instance.node_names`)

    @property
    def node_range(self) -> range:
        return range(self.first_node, self.first_node + self.nodes)


@dataclass(frozen=True)
class Gang:
    """How a job sits on one pool: `gpus_per_node` of its GPUs on each of `nodes` nodes.

    Every solver, bound and layout reads this instead of deriving the placement rule again, so
    a new per-job placement constraint changes `gang_on` and nothing downstream.
    """

    nodes: int
    gpus_per_node: int
    whole: bool  # it takes every GPU of its nodes


def gang_on(pool: Pool, gpus: int) -> Gang | None:
    """FORMAT.md's placement rule: a gang of at most G GPUs sits on one node; a larger one on
    gpus / G whole nodes when G divides it and the pool has that many nodes; else nowhere."""
    g = pool.gpus_per_node
    if gpus <= g:
        return Gang(1, gpus, gpus == g)
    if gpus % g == 0 and gpus // g <= pool.nodes:
        return Gang(gpus // g, g, True)
    return None


@dataclass(frozen=True)
class Service:
    index: int
    name: str
    pool: int
    gpus_per_replica: int
    headroom: float
    demand: FloatArray  # forecast replicas per slot
    req: IntArray  # required replicas per slot: ceil(demand * (1 + headroom) - 1e-9)


@dataclass(frozen=True)
class Placed:
    """A job's placement that no solver may change: it is running (it started before `now`) or
    it holds a promised start (a reservation, at or after `now`)."""

    pool: int
    start: int
    end: int
    gpus: Mapping[int, tuple[int, ...]]  # global node index -> GPU indices

    @property
    def nodes(self) -> tuple[int, ...]:
        return tuple(self.gpus)


@dataclass(frozen=True)
class Promise:
    """A start that a previous plan promised (see `replan`'s stability weight): a plan that keeps
    the job on `pool` at `start`, on time, earns `bonus` on top of its value, so a move must gain
    more than that to be worth it. With `by`, a start at or before `start` on any pool keeps it
    (a predicted start people were told: `replan.with_held_promises`), or with `by_pool`, at or
    before each pool's own latest start (where a deadline job's chance of ending in time is
    read: `simulate.deadline_odds`)."""

    pool: int
    start: int
    bonus: float
    by: bool = False
    # For a `by` promise: (pool, latest start) pairs, a start no later on that pool keeps it;
    # empty: `start` on any pool (then `start` is the latest of these)
    by_pool: tuple[tuple[int, int], ...] = ()

    def latest(self, pool: int) -> int:
        """The latest start on `pool` that keeps a `by` promise (-1: none does)."""
        if not self.by_pool:
            return self.start
        return next((s for p, s in self.by_pool if p == pool), -1)

    def kept(self, pool: int, start: int) -> bool:
        """Whether a run on `pool` from `start` keeps the promise (on time: callers check)."""
        return start <= self.latest(pool) if self.by else (pool, start) == (self.pool, self.start)


@dataclass(frozen=True)
class Job:
    index: int
    id: str
    kind: JobKind
    priority: float
    gpus: int
    durations: Mapping[int, int]  # allowed pool index -> duration in slots (placeable pools only)
    gangs: Mapping[int, Gang]  # the same pools -> how the job sits on that pool's nodes
    release: int  # the first slot it may start (`windows.first_start`): read `Instance.windows`
    deadline: int | None
    after: tuple[int, ...]  # job indices
    work_hours: float  # gpus * fastest duration * hours per slot
    placed: Placed | None = None  # then `durations` and `gangs` hold only its pool
    promise: Promise | None = None  # set by a re-plan with a stability weight, never by a file
    # Its release as written, before `now` or a placed start replaced it in `release` (the slot
    # the solvers may start it from); None: the same as `release`.
    submitted: int | None = None
    team: int | None = None  # index into `Instance.teams`
    # Slots [a, b) in which it may not run, sorted and merged (FORMAT.md, `blackout`): read
    # `Instance.windows`, whose start domains leave them out.
    blackouts: tuple[tuple[int, int], ...] = ()

    @property
    def wait_release(self) -> int:
        """The slot its wait counts from (FORMAT.md, mean_wait_hours): its release as written
        when placed, else max(release, now), which is `release`."""
        if self.placed is not None and self.submitted is not None:
            return self.submitted
        return self.release

    @property
    def value(self) -> float:
        """What the job adds to pwo when it ends on time."""
        return self.priority * self.work_hours

    def ends_on_time(self, end: int) -> bool:
        """FORMAT.md's on-time rule (`windows.on_time`), as the judges read a plan: by its
        deadline, if it has one (a solver reads `Instance.windows`, which also holds the
        horizon's end)."""
        return on_time(end, self.deadline)

    @cached_property
    def fastest_first(self) -> tuple[tuple[int, int], ...]:
        """(pool, duration) of its pools, fastest first (ties: first pool): the order in which
        the list schedules and cause codes search them."""
        return tuple(sorted(self.durations.items(), key=lambda item: (item[1], item[0])))

    def latest_end(self, slots: int) -> int:
        """The last end slot at which the job still earns its value (`windows.due`; a solver
        reads `Instance.windows`)."""
        return due(self.deadline, slots)


@dataclass(frozen=True)
class Instance:
    name: str
    slots: int
    slot_minutes: int
    start: datetime | None
    pools: tuple[Pool, ...]
    node_names: tuple[str, ...]
    node_pool: IntArray  # [N] pool index of each node
    up: BoolArray  # [N, S] node is up at slot
    services: tuple[Service, ...]
    jobs: tuple[Job, ...]
    spec: InstanceSpec = field(repr=False, compare=False)
    # Legal but almost certainly a mistake (an outage outside the horizon); `validate` adds more.
    warnings: tuple[str, ...] = ()
    now: int = 0  # the first slot that can still be planned; every free job's release is >= now
    # [N, S] GPUs that jobs left out of this instance hold (see `residual.residual_instance`).
    held: IntArray | None = field(default=None, repr=False, compare=False)
    teams: tuple[Team, ...] = ()
    # [teams, P, S] GPUs that jobs left out of this instance hold, per team (as `held`).
    team_held: IntArray | None = field(default=None, repr=False, compare=False)
    # With `horizon.open_end`, the slots as written, when `slots` extends them (`open_end.py`).
    written_slots: int | None = None

    @property
    def hours_per_slot(self) -> float:
        return self.slot_minutes / 60

    @property
    def num_nodes(self) -> int:
        return len(self.node_names)

    @cached_property
    def node_gpus(self) -> IntArray:
        """GPUs per node, by global node index."""
        return np.array([self.pools[p].gpus_per_node for p in self.node_pool], dtype=np.int64)

    @cached_property
    def capacity(self) -> IntArray:
        """[N, S] GPUs of each node at each slot: gpus_per_node while up, 0 while down, less the
        GPUs `held` by placed jobs that a residual instance leaves out."""
        out: IntArray = self.node_gpus[:, None] * self.up
        return out if self.held is None else out - self.held

    @cached_property
    def whole(self) -> BoolArray:
        """[N, S] the node is up and none of its GPUs is `held`: a whole-node gang may use it."""
        return self.up if self.held is None else self.up & (self.held == 0)

    @cached_property
    def placed_gpus(self) -> IntArray:
        """[N, S] GPUs that this instance's placed jobs hold."""
        return _placed_gpus(self.jobs, (self.num_nodes, self.slots))

    @cached_property
    def team_room(self) -> IntArray:
        """[teams, P, S] GPUs each team's jobs may take per pool and slot: its limit less what
        `team_held` holds, never below 0; where it has no limit, every GPU of the cluster. As
        `capacity`, it leaves this instance's own placed jobs in (they count where placed)."""
        P = len(self.pools)
        room = limit_profile(self.teams, P, self.slots, int(self.node_gpus.sum()))
        if self.team_held is not None:
            room = np.maximum(room - self.team_held, 0)
        return room

    @cached_property
    def placed_team_gpus(self) -> IntArray:
        """[teams, P, S] GPUs this instance's placed jobs hold, per team."""
        runs = (
            (j.team, j.placed.pool, j.placed.start, j.placed.end, j.gpus)
            for j in self.jobs
            if j.placed is not None
        )
        return team_usage(len(self.teams), len(self.pools), self.slots, runs)

    @property
    def limited(self) -> bool:
        """Whether some team has a hard limit (else team rules cannot bind a placement)."""
        return any(t.limit for t in self.teams)

    @property
    def placed(self) -> tuple[Job, ...]:
        return tuple(j for j in self.jobs if j.placed is not None)

    @cached_property
    def successors(self) -> tuple[tuple[int, ...], ...]:
        """For each job, the jobs that run after it (the reverse of `after`)."""
        out: list[list[int]] = [[] for _ in self.jobs]
        for job in self.jobs:
            for p in job.after:
                out[p].append(job.index)
        return tuple(tuple(x) for x in out)

    @cached_property
    def windows(self) -> tuple[StartWindow, ...]:
        """When each job may start and end (`windows.py`, the one owner of the time rules)."""
        order = topological_order(self)
        return start_windows(self.jobs, order, self.successors, self.slots, self.now)

    @cached_property
    def node_index(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.node_names)}

    @cached_property
    def job_index(self) -> dict[str, int]:
        return {j.id: j.index for j in self.jobs}

    @cached_property
    def pool_index(self) -> dict[str, int]:
        return {p.name: p.index for p in self.pools}

    def slot_time(self, slot: int) -> datetime | None:
        """Wall-clock time of a slot boundary, when the horizon has a start."""
        if self.start is None:
            return None
        return self.start + timedelta(minutes=slot * self.slot_minutes)


def required_replicas(demand: npt.ArrayLike, headroom: float) -> IntArray:
    """FORMAT.md's `req` per slot: ceil(demand * (1 + headroom) - 1e-9)."""
    out: IntArray = np.ceil(np.asarray(demand, dtype=np.float64) * (1 + headroom) - 1e-9).astype(
        np.int64
    )
    return out


def horizon_start(spec: InstanceSpec) -> datetime | None:
    """The time of slot 0; a start written without an offset is UTC, as in every time field."""
    start = spec.horizon.start
    if start is not None and start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    return start


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(m|min|h|d)\s*$")
_UNIT_MINUTES = {"m": 1, "min": 1, "h": 60, "d": 1440}


def duration_minutes(value: str) -> float | None:
    """Minutes of a duration written with a unit (`90m`, `6h`, `1.5h`, `2d`), else None."""
    match = _DURATION.match(value)
    if match is None:
        return None
    return float(match.group(1)) * _UNIT_MINUTES[match.group(2)]


def topological_order(instance: Instance, key: Callable[[int], Any] | None = None) -> list[int]:
    """Job indices such that every job comes after the jobs it runs after.

    Among the jobs whose predecessors are all placed, the one with the smallest `key(job index)`
    comes next (ties, and the default: file order).
    """
    rank = key if key is not None else (lambda j: j)
    waiting = [len(j.after) for j in instance.jobs]
    ready = [(rank(j.index), j.index) for j in instance.jobs if not j.after]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, j = heapq.heappop(ready)
        order.append(j)
        for s in instance.successors[j]:
            waiting[s] -= 1
            if waiting[s] == 0:
                heapq.heappush(ready, (rank(s), s))
    return order


def earliest_starts(instance: Instance) -> list[int]:
    """Each job's earliest start: its release, pushed past the shortest runs of its predecessors
    (`StartWindow.ready`)."""
    return [w.ready for w in instance.windows]


def _placed_gpus(jobs: Sequence[Job], shape: tuple[int, int]) -> IntArray:
    out = np.zeros(shape, dtype=np.int64)
    for job in jobs:
        if job.placed is not None:
            for n, idx in job.placed.gpus.items():
                out[n, job.placed.start : job.placed.end] += len(idx)
    return out


def dependency_cycle(jobs: Sequence[Job]) -> tuple[int, list[int]] | None:
    """A cycle of `after` links, if any: (the job whose link closes it, the jobs around it,
    the first repeated at the end), by an iterative depth-first search."""
    state = [0] * len(jobs)  # 0 new, 1 on stack, 2 done
    for root in range(len(jobs)):
        if state[root]:
            continue
        stack: list[tuple[int, int]] = [(root, 0)]
        path: list[int] = [root]
        state[root] = 1
        while stack:
            node, k = stack[-1]
            preds = jobs[node].after
            if k < len(preds):
                stack[-1] = (node, k + 1)
                nxt = preds[k]
                if state[nxt] == 1:
                    return node, [*path[path.index(nxt) :], nxt]
                if state[nxt] == 0:
                    state[nxt] = 1
                    stack.append((nxt, 0))
                    path.append(nxt)
            else:
                state[node] = 2
                stack.pop()
                path.pop()
    return None


def pinned_jobs(instance: Instance) -> set[int]:
    """Jobs that a placed job runs after, directly or not: they can never give GPUs back."""
    out: set[int] = set()
    stack = [q for j in instance.jobs if j.placed is not None for q in j.after]
    while stack:
        q = stack.pop()
        if q not in out:
            out.add(q)
            stack.extend(instance.jobs[q].after)
    return out
