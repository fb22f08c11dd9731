"""The compiled problem: immutable data with every quantity the solvers need, computed once.

`compile_instance` turns an `InstanceSpec` (the file as written) into an `Instance`, resolving
time units and names and rejecting bad input with one message per problem, each naming its field
path (`jobs[3].duration.h100: ...`), as FORMAT.md requires.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from horizon_opt.errors import InstanceError
from horizon_opt.packing import pack
from horizon_opt.spec import (
    MAX_DEMAND,
    MAX_NODE_SLOTS,
    MAX_NODES,
    MAX_SLOTS,
    MAX_TIME_SLOTS,
    InstanceSpec,
    JobKind,
    show,
)

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
    first_node: int  # global index of node <name>-0

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
    more than that to be worth it."""

    pool: int
    start: int
    bonus: float


@dataclass(frozen=True)
class Job:
    index: int
    id: str
    kind: JobKind
    priority: float
    gpus: int
    durations: Mapping[int, int]  # allowed pool index -> duration in slots (placeable pools only)
    gangs: Mapping[int, Gang]  # the same pools -> how the job sits on that pool's nodes
    release: int
    deadline: int | None
    after: tuple[int, ...]  # job indices
    work_hours: float  # gpus * fastest duration * hours per slot
    placed: Placed | None = None  # then `durations` and `gangs` hold only its pool
    promise: Promise | None = None  # set by a re-plan with a stability weight, never by a file

    @property
    def value(self) -> float:
        """What the job adds to pwo when it ends on time."""
        return self.priority * self.work_hours

    @cached_property
    def fastest_first(self) -> tuple[tuple[int, int], ...]:
        """(pool, duration) of its pools, fastest first (ties: first pool): the order in which
        the list schedules and cause codes search them."""
        return tuple(sorted(self.durations.items(), key=lambda item: (item[1], item[0])))

    def latest_end(self, slots: int) -> int:
        """The last end slot at which the job still earns its value."""
        return slots if self.deadline is None else min(slots, self.deadline)


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


