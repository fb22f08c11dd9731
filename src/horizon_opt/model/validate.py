"""Warnings: what an instance may legally say but almost certainly does not mean.

`compile_instance` refuses what is wrong; `validate` lists what is legal yet can never matter or
never happen: a job that cannot end in time even on a cluster with no other batch work, a job
that waits for one that can never run, an outage outside the horizon, a service that never needs
a replica, a pool that nothing can use. Each warning is one line that starts with its field
path, like an error, so that a tool can print both the same way.
"""

from __future__ import annotations

import numpy as np

from horizon_opt.model.instance import (
    BoolArray,
    Gang,
    Instance,
    IntArray,
    Job,
    Pool,
    topological_order,
)
from horizon_opt.model.open_end import open_end_hint
from horizon_opt.model.packing import pack


def validate(instance: Instance) -> list[str]:
    """Every warning about `instance`, one line each: the compiler's first, then jobs, services
    and pools in file order."""
    return [
        *instance.warnings,
        *_job_warnings(instance),
        *(
            f"services[{s.index}].demand: zero at every slot: the service never needs a replica"
            for s in instance.services
            if not s.demand.any()
        ),
        *_unused_pools(instance),
        *_team_warnings(instance),
    ]


def _team_warnings(instance: Instance) -> list[str]:
    """A job whose team's limit is below its gang on every pool it may use (it can never
    run), and a pool whose quotas add up to more GPUs than it has (not every team can have
    its quota at once)."""
    out = [
        f"jobs[{j.index}].team: the limit of team {instance.teams[j.team].name!r} is below its "
        f"{j.gpus} GPUs on every pool it may use: it can never run"
        for j in instance.jobs
        if j.team is not None
        and all(instance.teams[j.team].limit.get(p, j.gpus) < j.gpus for p in j.durations)
    ]
    for pool in instance.pools:
        quotas = sum(t.quota.get(pool.index, 0) for t in instance.teams)
        if quotas > pool.nodes * pool.gpus_per_node:
            out.append(
                f"teams: quotas on pool {pool.name!r} add up to {quotas} GPUs, more than its "
                f"{pool.nodes * pool.gpus_per_node}: not every team can have its quota at once"
            )
    return out


def _unused_pools(instance: Instance) -> list[str]:
    used = {s.pool for s in instance.services} | {p for j in instance.jobs for p in j.durations}
    return [
        f"pools[{p.index}]: no job or service can use pool {p.name!r}"
        for p in instance.pools
        if p.index not in used
    ]


def _job_warnings(instance: Instance) -> list[str]:
    """Jobs that can never end in time, or never run at all, on a cluster with no other batch
    work (inference and outages still hold, and a job still starts after its predecessors)."""
    never = instance.slots + 1  # the earliest end of a job that cannot end within the horizon
    room = {p.index: _EmptyPool(instance, p) for p in instance.pools}
    earliest_end: dict[int, int] = {}
    found: dict[int, list[str]] = {}
    for j in topological_order(instance):
        job, window = instance.jobs[j], instance.windows[j]
        earliest_end[j] = never
        blocked = [k for k, p in enumerate(job.after) if earliest_end[p] == never]
        shortest = min(job.durations.values())
        if blocked:
            found[j] = [
                f"jobs[{j}].after[{k}]: runs after {instance.jobs[job.after[k]].id!r}, which can "
                "never run"
                for k in blocked
            ]
        elif shortest > (left := window.horizon - window.earliest):
            found[j] = [
                f"jobs[{j}].duration: its shortest run ({shortest} slots) is longer than the "
                f"{left} slots left after its release (slot {window.earliest}): it can "
                f"never run{open_end_hint(instance)}"
            ]
        else:
            ready = window.after(earliest_end[p] for p in job.after)
            end = min(room[p].earliest_end(job, p, ready) for p in job.durations)
            earliest_end[j] = end
            if end == never:
                found[j] = [
                    f"jobs[{j}]: cannot end within the horizon (slot {window.horizon}) even on "
                    f"an empty cluster (inference and outages only, a start at slot {ready} or "
                    f"later): it can never run{open_end_hint(instance)}"
                ]
            elif not window.on_time(end):
                found[j] = [
                    f"jobs[{j}]: cannot end by its deadline (slot {window.latest_end}) even on an "
                    f"empty cluster: earliest end is slot {end}"
                ]
    return [line for j in sorted(found) for line in found[j]]


