"""Starved jobs: a job that waited, ready to run, while GPUs it could use sat idle for longer
than its own limit (it could have run whole in that time, and no policy started it).

Found from a replay's audit alone (what ran where, and the replicas that served inference),
not from the replayer's own state, so that it checks the replay rather than repeats it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from horizon_opt.instance import Instance, IntArray
from horizon_opt.simulate.audit import Audit, Run


@dataclass(frozen=True)
class Starved:
    """A job that waited `slots` slots in a row with room for it, more than its `limit`."""

    job: str
    slots: int
    limit: int  # its shortest run as written (slots): its limit on its fastest pool


def idle_gpus(instance: Instance, audit: Audit) -> IntArray:
    """[N, S] GPUs up and held by no run and no inference replica."""
    used = np.zeros_like(instance.capacity)
    rows = {name: n for n, name in enumerate(instance.node_names)}
    for run in audit.runs:
        for node, gpus in run.gpus.items():
            used[rows[node], run.start : min(run.end, instance.slots)] += len(gpus)
    for service, ran in zip(instance.services, audit.replicas, strict=True):
        nodes = instance.pools[service.pool].node_range
        used[nodes.start : nodes.stop] += ran * service.gpus_per_replica
    idle: IntArray = np.maximum(instance.capacity - used, 0)
    return idle


def _ready_slots(instance: Instance, job: int, runs: dict[str, list[Run]]) -> np.ndarray:
    """[S] whether the job was waiting to run: released, its predecessors completed, not
    running, not yet on its last run, and still able to end by its deadline."""
    spec = instance.jobs[job]
    ready = np.zeros(instance.slots, dtype=bool)
    ends = []
    for p in spec.after:
        done = [r.end for r in runs.get(instance.jobs[p].id, []) if r.outcome == "completed"]
        if not done:
            return ready  # it never could start
        ends.append(min(done))
    ready[max([spec.release, *ends]) :] = True
    own = sorted(runs.get(spec.id, []), key=lambda r: r.start)
    for r in own:
        ready[r.start : r.end] = False
    if own and own[-1].outcome != "preempted":
        ready[own[-1].start :] = False  # its last run: it waits no more
    if spec.deadline is not None:
        ready[max(spec.deadline - min(spec.durations.values()) + 1, 0) :] = False
    return ready


def _room(instance: Instance, job: int, idle: IntArray) -> np.ndarray:
    """[S] whether enough idle GPUs for the job's gang sat on some pool it may use."""
    room = np.zeros(instance.slots, dtype=bool)
    spec = instance.jobs[job]
    for pool, gang in spec.gangs.items():
        nodes = instance.pools[pool].node_range
        fitting = (idle[nodes.start : nodes.stop] >= gang.gpus_per_node).sum(axis=0)
        room |= fitting >= gang.nodes
    return room


def _longest_run(flags: np.ndarray) -> int:
    longest = current = 0
    for flag in flags:
        current = current + 1 if flag else 0
        longest = max(longest, current)
    return longest


def starved_jobs(instance: Instance, audit: Audit) -> list[Starved]:
    """Every job that waited, ready, with room for it for longer than its limit."""
    idle = idle_gpus(instance, audit)
    runs: dict[str, list[Run]] = {}
    for run in audit.runs:
        runs.setdefault(run.job, []).append(run)
    out = []
    for job in instance.jobs:
        if not job.durations:
            continue
        waited = _longest_run(
            _ready_slots(instance, job.index, runs) & _room(instance, job.index, idle)
        )
        limit = min(job.durations.values())
        if waited > limit:
            out.append(Starved(job.id, waited, limit))
    return out
