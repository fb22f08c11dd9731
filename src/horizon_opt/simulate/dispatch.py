"""The plan's starts as the replay executes them, and re-seating a planned start whose GPUs are
taken: the job starts on other GPUs of its pool (or of another of its pools: the replayer's
`seats_to_try`).

A plan names concrete GPUs, but a real scheduler given a plan's start (a priority, a
reservation) picks the nodes itself when the job starts. Between two plans, demand above the
forecast can take the GPUs a start was given (inference takes free GPUs before it preempts);
holding the job back until the next plan would leave it waiting beside idle GPUs. So the replay
starts it, at its planned time, on GPUs that the plan itself leaves free for its whole planned
run: not held, not reserved for inference, not given to another planned job over that time.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from horizon_opt.model.instance import Gang, Instance, IntArray

Gpus = dict[int, tuple[int, ...]]  # node -> GPU indices


@dataclass
class PlannedStarts:
    """The starts the plan in force makes from now on: per slot the jobs it starts, and per job
    its pool, GPUs and planned end."""

    at: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    seats: dict[int, tuple[int, Gpus]] = field(default_factory=dict)  # job -> (pool, GPUs)
    ends: dict[int, int] = field(default_factory=dict)

    def add(self, job: int, start: int, pool: int, gpus: Gpus, end: int) -> None:
        self.at[start].append(job)
        self.seats[job] = (pool, gpus)
        self.ends[job] = end

    def gpus_at(self, t: int, made: Collection[int], nodes: int) -> IntArray:
        """[nodes] GPUs that the starts at `t` take, but those `made` already."""
        gpus = np.zeros(nodes, dtype=np.int64)
        for j in self.at.get(t, []):
            if j not in made:
                for n, g in self.seats[j][1].items():
                    gpus[n] += len(g)
        return gpus

    def others(self, job: int, t: int, made: Collection[int]) -> list[tuple[int, int, Gpus]]:
        """(start, end, GPUs) of the starts from `t` on but `job`'s and those `made` already."""
        return [
            (s, self.ends[k], self.seats[k][1])
            for s, jobs in self.at.items()
            if s >= t
            for k in jobs
            if k != job and k not in made
        ]


def reseat(
    instance: Instance,
    pool: int,
    gang: Gang,
    run: tuple[int, int],
    taken_now: IntArray,
    held: Mapping[int, set[int]],
    batch_room: IntArray,
    planned: Iterable[tuple[int, int, Gpus]],
) -> Gpus | None:
    """GPUs of `pool` where `gang` fits over `run` (start, planned end), or None.

    `taken_now` [N]: GPUs in use at the start (running jobs and inference beyond the plan's
    reservation), kept taken for the whole run; `held`: which GPUs the running jobs hold;
    `batch_room` [N, plan's slots]: the GPUs the plan's inference leaves to batch work, past
    the replayed horizon too (a run that ends past the plan's horizon fits nowhere);
    `planned`: the plan's other starts (start, end, GPUs) not yet made."""
    start, stop = run
    if stop > batch_room.shape[1]:
        return None
    nodes = instance.pools[pool].node_range
    busy = np.zeros((instance.num_nodes, max(stop - start, 1)), dtype=np.int64)
    named: dict[int, set[int]] = {n: set(g) for n, g in held.items()}
    for s, e, gpus in planned:
        if s >= stop or e <= start:
            continue
        for n, g in gpus.items():
            busy[n, max(s - start, 0) : max(min(e, stop) - start, 0)] += len(g)
            named.setdefault(n, set()).update(g)
    chosen: Gpus = {}
    for n in nodes:
        room = batch_room[n, start:stop] - busy[n, : stop - start] - taken_now[n]
        if room.size == 0 or int(room.min()) < gang.gpus_per_node:
            continue
        free = [g for g in range(int(instance.capacity[n, start])) if g not in named.get(n, ())]
        if len(free) >= gang.gpus_per_node:
            chosen[n] = tuple(free[: gang.gpus_per_node])
        if len(chosen) == gang.nodes:
            return chosen
    return None