class _Compiler:
    """Builds an `Instance`, collecting every problem instead of stopping at the first."""

    def __init__(self, spec: InstanceSpec, demands: Mapping[int, Sequence[float]]) -> None:
        self.spec = spec
        self.demands = demands
        self.problems: list[str] = []
        self.warnings: list[str] = []
        self.S = spec.horizon.slots
        self.slot_minutes = spec.horizon.slot_minutes
        self.start = horizon_start(spec)
        self.now = 0
        self.up_rows: BoolArray = np.ones((0, 0), dtype=np.bool_)
        self.node_pools: list[int] = []

    def error(self, path: str, message: str) -> None:
        self.problems.append(f"{path}: {message}")

    def warn(self, path: str, message: str) -> None:
        self.warnings.append(f"{path}: {message}")

    def in_calendar(self, slot: int) -> bool:
        """Whether a slot boundary is a time Python can hold (years 1 to 9999), in the start's
        offset and in UTC: plans and reports print it."""
        if self.start is None:
            return True
        try:
            (self.start + timedelta(minutes=slot * self.slot_minutes)).astimezone(UTC)
        except OverflowError:
            return False
        return True

    # -- units ---------------------------------------------------------------------------------

    def time(self, value: int | str, path: str, round_up: bool) -> int | None:
        """A slot index from an int or an ISO timestamp (rounded up or down to a slot boundary)."""
        if isinstance(value, int):
            slot = value
        elif self.start is None:
            self.error(path, f"timestamp {show(value)} needs horizon.start to be set")
            return None
        else:
            try:
                when = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                self.error(path, f"not a slot index or an ISO-8601 timestamp: {show(value)}")
                return None
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            slots = (when - self.start).total_seconds() / 60 / self.slot_minutes
            slot = math.ceil(slots - 1e-9) if round_up else math.floor(slots + 1e-9)
        if abs(slot) > MAX_TIME_SLOTS:
            self.error(
                path, f"out of range: a time is at most {MAX_TIME_SLOTS:,} slots from slot 0"
            )
            return None
        return slot

    def duration(self, value: int | str, path: str) -> int | None:
        if isinstance(value, int):
            slots = value
        else:
            minutes = duration_minutes(value)
            if minutes is None:
                self.error(path, f"not a duration: {show(value)} (use slots or e.g. 90m, 6h, 2d)")
                return None
            # Capped just past the limit before rounding: a number too long for a float is inf.
            minutes = min(minutes, (MAX_SLOTS + 1) * self.slot_minutes)
            slots = math.ceil(minutes / self.slot_minutes - 1e-9)
        if slots < 1:
            self.error(path, f"must be at least one slot, got {show(value)}")
            return None
        if slots > MAX_SLOTS:
            self.error(path, f"longer than {MAX_SLOTS:,} slots, the most horizon-opt plans")
            return None
        return slots

    def sizes(self) -> None:
        """Refuse a cluster too big to plan before any per-node array is allocated."""
        nodes = sum(p.nodes for p in self.spec.pools)
        if nodes > MAX_NODES:
            self.error("pools", f"{nodes:,} nodes in all; horizon-opt plans at most {MAX_NODES:,}")
        elif nodes * self.S > MAX_NODE_SLOTS:
            self.error(
                "horizon.slots",
                f"{nodes:,} nodes x {self.S:,} slots is {nodes * self.S:,} node-slots; "
                f"horizon-opt plans at most {MAX_NODE_SLOTS:,} (use fewer, longer slots)",
            )

    def horizon(self) -> None:
        if self.start is not None and not (self.in_calendar(0) and self.in_calendar(self.S)):
            self.error(
                "horizon.start",
                f"{self.S:,} slots of {self.slot_minutes} minutes from {self.start.isoformat()} "
                "do not fit in the calendar (years 1 to 9999)",
            )

    # -- sections ------------------------------------------------------------------------------

    def pools(self) -> tuple[Pool, ...]:
        pools: list[Pool] = []
        first = 0
        seen: set[str] = set()
        for i, p in enumerate(self.spec.pools):
            if p.name in seen:
                self.error(f"pools[{i}].name", f"duplicate pool name {p.name!r}")
            seen.add(p.name)
            pools.append(Pool(i, p.name, p.gpu_type, p.nodes, p.gpus_per_node, first))
            first += p.nodes
        return tuple(pools)

    def up(self, pools: tuple[Pool, ...], node_index: dict[str, int]) -> BoolArray:
        n = sum(p.nodes for p in pools)
        up = np.ones((n, self.S), dtype=np.bool_)
        for i, o in enumerate(self.spec.outages):
            path = f"outages[{i}]"
            node = node_index.get(o.node)
            if node is None:
                self.error(f"{path}.node", f"unknown node {o.node!r} (nodes are <pool>-<i>)")
            start = self.time(o.start, f"{path}.start", round_up=False)
            end = self.time(o.end, f"{path}.end", round_up=True)
            if start is None or end is None:
                continue
            if start >= end:
                self.error(f"{path}.end", f"must be after start ({end} <= {start})")
            elif end <= 0 or start >= self.S:
                self.warn(
                    path,
                    f"wholly outside the horizon (down in slots [{start}, {end}), the horizon is "
                    f"[0, {self.S})): it changes nothing",
                )
            elif node is not None:  # clipped to the horizon
                up[node, max(start, 0) : min(end, self.S)] = False
        return up

    def services(self, pools: tuple[Pool, ...]) -> tuple[Service, ...]:
        by_name = {p.name: p for p in pools}
        services: list[Service] = []
        seen: set[str] = set()
        for i, s in enumerate(self.spec.services):
            path = f"services[{i}]"
            if s.name in seen:
                self.error(f"{path}.name", f"duplicate service name {s.name!r}")
            seen.add(s.name)
            pool = by_name.get(s.pool)
            if pool is None:
                self.error(f"{path}.pool", f"unknown pool {s.pool!r}")
            elif pool.gpus_per_node % s.gpus_per_replica:
                self.error(
                    f"{path}.gpus_per_replica",
                    f"{s.gpus_per_replica} does not divide gpus_per_node "
                    f"{pool.gpus_per_node} of pool {pool.name!r}",
                )
                pool = None
            demand = np.asarray(self.demands.get(i, ()), dtype=np.float64)
            if len(demand) != self.S:
                self.error(
                    f"{path}.demand", f"expected {self.S} values (one per slot), got {len(demand)}"
                )
                continue
            bad = np.flatnonzero(~((demand >= 0) & (demand <= MAX_DEMAND)))  # NaN fails both
            if bad.size:
                t = int(bad[0])
                self.error(
                    f"{path}.demand[{t}]",
                    f"must be a number from 0 to {MAX_DEMAND:,.0f} replicas, got {demand[t]}",
                )
                continue
            if pool is None:
                continue
            req = np.ceil(demand * (1 + s.headroom) - 1e-9).astype(np.int64)
            demand.setflags(write=False)
            req.setflags(write=False)
            services.append(
                Service(
                    len(services), s.name, pool.index, s.gpus_per_replica, s.headroom, demand, req
                )
            )
        return tuple(services)

    def jobs(self, pools: tuple[Pool, ...]) -> tuple[Job, ...]:
        by_name = {p.name: p for p in pools}
        ids: dict[str, int] = {}
        for i, j in enumerate(self.spec.jobs):
            if j.id in ids:
                self.error(f"jobs[{i}].id", f"duplicate job id {j.id!r}")
            else:
                ids[j.id] = i
        jobs: list[Job] = []
        for i, j in enumerate(self.spec.jobs):
            path = f"jobs[{i}]"
            durations = self.job_durations(i, by_name)
            gangs = {p: g for p in durations if (g := gang_on(pools[p], j.gpus)) is not None}
            placeable = {p: d for p, d in durations.items() if p in gangs}
            if durations and not placeable:
                why = ", ".join(
                    f"{pools[p].name} has {pools[p].nodes} nodes of {pools[p].gpus_per_node} GPUs"
                    for p in durations
                )
                self.error(
                    f"{path}.gpus",
                    f"a gang of {j.gpus} GPUs cannot be placed on any allowed pool ({why}); "
                    "it must fit on one node or be a multiple of gpus_per_node on whole nodes",
                )
            release = self.time(j.release, f"{path}.release", round_up=True)
            if release is not None:
                if isinstance(j.release, int) and release < 0:
                    self.error(f"{path}.release", f"must be >= 0, got {release}")
                elif release >= self.S:
                    self.error(
                        f"{path}.release",
                        f"after the horizon (slot {release}, horizon has {self.S} slots)",
                    )
                release = max(release, 0)
            deadline = None
            if j.deadline is not None:
                deadline = self.time(j.deadline, f"{path}.deadline", round_up=False)
                if deadline is not None and release is not None and deadline < release:
                    self.error(f"{path}.deadline", f"before release ({deadline} < {release})")
                elif deadline is not None and deadline > self.S and not self.in_calendar(deadline):
                    self.error(f"{path}.deadline", f"slot {deadline} is after the year 9999")
            after: list[int] = []
            for k, dep in enumerate(j.after):
                if dep not in ids:
                    self.error(f"{path}.after[{k}]", f"unknown job id {dep!r}")
                elif dep == j.id:
                    self.error(f"{path}.after[{k}]", "a job cannot run after itself")
                else:
                    after.append(ids[dep])
            if not placeable or release is None:
                continue
            fastest = min(placeable.values())
            placed = None
            if j.placed is not None:
                placed = self.placed(i, release, placeable, gangs, pools)
                if placed is None:
                    continue
                placeable = {placed.pool: placed.end - placed.start}
                gangs = {placed.pool: gangs[placed.pool]}
            jobs.append(
                Job(
                    index=i,
                    id=j.id,
                    kind=j.kind,
                    priority=j.priority,
                    gpus=j.gpus,
                    durations=placeable,
                    gangs=gangs,
                    # A placed job started (or will) at its placed start; nothing else can start
                    # before now.
                    release=placed.start if placed is not None else max(release, self.now),
                    deadline=deadline,
                    after=tuple(after),
                    work_hours=j.gpus * fastest * self.slot_minutes / 60,
                    placed=placed,
                )
            )
        if len(jobs) == len(self.spec.jobs):
            self.check_cycles(jobs)
            self.check_placed(jobs, pools)
        return tuple(jobs)

    def placed(
        self,
        i: int,
        release: int,
        durations: dict[int, int],
        gangs: dict[int, Gang],
        pools: tuple[Pool, ...],
    ) -> Placed | None:
        """A job's `placed:`, checked on its own: pool, times, nodes and the placement rule."""
        j = self.spec.jobs[i]
        spec = j.placed
        assert spec is not None
        path = f"jobs[{i}].placed"
        pool = next((p for p in pools if p.name == spec.pool), None)
        if pool is None:
            self.error(f"{path}.pool", f"unknown pool {spec.pool!r}")
            return None
        if pool.index not in durations:
            self.error(f"{path}.pool", f"job {j.id!r} may not run on pool {pool.name!r}")
            return None
        start = self.time(spec.start, f"{path}.start", round_up=False)
        if start is None:
            return None
        end = start + durations[pool.index]
        problems = len(self.problems)
        # The release as the slot it falls in: a job started at its mid-slot release is fine.
        released = self.time(j.release, f"jobs[{i}].release", round_up=False)
        if not 0 <= start < self.S:
            self.error(f"{path}.start", f"slot {start} is outside the horizon [0, {self.S})")
        elif released is not None and start < released:
            self.error(f"{path}.start", f"slot {start} is before the job's release ({release})")
        if spec.end is not None:  # the expected end, when known better than the estimate
            given = self.time(spec.end, f"{path}.end", round_up=True)
            if given is not None and given <= start:
                self.error(f"{path}.end", f"slot {given} is not after start {start}")
            elif given is not None:
                end = given
        if end > self.S:
            self.error(
                f"{path}.start",
                f"job {j.id!r} runs until slot {end}, past the horizon ({self.S} slots)",
            )
        if end <= self.now:
            self.error(
                f"{path}.start",
                f"job {j.id!r} ended at slot {end}, at or before now ({self.now}): "
                "leave finished jobs out of the instance",
            )
        gang = gangs[pool.index]
        gpus: dict[int, tuple[int, ...]] = {}
        for name, idx in spec.gpus.items():
            n = pool.first_node + int(name.rsplit("-", 1)[1]) if _node_of(name, pool) else None
            if n is None:
                self.error(f"{path}.gpus", f"{name!r} is not a node of pool {pool.name!r}")
                continue
            if len(set(idx)) != len(idx) or max(idx, default=0) >= pool.gpus_per_node:
                self.error(
                    f"{path}.gpus.{name}",
                    f"GPU indices {show(idx)} are not distinct indices in "
                    f"0..{pool.gpus_per_node - 1}",
                )
                continue
            gpus[n] = tuple(sorted(idx))
        if len(self.problems) > problems:
            return None
        sizes = sorted({len(v) for v in gpus.values()})
        if len(gpus) != gang.nodes or sizes != [gang.gpus_per_node]:
            whole = f"{gang.nodes} whole nodes" if gang.nodes > 1 else "one node"
            self.error(
                f"{path}.gpus",
                f"a gang of {j.gpus} GPUs on pool {pool.name} holds {gang.gpus_per_node} GPUs "
                f"on each of {whole}; this holds {show({k: list(v) for k, v in spec.gpus.items()})}",
            )
            return None
        for n in gpus:
            down = np.flatnonzero(~self.up_rows[n, start:end])
            if down.size:
                self.error(
                    f"{path}.gpus",
                    f"job {j.id!r} runs on {pool.name}-{n - pool.first_node} while that node "
                    f"is down (slots {_ranges((down + start).tolist())})",
                )
        return Placed(pool.index, start, end, gpus)

    def check_placed(self, jobs: list[Job], pools: tuple[Pool, ...]) -> None:
        """Placed jobs together: their predecessors are placed and end first, no GPU of a
        started job is held twice, no node holds more than it has."""
        for job in jobs:
            if job.placed is None:
                continue
            for p in job.after:
                pred = jobs[p]
                if pred.placed is None:
                    self.error(
                        f"jobs[{job.index}].placed",
                        f"job {job.id!r} runs after {pred.id!r}, which is not placed: a started "
                        "job's predecessors have ended (leave them out of the instance) or are "
                        "placed too",
                    )
                elif pred.placed.end > job.placed.start:
                    self.error(
                        f"jobs[{job.index}].placed.start",
                        f"slot {job.placed.start} is before {pred.id!r} ends "
                        f"(slot {pred.placed.end})",
                    )
        runs: dict[tuple[int, int], list[tuple[int, int, str]]] = {}
        count: dict[int, IntArray] = {}
        for job in jobs:
            if job.placed is None:
                continue
            a, b = job.placed.start, job.placed.end
            for n, idx in job.placed.gpus.items():
                row = count.setdefault(n, np.zeros(self.S, dtype=np.int64))
                row[a:b] += len(idx)
                if a < self.now:  # a started job holds these very GPUs
                    for g in idx:
                        runs.setdefault((n, g), []).append((a, b, job.id))
        names = [f"{p.name}-{k}" for p in pools for k in range(p.nodes)]
        for (n, g), items in runs.items():
            items.sort()
            last_end, last_id = items[0][1], items[0][2]  # the run that ends last so far
            for a, b, job_id in items[1:]:
                if a < last_end:
                    self.error(
                        "jobs",
                        f"placed jobs {last_id!r} and {job_id!r} both hold GPU {g} of "
                        f"{names[n]} at slot {a}",
                    )
                if b > last_end:
                    last_end, last_id = b, job_id
        gpus = {p.index: p.gpus_per_node for p in pools}
        for n, row in count.items():
            G = gpus[self.node_pools[n]]
            over = np.flatnonzero(row > G)
            if over.size:
                holders = [
                    job.id
                    for job in jobs
                    if job.placed is not None
                    and n in job.placed.gpus
                    and job.placed.start <= over[0] < job.placed.end
                ]
                self.error(
                    "jobs",
                    f"placed jobs {', '.join(map(repr, holders))} hold more than the {G} GPUs "
                    f"of {names[n]} (slots {_ranges(over.tolist())})",
                )

    def job_durations(self, i: int, by_name: dict[str, Pool]) -> dict[int, int]:
        j = self.spec.jobs[i]
        path = f"jobs[{i}]"
        out: dict[int, int] = {}
        if isinstance(j.duration, dict):
            if j.pools is not None:
                self.error(f"{path}.pools", "give pools only with a single duration value")
            items = [(name, value, f"{path}.duration.{name}") for name, value in j.duration.items()]
        else:
            names = j.pools if j.pools is not None else list(by_name)
            if j.pools is not None and not j.pools:
                self.error(f"{path}.pools", "must name at least one pool")
            items = [(name, j.duration, f"{path}.duration") for name in names]
        parsed: dict[str, int | None] = {}  # a single value is parsed (and reported) once
        for k, (name, value, vpath) in enumerate(items):
            pool = by_name.get(name)
            if pool is None:
                where = vpath if isinstance(j.duration, dict) else f"{path}.pools[{k}]"
                self.error(where, f"unknown pool {name!r}")
                continue
            if vpath not in parsed:
                parsed[vpath] = self.duration(value, vpath)
            slots = parsed[vpath]
            if slots is not None:
                out[pool.index] = slots
        return out

    def check_cycles(self, jobs: list[Job]) -> None:
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
                        cycle = [*path[path.index(nxt) :], nxt]
                        names = " -> ".join(jobs[c].id for c in cycle)
                        self.error(f"jobs[{node}].after", f"dependency cycle: {names}")
                        return
                    if state[nxt] == 0:
                        state[nxt] = 1
                        stack.append((nxt, 0))
                        path.append(nxt)
                else:
                    state[node] = 2
                    stack.pop()
                    path.pop()

    def parse_now(self) -> int:
        if self.spec.now is None:
            return 0
        now = self.time(self.spec.now, "now", round_up=True)
        if now is None:
            return 0
        if not 0 <= now < self.S:
            self.error("now", f"slot {now} is outside the horizon [0, {self.S})")
            return 0
        return now

    def check_inference(
        self,
        pools: tuple[Pool, ...],
        up: BoolArray,
        services: tuple[Service, ...],
        held: IntArray,
    ) -> None:
        """Every slot's required replicas must fit on the nodes that are up, beside the placed
        jobs and no other batch work."""
        for pool in pools:
            members = [s for s in services if s.pool == pool.index]
            if not members:
                continue
            short: dict[int, list[int]] = {s.index: [] for s in members}
            rows = up[pool.first_node : pool.first_node + pool.nodes]
            taken = held[pool.first_node : pool.first_node + pool.nodes]
            for t in range(self.S):
                free = rows[:, t].astype(np.int64) * pool.gpus_per_node - taken[:, t]
                demands = [(s.gpus_per_replica, int(s.req[t])) for s in members]
                placed, _ = pack(free, demands)
                for k, s in enumerate(members):
                    if placed[k].sum() < s.req[t]:
                        short[s.index].append(t)
            for s in members:
                if short[s.index]:
                    spec_index = [x.name for x in self.spec.services].index(s.name)
                    beside = (
                        "beside the placed jobs"
                        if taken[:, short[s.index]].any()
                        else "even with no batch work"
                    )
                    self.error(
                        f"services[{spec_index}].demand",
                        f"service {s.name!r} needs more replicas than pool {pool.name!r} can "
                        f"hold {beside}, at slots {_ranges(short[s.index])}",
                    )

    def build(self) -> Instance:
        self.sizes()
        if self.problems:
            raise InstanceError(self.problems)
        self.horizon()
        self.now = self.parse_now()
        pools = self.pools()
        node_names = tuple(f"{p.name}-{i}" for p in pools for i in range(p.nodes))
        node_index = {n: i for i, n in enumerate(node_names)}
        up = self.up(pools, node_index)
        self.up_rows = up
        self.node_pools = [p.index for p in pools for _ in range(p.nodes)]
        services = self.services(pools)
        jobs = self.jobs(pools)
        if not self.problems:
            self.check_inference(pools, up, services, _placed_gpus(jobs, up.shape))
        if self.problems:
            raise InstanceError(self.problems)
        node_pool = np.array([p.index for p in pools for _ in range(p.nodes)], dtype=np.int64)
        node_pool.setflags(write=False)
        up.setflags(write=False)
        return Instance(
            name=self.spec.name,
            slots=self.S,
            slot_minutes=self.slot_minutes,
            start=self.start,
            pools=pools,
            node_names=node_names,
            node_pool=node_pool,
            up=up,
            services=services,
            jobs=jobs,
            spec=self.spec,
            warnings=tuple(self.warnings),
            now=self.now,
        )


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
    """Each job's earliest start: its release, pushed past the shortest runs of its predecessors."""
    est = [j.release for j in instance.jobs]
    for j in topological_order(instance):
        job = instance.jobs[j]
        for p in job.after:
            pred = instance.jobs[p]
            est[j] = max(est[j], est[p] + min(pred.durations.values()))
    return est


