"""Compiling a spec: `compile_instance` turns an `InstanceSpec` (the file as written) into an
`Instance` (instance.py), resolving time units and names and rejecting bad input with one message
per problem, each naming its field path (`jobs[3].duration.h100: ...`), as FORMAT.md requires.

`_Compiler` compiles the horizon, pools, nodes and outages and puts the instance together; its
parts compile the rest: `CompilerCore` (compiler_core.py: time units, problems), `JobsCompiler`
(compiler_jobs.py; one placed job's checks in `PlacedCompiler`, compiler_placed.py) and
`ServicesCompiler` (compiler_services.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from horizon_opt.errors import InstanceError
from horizon_opt.model.compiler_jobs import JobsCompiler
from horizon_opt.model.compiler_services import ServicesCompiler
from horizon_opt.model.instance import BoolArray, Instance, Pool
from horizon_opt.model.node_names import all_node_names
from horizon_opt.model.open_end import extend
from horizon_opt.model.spec import MAX_NODE_SLOTS, MAX_NODES, InstanceSpec
from horizon_opt.model.teams import compile_teams


class _Compiler(JobsCompiler, ServicesCompiler):
    """Builds an `Instance`: the horizon, pools, nodes and outages here, the services and jobs by
    its parts, every problem collected instead of stopping at the first."""

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
            self.check_services_fit(pools, up, services, jobs)
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
        extended = extend(compiled, self.tails, exactly=self.planned_slots)
        # past the horizon as written, placed jobs that run on (and the demand there) must
        # leave room for the replicas as well
        self.check_services_fit(
            extended.pools, extended.up, extended.services, extended.jobs, first=self.S
        )
        if self.problems:
            raise InstanceError(self.problems)
        return extended


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
