"""What runs in a replay: the running jobs, the GPUs they hold, and the log of every run for the
audit (`simulate.audit`), with what preemptions cost. The engine decides what starts and what is
stopped; this keeps the account of it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from horizon_opt.model.instance import Instance, IntArray
from horizon_opt.simulate.audit import Run


@dataclass
class LiveRun:
    job: int
    pool: int
    start: int
    end: int  # real end (early, or at the estimate)
    gpus: dict[int, tuple[int, ...]]  # node -> GPU indices
    fails: bool


class LiveRuns:
    """The running jobs (`running`), every run logged by names (`log`), and the preemptions
    with the GPU-hours of progress they lost."""

    def __init__(self, instance: Instance) -> None:
        self.inst = instance
        self.running: dict[int, LiveRun] = {}
        self.log: list[Run] = []
        self.preemptions = 0
        self.lost = 0.0

    def gpus_used(self) -> IntArray:
        """GPUs the running jobs use, per node."""
        used = np.zeros(self.inst.num_nodes, dtype=np.int64)
        for r in self.running.values():
            for n, g in r.gpus.items():
                used[n] += len(g)
        return used

    def holdings(self) -> tuple[IntArray, dict[int, set[int]]]:
        """GPUs the running jobs use per node, and which."""
        held: dict[int, set[int]] = defaultdict(set)
        for r in self.running.values():
            for n, g in r.gpus.items():
                held[n].update(g)
        return self.gpus_used(), held

    def down_from(self, run: LiveRun, t: int) -> int:
        """The first slot from `t` at which a node of the run is down (or the horizon's end):
        a job that outlives its prediction into an outage is stopped there."""
        down = ~self.inst.up[list(run.gpus), t:].all(axis=0)
        return t + int(np.argmax(down)) if down.any() else self.inst.slots

    def record(self, run: LiveRun, outcome: str, end: int | None = None) -> None:
        """Log a run for the audit, by names (`end`: when it stopped, if before its real end)."""
        inst = self.inst
        gpus = {inst.node_names[n]: g for n, g in run.gpus.items()}
        stop = run.end if end is None else end
        pool = inst.pools[run.pool].name
        self.log.append(Run(inst.jobs[run.job].id, pool, run.start, stop, gpus, outcome))

    def preempt(self, j: int, t: int) -> None:
        """Stop running job `j` at `t`: it loses its progress (and waits again)."""
        run = self.running.pop(j)
        self.record(run, "preempted", end=t)
        self.preemptions += 1
        self.lost += self.inst.jobs[j].gpus * (t - run.start) * self.inst.hours_per_slot