def _placed_gpus(jobs: Sequence[Job], shape: tuple[int, int]) -> IntArray:
    out = np.zeros(shape, dtype=np.int64)
    for job in jobs:
        if job.placed is not None:
            for n, idx in job.placed.gpus.items():
                out[n, job.placed.start : job.placed.end] += len(idx)
    return out


def _node_of(name: str, pool: Pool) -> bool:
    """Whether `name` is a node of `pool`: `<pool>-<i>`, i written plainly, 0 <= i < nodes."""
    prefix, _, k = name.rpartition("-")
    return (
        prefix == pool.name
        and k.isascii()
        and k.isdigit()
        and str(int(k)) == k
        and int(k) < pool.nodes
    )


def _ranges(slots: list[int]) -> str:
    """'3-5, 9' for [3, 4, 5, 9]; at most ten ranges, then a count."""
    parts: list[str] = []
    start = prev = slots[0]
    for s in [*slots[1:], None]:
        if s is not None and s == prev + 1:
            prev = s
            continue
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
        if s is not None:
            start = prev = s
    more = f" (+{len(parts) - 10} more)" if len(parts) > 10 else ""
    return ", ".join(parts[:10]) + more


def compile_instance(
    spec: InstanceSpec, demands: Mapping[int, Sequence[float]] | None = None
) -> Instance:
    """Validate and compile a spec. `demands` overrides service demand (e.g. read from CSV files)."""
    resolved: dict[int, Sequence[float]] = {
        i: s.demand for i, s in enumerate(spec.services) if isinstance(s.demand, list)
    }
    resolved.update(demands or {})
    return _Compiler(spec, resolved).build()
