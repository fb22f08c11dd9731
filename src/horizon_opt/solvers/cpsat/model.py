"""The node-level CP-SAT model of one (sub)problem: which free jobs run, where, and when.

A `Subproblem` names the free jobs, the nodes they may use and the GPUs those nodes have left
for them at every slot (after inference replicas, outages and every job that stays fixed). The
full problem is the subproblem with every job free on every node; the LNS loop builds small ones.

Per free job: one start variable, whose domain is the union of the starts its window allows on
its pools (`cp_domain`: the one place a `StartDomain` becomes a variable's domain), a presence
literal per allowed pool (which keeps the start to that pool's domain), and per candidate node
an optional fixed-size interval with its own presence literal. A job of `gpus <= G` picks exactly
one node; a larger gang picks `gpus / G` whole nodes. Each node is a cumulative resource of
capacity G whose leftover profile is carved out with fixed intervals, so any solution is
placeable on concrete GPUs (see `assemble.gpu_indices`). When the subproblem asks for it
(`inference_hint`), inference replicas are decided too: an integer per service, node and slot,
summing to `req` at each slot, and per node and slot a one-slot interval whose demand is those
replicas' GPUs, in the same cumulative. Objective: the scaled value of the jobs
that end on time (a job may also run late, for no value, when a successor needs it), minus the
value-weighted sum of end slots (`end_weights`) as a tie-break that is scaled never to outweigh
one unit of value, or, with an end rate (`end_rate`), that trades against value at that rate.
"""

from __future__ import annotations

import functools
import itertools
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from horizon_opt.model.instance import Instance, IntArray, Promise
from horizon_opt.model.windows import StartDomain
from horizon_opt.plans.inference import Layout
from horizon_opt.solvers.assemble import Placement
from horizon_opt.solvers.borrowed import team_used
from horizon_opt.solvers.cpsat.objective import Weighing, value_units


def cp_domain(starts: StartDomain) -> cp_model.Domain:
    """A start domain as CP-SAT's."""
    return cp_model.Domain.from_intervals([list(interval) for interval in starts.intervals])


@dataclass
class Subproblem:
    jobs: list[int]  # free job indices
    nodes: list[int]  # candidate global node indices
    residual: IntArray  # [len(nodes), S] GPUs left for the free jobs
    earliest: dict[int, int]  # per free job: release, pushed past fixed predecessors
    latest_end: dict[int, int]  # per free job: horizon end, pulled before fixed successors
    must_run: set[int] = field(default_factory=set)  # free jobs that a fixed successor needs
    hint: dict[int, Placement] = field(default_factory=dict)
    kind: str = "full"  # how the LNS chose it (for its log)
    # When set, inference replicas are decided too (hinted with this layout), and `residual`
    # holds what the nodes have before inference: the model is then exact for the instance.
    inference_hint: Layout | None = None
    # [teams, P, S] GPUs each team's free jobs may take (`Instance.team_room` less the fixed
    # jobs'); None when no team has a limit.
    team_room: IntArray | None = None


def room_beside(instance: Instance, fixed: Sequence[Placement]) -> IntArray | None:
    """[teams, P, S] each team's room once the `fixed` placements hold their GPUs; None when no
    team has a limit."""
    if not instance.limited:
        return None
    room: IntArray = instance.team_room - team_used(instance, fixed)
    return room


def pack_subproblem(
    instance: Instance,
    layout: Layout,
    runs: Mapping[int, tuple[int, int]],
    hint: Sequence[Placement] = (),
) -> Subproblem:
    """The jobs of `runs` (job -> (pool, start)) on every node, each within its run's slots,
    the replicas decided (hinted with `layout`), a run that `hint` has on the same pool and
    slot hinted onto its nodes there."""
    return Subproblem(
        jobs=sorted(runs),
        nodes=list(range(instance.num_nodes)),
        residual=instance.capacity.astype(np.int64),
        earliest={j: s for j, (_, s) in runs.items()},
        latest_end={j: s + instance.jobs[j].durations[p] for j, (p, s) in runs.items()},
        hint={p.job: p for p in hint if runs.get(p.job) == (p.pool, p.start)},
        kind="pack",
        inference_hint=layout,
        team_room=room_beside(instance, []),
    )


