"""Compiling a spec: `compile_instance` turns an `InstanceSpec` (the file as written) into an
`Instance` (instance.py), resolving time units and names and rejecting bad input with one message
per problem, each naming its field path (`jobs[3].duration.h100: ...`), as FORMAT.md requires.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime, timedelta

import numpy as np

from horizon_opt.compiler_checks import check_inference, check_placed, slot_ranges
from horizon_opt.compiler_placed import gpus_by_node
from horizon_opt.errors import InstanceError
from horizon_opt.instance import (
    BoolArray,
    FloatArray,
    Gang,
    Instance,
    Job,
    Placed,
    Pool,
    Service,
    _placed_gpus,
    dependency_cycle,
    duration_minutes,
    gang_on,
    horizon_start,
    required_replicas,
)
from horizon_opt.node_names import all_node_names
from horizon_opt.open_end import extend
from horizon_opt.spec import (
    MAX_DEMAND,
    MAX_NODE_SLOTS,
    MAX_NODES,
    MAX_SLOTS,
    MAX_TIME_SLOTS,
    InstanceSpec,
    show,
)
from horizon_opt.teams import compile_teams, team_index
from horizon_opt.windows import first_start


class _Compiler:
    """Builds an `Instance`, collecting every problem instead of stopping at the first."""

    def __init__(
        self,
        spec: InstanceSpec,
        demands: Mapping[int, Sequence[float]],
        passed: Collection[int] = (),
        planned_slots: int | None = None,
    ) -> None:
        self.spec = spec
        self.demands = demands
        self.passed = passed  # the services whose demand was passed in, not written inline
        self.tails: dict[int, FloatArray] = {}  # service -> its passed demand past slot S
        self.planned_slots = planned_slots  # with an open end: plan over exactly these
        self.problems: list[str] = []
        self.warnings: list[str] = []
        self.S = spec.horizon.slots
        self.slot_minutes = spec.horizon.slot_minutes
        self.start = horizon_start(spec)
        self.now = 0
        self.up_rows: BoolArray = np.ones((0, 0), dtype=np.bool_)
        self.node_pools: list[int] = []
        self.node_names: tuple[str, ...] = ()
        self.node_index: dict[str, int] = {}

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

    def up(self, pools: tuple[Pool, ...]) -> BoolArray:
        n = sum(p.nodes for p in pools)
        up = np.ones((n, self.S), dtype=np.bool_)
        named = any(p.node_names is not None for p in self.spec.pools)
        known = "<pool>-<i>" + (", or their pool's node_names" if named else "")
        for i, o in enumerate(self.spec.outages):
            path = f"outages[{i}]"
            node = self.node_index.get(o.node)
            if node is None:
                self.error(f"{path}.node", f"unknown node {o.node!r} (nodes are {known})")
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
            if self.spec.horizon.open_end and i in self.passed and len(demand) > self.S:
                # (a series passed in compiled, extension included: `open_end.extend` keeps it)
                self.tails[len(services)] = demand[self.S :]
                demand = demand[: self.S]
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
            req = required_replicas(demand, s.headroom)
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
            after = self.job_after(i, ids)
            team = team_index(j.team, self.teams, f"{path}.team", self.error)
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
                    release=first_start(release, self.now, placed),
                    submitted=release if placed is None else min(release, placed.start),
                    deadline=deadline,
                    after=tuple(after),
                    work_hours=j.gpus * fastest * self.slot_minutes / 60,
                    placed=placed,
                    team=team,
                )
            )
        if len(jobs) == len(self.spec.jobs):
            self.check_cycles(jobs)
            check_placed(
                jobs, pools, self.S, self.now, self.node_names, self.node_pools, self.error
            )
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
        released = self.time(j.release, f"jobs[{i}].release", round_up=False)
        if not 0 <= start < self.S:
            self.error(f"{path}.start", f"slot {start} is outside the horizon [0, {self.S})")
        elif released is not None and start < released:  # its release's own slot is fine
            self.error(f"{path}.start", f"slot {start} is before its release (slot {released})")
        if spec.end is not None:  # the expected end, when known better than the estimate
            given = self.time(spec.end, f"{path}.end", round_up=True)
            if given is not None and given <= start:
                self.error(f"{path}.end", f"slot {given} is not after start {start}")
            elif given is not None:
                end = given
        if end > self.S and not self.spec.horizon.open_end:
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
        gpus = gpus_by_node(spec.gpus, pool, self.node_index, self.node_pools, path, self.error)
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
                    f"job {j.id!r} runs on {self.node_names[n]} while that node "
                    f"is down (slots {slot_ranges((down + start).tolist())})",
                )
        return Placed(pool.index, start, end, gpus)

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
        found = dependency_cycle(jobs)
        if found is not None:
            node, cycle = found
            names = " -> ".join(jobs[c].id for c in cycle)
            self.error(f"jobs[{node}].after", f"dependency cycle: {names}")

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

    def job_after(self, i: int, ids: dict[str, int]) -> list[int]:
        """The indices of the jobs that job i runs after (an unknown id, or itself, is an
        error)."""
        j, after = self.spec.jobs[i], []
        for k, dep in enumerate(j.after):
            if dep not in ids:
                self.error(f"jobs[{i}].after[{k}]", f"unknown job id {dep!r}")
            elif dep == j.id:
                self.error(f"jobs[{i}].after[{k}]", "a job cannot run after itself")
            else:
                after.append(ids[dep])
        return after

    def build(self) -> Instance:
        self.sizes()
        if self.problems:
            raise InstanceError(self.problems)
        self.horizon()
        self.now = self.parse_now()
        pools = self.pools()
        self.node_names, problems = all_node_names(self.spec.pools)
        self.problems += problems
        self.node_index = {n: i for i, n in enumerate(self.node_names)}
        self.node_pools = [p.index for p in pools for _ in range(p.nodes)]
        self.up_rows = up = self.up(pools)
        services = self.services(pools)
        self.teams = compile_teams(self.spec.teams, {p.name: p.index for p in pools}, self.error)
        jobs = self.jobs(pools)
        if not self.problems:
            names = [x.name for x in self.spec.services]
            held = _placed_gpus(jobs, up.shape)
            check_inference(pools, up, services, held, names, self.error)
        if self.problems:
            raise InstanceError(self.problems)
        node_pool = np.array([p.index for p in pools for _ in range(p.nodes)], dtype=np.int64)
        node_pool.setflags(write=False)
        up.setflags(write=False)
        compiled = Instance(
            name=self.spec.name,
            slots=self.S,
            slot_minutes=self.slot_minutes,
            start=self.start,
            pools=pools,
            node_names=self.node_names,
            node_pool=node_pool,
            up=up,
            services=services,
            jobs=jobs,
            spec=self.spec,
            warnings=tuple(self.warnings),
            now=self.now,
            teams=self.teams,
        )
        if not self.spec.horizon.open_end:
            return compiled
        return extend(compiled, self.tails, exactly=self.planned_slots)


def compile_instance(
    spec: InstanceSpec,
    demands: Mapping[int, Sequence[float]] | None = None,
    planned_slots: int | None = None,
) -> Instance:
    """Validate and compile a spec. `demands` overrides service demand (e.g. read from CSV files;
    with an open end, a compiled series may go on past the horizon as written).
    `planned_slots`: with an open end, the horizon to plan over instead of the one its jobs
    need (a state compiled again with holds keeps the horizon it had)."""
    resolved: dict[int, Sequence[float]] = {
        i: s.demand for i, s in enumerate(spec.services) if isinstance(s.demand, list)
    }
    resolved.update(demands or {})
    return _Compiler(spec, resolved, set(demands or ()), planned_slots).build()
