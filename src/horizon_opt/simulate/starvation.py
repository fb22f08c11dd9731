"""Starved jobs: a job that waited, ready to run, while GPUs it could use sat idle for longer
than its own limit: it could have run whole, start to end, on GPUs nothing used or reserved for
inference (and within its team's limit on the pool, validity rule 8), and the policy did not
start it.

Found from a replay's audit alone (what ran where, the replicas that served inference and the
reservation in force), not from the replayer's own state, so that it checks the replay rather
than repeats it."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from horizon_opt.model.instance import Instance, IntArray
from horizon_opt.model.teams import team_usage
from horizon_opt.simulate.audit import Audit, Run


@dataclass(frozen=True)
class Starved:
    """A job that could have run whole on idle GPUs while it waited: the `slots` it waited
    (ready, in a row) around that chance, and its `limit`."""

    job: str
    slots: int
    limit: int  # its shortest run as written (slots): its limit on its fastest pool


def idle_gpus(instance: Instance, audit: Audit) -> IntArray:
    """[N, S] GPUs up and held by no run, no inference replica and not the inference
    reservation: the policy reserved them for inference at its forecast, so a job that waits
    beside reserved GPUs its service did not need waits on the forecast, not on the policy."""
    used = np.zeros_like(instance.capacity)
    rows = {name: n for n, name in enumerate(instance.node_names)}
    for run in audit.runs:
        for node, gpus in run.gpus.items():
            used[rows[node], run.start : min(run.end, instance.slots)] += len(gpus)
    serving = np.zeros_like(instance.capacity)
    for service, ran in zip(instance.services, audit.replicas, strict=True):
        nodes = instance.pools[service.pool].node_range
        serving[nodes.start : nodes.stop] += ran * service.gpus_per_replica
    if audit.reserved is not None:
        serving = np.maximum(serving, audit.reserved[:, : instance.slots])
    idle: IntArray = np.maximum(instance.capacity - used - serving, 0)
    return idle


def limit_room(instance: Instance, audit: Audit) -> IntArray:
    """[teams, P, S] GPUs each team's limit left its jobs on each pool (every GPU of the cluster
    where it has no limit): the limit (`Instance.team_room`) less what the team's runs held."""
    runs = (
        (
            instance.jobs[instance.job_index[run.job]].team,
            instance.pool_index[run.pool],
            run.start,
            min(run.end, instance.slots),
            sum(len(g) for g in run.gpus.values()),
        )
        for run in audit.runs
    )
    used = team_usage(len(instance.teams), len(instance.pools), instance.slots, runs)
    room: IntArray = instance.team_room - used
    return room


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


def _run_lengths(flags: np.ndarray) -> np.ndarray:
    """[..., S] how many slots in a row, up to and including each, the flag has held."""
    out = np.zeros(flags.shape, dtype=np.int64)
    current = np.zeros(flags.shape[:-1], dtype=np.int64)
    for t in range(flags.shape[-1]):
        current = np.where(flags[..., t], current + 1, 0)
        out[..., t] = current
    return out


def _whole_runs(
    instance: Instance, job: int, idle: IntArray, room: IntArray, ready: np.ndarray
) -> np.ndarray:
    """[S] whether the job had waited beside room for a whole run for longer than the run, up to
    each slot: on one pool it may use, its gang's nodes each had its GPUs idle for every slot of
    the run and one more, its team's limit there (`room`, `limit_room`) had room for it, and it
    was ready throughout. (A job that waits exactly its run beside idle GPUs, as one released
    while a plan is made, lost no more than the run's length: not starved.)"""
    spec = instance.jobs[job]
    waited = _run_lengths(ready)
    fits = np.zeros(instance.slots, dtype=bool)
    for pool, gang in spec.gangs.items():
        nodes = instance.pools[pool].node_range
        usable = idle[nodes.start : nodes.stop] >= gang.gpus_per_node
        if spec.team is not None:
            usable &= room[spec.team, pool] >= spec.gpus
        free = _run_lengths(usable)
        longer = spec.durations[pool] + 1
        fits |= ((free >= longer).sum(axis=0) >= gang.nodes) & (waited >= longer)
    return fits


def _longest_stretch_with(ready: np.ndarray, marks: np.ndarray) -> int:
    """The longest stretch of `ready` slots that holds a marked slot."""
    longest = start = 0
    for t in range(len(ready) + 1):
        if t == len(ready) or not ready[t]:
            if marks[start:t].any():
                longest = max(longest, t - start)
            start = t + 1
    return longest


def starved_jobs(
    instance: Instance, audit: Audit, known_to_fail: Collection[str] = ()
) -> list[Starved]:
    """Every job that could have run whole on idle GPUs while it waited, but for those in
    `known_to_fail` (a policy told the outcomes rightly never starts them)."""
    idle, room = idle_gpus(instance, audit), limit_room(instance, audit)
    runs: dict[str, list[Run]] = {}
    for run in audit.runs:
        runs.setdefault(run.job, []).append(run)
    out = []
    for job in instance.jobs:
        if not job.durations or job.id in known_to_fail:
            continue
        ready = _ready_slots(instance, job.index, runs)
        whole = _whole_runs(instance, job.index, idle, room, ready)
        if whole.any():
            waited = _longest_stretch_with(ready, whole)
            out.append(Starved(job.id, waited, min(job.durations.values())))
    return out