class _EmptyPool:
    """When one job can run on a pool that holds only inference and outages.

    Nodes of a pool differ only in their outages, so a gang that holds its nodes for a whole run
    leaves the same room to inference whichever nodes they are: `gang.nodes` fewer whole nodes,
    and, when it does not take whole nodes, one node with GPUs left over. Inference fits at a
    slot when first-fit packing (`packing.pack`, the compiler's rule) places every required
    replica, the leftover GPUs first.
    """

    def __init__(self, instance: Instance, pool: Pool) -> None:
        S = instance.slots
        self.instance = instance
        self.pool = pool
        self.services = [s for s in instance.services if s.pool == pool.index]
        reqs = np.array([s.req for s in self.services], dtype=np.int64).reshape(-1, S)
        self.needs = [tuple(int(n) for n in column) for column in reqs.T]  # replicas, per slot
        up = instance.up[pool.first_node : pool.first_node + pool.nodes]
        self.count = up.sum(axis=0)  # nodes up, per slot
        # Per node with an outage, per slot t: the first slot >= t at which it is down (S: none).
        flaky = up[~up.all(axis=1)]
        down_at = np.where(flaky, S, np.arange(S))
        self.next_down = np.minimum.accumulate(down_at[:, ::-1], axis=1)[:, ::-1]
        self.steady = pool.nodes - len(flaky)  # nodes never down
        self._starts: dict[tuple[Gang, int], BoolArray] = {}
        self._whole_nodes: dict[int, IntArray] = {}
        self._packed: dict[tuple[int, tuple[int, ...]], int] = {}

    def earliest_end(self, job: Job, pool: int, ready: int) -> int:
        """The earliest end of `job` on this pool from a start at or after `ready` (S + 1: none)."""
        d, S = job.durations[pool], self.instance.slots
        fits = self.starts(job.gangs[pool], d)
        for lo, hi in self.instance.windows[job.index].allowed(d, ready, S).intervals:
            ok = np.flatnonzero(fits[lo : hi + 1])
            if ok.size:
                return lo + int(ok[0]) + d
        return S + 1

    def starts(self, gang: Gang, d: int) -> BoolArray:
        """Per slot s: the gang can run [s, s + d) here (its nodes up, inference next to it)."""
        key = (gang, d)
        if key not in self._starts:
            S = self.instance.slots
            ok = np.zeros(S, dtype=np.bool_)
            if d <= S:
                left = 0 if gang.whole else self.pool.gpus_per_node - gang.gpus_per_node
                fits = self.count - gang.nodes >= self.whole_nodes(left)
                s = np.arange(S - d + 1)
                up_whole_run = self.steady + (self.next_down[:, s] >= s + d).sum(axis=0)
                bad = np.concatenate([[0], np.cumsum(~fits)])
                ok[s] = (up_whole_run >= gang.nodes) & (bad[s + d] == bad[s])
            self._starts[key] = ok
        return self._starts[key]

    def whole_nodes(self, left: int) -> IntArray:
        """Per slot: how many whole nodes the required replicas need besides a node with `left`
        free GPUs (more than the pool has when they never fit)."""
        if left not in self._whole_nodes:
            self._whole_nodes[left] = np.array(
                [self.packed(left, needs) for needs in self.needs], dtype=np.int64
            )
        return self._whole_nodes[left]

    def packed(self, left: int, needs: tuple[int, ...]) -> int:
        """First-fit places each replica identically whatever whole nodes follow the ones it
        uses, so the replicas fit on k whole nodes exactly when, packed onto all the pool's
        nodes, they use none past the k-th."""
        key = (left, needs)
        if key not in self._packed:
            g, n = self.pool.gpus_per_node, self.pool.nodes
            free = np.array([left] + [g] * n, dtype=np.int64)
            demands = [(s.gpus_per_replica, k) for s, k in zip(self.services, needs, strict=True)]
            placed, _ = pack(free, demands)
            if any(placed[i].sum() < k for i, k in enumerate(needs)):
                self._packed[key] = n + 1
            else:
                used = np.flatnonzero(placed[:, 1:].sum(axis=0))
                self._packed[key] = int(used[-1]) + 1 if used.size else 0
        return self._packed[key]