class NodeModel:
    """Builds the CP-SAT model of a subproblem: variables, constraints, objective, hint."""

    def __init__(
        self,
        instance: Instance,
        sub: Subproblem,
        scale: float,
        weights: Sequence[int],
        rate: float = 0.0,
    ) -> None:
        self.inst = instance
        self.sub = sub
        self.model = cp_model.CpModel()
        self.scale = scale
        self.end_weights = weights  # `end_weights(instance)`, computed once by the search
        self.rate = rate  # `end_rate`: 0 for a tie-break only
        self.node_row = {n: r for r, n in enumerate(sub.nodes)}
        self.start: dict[int, cp_model.IntVar] = {}
        self.end: dict[int, cp_model.IntVar] = {}
        self.on_pool: dict[int, dict[int, cp_model.IntVar]] = {}
        self.on_node: dict[int, dict[int, cp_model.IntVar]] = {}
        self.on_time: dict[int, list[cp_model.IntVar]] = {}  # literals whose sum is 1 when on time
        self.kept: dict[int, cp_model.IntVar] = {}  # job -> 1 when it keeps its promise on time
        self.intervals: dict[int, list[tuple[cp_model.IntervalVar, int]]] = defaultdict(list)
        # (service, global node, slot) -> replicas, and node -> slot -> its inference GPUs
        self.replicas: dict[tuple[int, int, int], cp_model.IntVar] = {}
        self.inference_gpus: dict[int, dict[int, cp_model.IntVar]] = defaultdict(dict)
        self._variables()
        if sub.inference_hint is not None:
            self._inference()
        self._node_choice()
        self._capacity()
        self._team_limits()
        self._precedence()
        self._symmetry()
        self._promises()
        self._objective()
        self._hint()

    # -- variables -----------------------------------------------------------------------------

    def _candidate_nodes(self, j: int, pool_idx: int) -> list[int]:
        pool = self.inst.pools[pool_idx]
        return [
            n for n in self.sub.nodes if self.inst.node_pool[n] == pool_idx and n in pool.node_range
        ]

    def _variables(self) -> None:
        m = self.model
        for j in self.sub.jobs:
            job = self.inst.jobs[j]
            lo, hi = self.sub.earliest[j], self.sub.latest_end[j]
            window = self.inst.windows[j]
            pools = {}
            for p, d in job.durations.items():
                nodes = self._candidate_nodes(j, p)
                starts = window.allowed(d, lo, hi)
                if starts and len(nodes) >= job.gangs[p].nodes:
                    pools[p] = (d, nodes, starts)
            if not pools:
                continue
            dmin = min(d for d, _, _ in pools.values())
            anywhere = functools.reduce(
                cp_model.Domain.union_with, (cp_domain(s) for _, _, s in pools.values())
            )
            start = m.new_int_var_from_domain(anywhere, f"start[{job.id}]")
            end = m.new_int_var(lo + dmin, hi, f"end[{job.id}]")
            self.start[j] = start
            self.end[j] = end
            self.on_pool[j] = {}
            self.on_node[j] = {}
            for p, (d, nodes, starts) in pools.items():
                y = m.new_bool_var(f"pool[{job.id},{self.inst.pools[p].name}]")
                self.on_pool[j][p] = y
                if len(starts.intervals) == 1:
                    m.add(start + d <= hi).only_enforce_if(y)
                else:  # holes: the start on this pool keeps to its domain
                    m.add_linear_expression_in_domain(start, cp_domain(starts)).only_enforce_if(y)
                m.add(end == start + d).only_enforce_if(y)
                demand = job.gangs[p].gpus_per_node
                for n in nodes:
                    z = m.new_bool_var(f"node[{job.id},{self.inst.node_names[n]}]")
                    self.on_node[j][n] = z
                    iv = m.new_optional_fixed_size_interval_var(start, d, z, f"run[{job.id},{n}]")
                    self.intervals[n].append((iv, demand))
            present = sum(self.on_pool[j].values())
            m.add(present <= 1)
            if j in self.sub.must_run:
                m.add(present == 1)
            due = self.inst.windows[j].latest_end
            if due >= hi:
                self.on_time[j] = list(self.on_pool[j].values())
            elif due - lo >= dmin:
                o = m.new_bool_var(f"on_time[{job.id}]")
                m.add(o <= present)
                m.add(end <= due).only_enforce_if(o)
                self.on_time[j] = [o]
            else:
                self.on_time[j] = []  # can only run late

    def _inference(self) -> None:
        """Replicas per service, node and slot, totalling `req` at every slot."""
        m = self.model
        S = self.inst.slots
        for sv in self.inst.services:
            pool = self.inst.pools[sv.pool]
            g = sv.gpus_per_replica
            for t in range(S):
                req = int(sv.req[t])
                if req == 0:
                    continue
                counts = []
                for n in pool.node_range:
                    cap = int(self.sub.residual[self.node_row[n], t]) // g
                    if cap > 0:
                        r = m.new_int_var(0, min(cap, req), f"replicas[{sv.name},{n},{t}]")
                        self.replicas[sv.index, n, t] = r
                        counts.append(r)
                m.add(sum(counts) == req)
        by_node: dict[tuple[int, int], list[tuple[int, cp_model.IntVar]]] = defaultdict(list)
        for (v, n, t), r in self.replicas.items():
            by_node[n, t].append((self.inst.services[v].gpus_per_replica, r))
        for (n, t), terms in by_node.items():
            room = int(self.sub.residual[self.node_row[n], t])
            load = m.new_int_var(0, room, f"inference[{n},{t}]")
            m.add(load == sum(g * r for g, r in terms))
            self.inference_gpus[n][t] = load

    # -- constraints ---------------------------------------------------------------------------

    def _node_choice(self) -> None:
        """Exactly one node for a small gang, gpus/G whole nodes for a large one."""
        for j, pools in self.on_pool.items():
            job = self.inst.jobs[j]
            for p, y in pools.items():
                k = job.gangs[p].nodes
                zs = [z for n, z in self.on_node[j].items() if self.inst.node_pool[n] == p]
                self.model.add(sum(zs) == k * y)

    def _capacity(self) -> None:
        """Per node: free jobs' GPUs fit under the leftover profile (fixed intervals carve it)."""
        m = self.model
        S = self.inst.slots
        for n, items in self.intervals.items():
            G = int(self.inst.node_gpus[n])
            taken = G - self.sub.residual[self.node_row[n]]
            ivs = [iv for iv, _ in items]
            demands: list[cp_model.LinearExprT] = [d for _, d in items]
            cuts = np.flatnonzero(np.diff(taken)) + 1
            for a, b in zip(np.r_[0, cuts], np.r_[cuts, S], strict=True):
                if taken[a] > 0:
                    ivs.append(m.new_fixed_size_interval_var(int(a), int(b - a), f"busy[{n},{a}]"))
                    demands.append(int(taken[a]))
            for t, load in self.inference_gpus.get(n, {}).items():
                ivs.append(m.new_fixed_size_interval_var(t, 1, f"inference[{n},{t}]"))
                demands.append(load)
            if (
                n not in self.inference_gpus
                and sum(d for _, d in items) + int(taken.max(initial=0)) <= G
            ):
                continue  # cannot overflow: skip the constraint
            m.add_cumulative(ivs, demands, G)

    def _team_limits(self) -> None:
        """Per team and pool with a limit: its free jobs' GPUs fit its room at every slot."""
        room = self.sub.team_room
        if room is None:
            return
        m = self.model
        by_limit: dict[tuple[int, int], list[tuple[cp_model.IntervalVar, int]]] = defaultdict(list)
        for j, pools in self.on_pool.items():
            job = self.inst.jobs[j]
            if job.team is None:
                continue
            for p, y in pools.items():
                if p in self.inst.teams[job.team].limit:
                    d = job.durations[p]
                    iv = m.new_optional_fixed_size_interval_var(
                        self.start[j], d, y, f"team[{job.id},{p}]"
                    )
                    by_limit[job.team, p].append((iv, job.gpus))
        for (team, p), items in by_limit.items():
            profile = room[team, p]
            cap = int(profile.max(initial=0))
            if sum(g for _, g in items) <= int(profile.min(initial=0)):
                continue  # cannot exceed the room anywhere
            ivs = [iv for iv, _ in items]
            demands: list[cp_model.LinearExprT] = [g for _, g in items]
            taken = cap - profile
            cuts = np.flatnonzero(np.diff(taken)) + 1
            for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(taken)], strict=True):
                if taken[a] > 0:
                    ivs.append(m.new_fixed_size_interval_var(int(a), int(b - a), f"held[{team}]"))
                    demands.append(int(taken[a]))
            m.add_cumulative(ivs, demands, cap)

    def _precedence(self) -> None:
        free = set(self.sub.jobs)
        for j in self.on_pool:
            for p in self.inst.jobs[j].after:
                if p not in free:
                    continue  # fixed predecessor: already in earliest[j]
                if p not in self.on_pool:  # a free predecessor that cannot run here
                    self.model.add(sum(self.on_pool[j].values()) == 0)
                    continue
                present_j = sum(self.on_pool[j].values())
                present_p = sum(self.on_pool[p].values())
                self.model.add(present_j <= present_p)
                if len(self.on_pool[j]) == 1:
                    lit = next(iter(self.on_pool[j].values()))
                    self.model.add(self.start[j] >= self.end[p]).only_enforce_if(lit)
                else:
                    for lit in self.on_pool[j].values():
                        self.model.add(self.start[j] >= self.end[p]).only_enforce_if(lit)

    def _symmetry(self) -> None:
        """Identical nodes (same pool, same leftover profile) are interchangeable: order them by
        the GPU-slots they carry, largest first. Any solution maps to one that obeys this by
        renumbering those nodes, so no pwo is lost; the hint is renumbered the same way."""
        self.renumber: dict[int, int] = {}
        groups: dict[tuple[int, bytes], list[int]] = defaultdict(list)
        for n in self.sub.nodes:
            if n in self.intervals:
                key = (int(self.inst.node_pool[n]), self.sub.residual[self.node_row[n]].tobytes())
                groups[key].append(n)
        load: dict[int, list[tuple[int, cp_model.IntVar]]] = defaultdict(list)
        for j, choice in self.on_node.items():
            job = self.inst.jobs[j]
            for n, z in choice.items():
                p = int(self.inst.node_pool[n])
                load[n].append((job.gangs[p].gpus_per_node * job.durations[p], z))
        hinted = {n: 0 for n in self.sub.nodes}
        for h in self.sub.hint.values():
            for n in h.nodes:
                if n in hinted:
                    hinted[n] += (
                        h.gpus_per_node(self.inst) * self.inst.jobs[h.job].durations[h.pool]
                    )
        for group in groups.values():
            if len(group) < 2:
                continue
            group.sort()
            for a, b in itertools.pairwise(group):
                self.model.add(sum(w * z for w, z in load[a]) >= sum(w * z for w, z in load[b]))
            by_load = sorted(group, key=lambda n: -hinted[n])
            self.renumber.update(zip(by_load, group, strict=True))

    # -- objective -----------------------------------------------------------------------------

    def _promises(self) -> None:
        """A literal per promise this subproblem can keep: promised pool and start (or, for a
        `by` promise, any pool and a start no later), on time."""
        m = self.model
        for j, pools in self.on_pool.items():
            promise = self.inst.jobs[j].promise
            if promise is None or not self.on_time[j] or not self._keepable(j, promise):
                continue
            k = m.new_bool_var(f"kept[{self.inst.jobs[j].id}]")
            if promise.by:
                m.add(k <= sum(pools.values()))
                m.add(self.start[j] <= promise.start).only_enforce_if(k)
                for p, lit in pools.items() if promise.by_pool else ():
                    m.add(self.start[j] <= promise.latest(p)).only_enforce_if([k, lit])
            else:
                m.add_implication(k, pools[promise.pool])
                m.add(self.start[j] == promise.start).only_enforce_if(k)
            if self.on_time[j][0] not in pools.values():
                m.add_implication(k, self.on_time[j][0])
            self.kept[j] = k

    def _keepable(self, j: int, promise: Promise) -> bool:
        """Whether the job's start bounds allow it to keep the promise."""
        if promise.start < self.sub.earliest[j]:
            return False
        if promise.by:
            return True
        pools = self.on_pool[j]
        d = self.inst.jobs[j].durations.get(promise.pool, 0)
        return promise.pool in pools and promise.start <= self.sub.latest_end[j] - d

    def _objective(self) -> None:
        """max scale*value*present*M - K*sum(w*end), w the job's `end_weights` and M, K the
        `Weighing` of value against ends; a kept promise adds its bonus's units."""
        weights = self.end_weights
        ends_max = sum(weights[j] * self.sub.latest_end[j] for j in self.on_pool)
        self.weighing = w = Weighing.at_rate(self.rate * self.scale, ends_max)
        terms = []
        for j, lits in self.on_time.items():
            coef = value_units(self.inst.jobs[j].value, self.scale) * w.per_unit
            terms += [coef * lit for lit in lits]
        for j, k in self.kept.items():
            bonus = self.inst.jobs[j].promise.bonus  # type: ignore[union-attr]
            if bonus > 0:
                terms.append(value_units(bonus, self.scale) * w.per_unit * k)
        ends = [w.per_end * weights[j] * self.end[j] for j in self.on_pool]
        self.model.maximize(sum(terms) - sum(ends))

    def _hint(self) -> None:
        self._hint_layout()
        self._hint_jobs()

    def _hint_layout(self) -> None:
        m = self.model
        layout = self.sub.inference_hint
        if layout is not None:
            for sv in self.inst.services:
                first = self.inst.pools[sv.pool].first_node
                for n in self.inst.pools[sv.pool].node_range:
                    to = self.renumber.get(n, n)
                    for t in range(self.inst.slots):
                        r = self.replicas.get((sv.index, to, t))
                        if r is not None:
                            m.add_hint(r, int(layout.replicas[sv.index][n - first, t]))

    def _hint_jobs(self) -> None:
        m = self.model
        for j in self.on_pool:
            h = self.sub.hint.get(j)
            if h is not None and self.renumber:
                nodes = tuple(sorted(self.renumber.get(n, n) for n in h.nodes))
                h = Placement(h.job, h.pool, h.start, nodes)
            ok = (
                h is not None
                and h.pool in self.on_pool[j]
                and all(n in self.on_node[j] for n in h.nodes)
            )
            for p, y in self.on_pool[j].items():
                m.add_hint(y, bool(ok and h is not None and h.pool == p))
            for n, z in self.on_node[j].items():
                m.add_hint(z, bool(ok and h is not None and n in h.nodes))
            if ok and h is not None:
                m.add_hint(self.start[j], h.start)
                m.add_hint(self.end[j], h.end(self.inst))
                if len(self.on_time[j]) == 1 and self.on_time[j][0] not in self.on_pool[j].values():
                    m.add_hint(self.on_time[j][0], h.earned(self.inst) > 0)
                if j in self.kept:
                    m.add_hint(self.kept[j], h.earned(self.inst) > 0 and h.bonus(self.inst) > 0)
            else:
                m.add_hint(self.start[j], self.sub.earliest[j])
                m.add_hint(self.end[j], self.sub.earliest[j])

    def keep_only(self, runs: Mapping[int, tuple[int, int]]) -> None:
        """Each free job only as `runs` has it (job -> (pool, start); every free job has one),
        or not at all: what is left to decide is its nodes (and, when the model decides them,
        the inference replicas). The runs are the hint, on the nodes the subproblem's hint
        gives them (`pack_subproblem`)."""
        self.model.clear_hints()  # type: ignore[no-untyped-call]
        self._hint_layout()
        for j, pools in self.on_pool.items():
            pool, start = runs[j]
            for p, y in pools.items():
                if p == pool:
                    self.model.add(self.start[j] == start).only_enforce_if(y)
                else:
                    self.model.add(y == 0)
                self.model.add_hint(y, p == pool)
            self.model.add_hint(self.start[j], start)
            h = self.sub.hint.get(j)  # (a pack's hint has only runs the same as `runs`)
            if h is not None:
                nodes = {self.renumber.get(n, n) for n in h.nodes}
                if nodes <= self.on_node[j].keys():
                    for n, z in self.on_node[j].items():
                        self.model.add_hint(z, n in nodes)

    # -- solution ------------------------------------------------------------------------------

    def extract(self, solver: cp_model.CpSolver) -> dict[int, Placement]:
        out: dict[int, Placement] = {}
        for j, pools in self.on_pool.items():
            for p, y in pools.items():
                if solver.boolean_value(y):
                    nodes = tuple(
                        sorted(n for n, z in self.on_node[j].items() if solver.boolean_value(z))
                    )
                    out[j] = Placement(j, p, int(solver.value(self.start[j])), nodes)
        return out

    def extract_layout(self, solver: cp_model.CpSolver) -> Layout:
        """The inference layout of a solution (when the model decides it)."""
        free = self.inst.capacity.astype(np.int64).copy()
        replicas = []
        for sv in self.inst.services:
            pool = self.inst.pools[sv.pool]
            counts = np.zeros((pool.nodes, self.inst.slots), dtype=np.int64)
            for n in pool.node_range:
                for t in range(self.inst.slots):
                    r = self.replicas.get((sv.index, n, t))
                    if r is not None:
                        counts[n - pool.first_node, t] = solver.value(r)
            free[pool.first_node : pool.first_node + pool.nodes] -= counts * sv.gpus_per_replica
            counts.setflags(write=False)
            replicas.append(counts)
        free.setflags(write=False)
        return Layout(tuple(replicas), free)
