"""Run-time predictions learned in the loop, for the jobs that limits leave out.

Users' estimates are limits: Slurm kills a job there, and most jobs end well before. A job
whose limit cannot end in time from now, even alone on the cluster (a long gang that no trough
between two inference peaks holds, a deadline closer than the limit), never runs under a planner
that plans on limits, though it would often end in time. A policy with `-predict` plans such a
job on a predicted run time: the `quantile` of the run/limit ratios of the runs that have ended
so far (completed, failed or cancelled; a preempted run says only that its job would have run
longer, so it is left out), times its limit. Starting it is a bet that it ends within that with
probability `quantile`, so its priority is that much less: a bet goes after sure work of the
same value. Every other job stays on its limit.

A job planned on a prediction holds its GPUs until its planned end; past it, it runs on
borrowed time, and a planned start or inference that needs its GPUs preempts it (the engine,
`simulate.engine`). Until `min_runs` runs have ended a prediction is the limit, as Slurm plans.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

import numpy as np

from horizon_opt.loop.snapshot import Running
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.model.packing import pack

DEFAULT_QUANTILE = 0.5
MIN_RUNS = 10


def gang_class(gpus: int) -> str:
    """What a run is learned with: single-GPU jobs and gangs fail at very different rates in
    real clusters, so each learns from its own kind once enough of them have ended."""
    return "single" if gpus <= 1 else "gang"


@dataclass
class RunTimes:
    """Run/limit ratios of the runs ended so far, and the share of a limit they predict; per
    gang class too (`gang_class`), with how many of each class completed."""

    quantile: float = DEFAULT_QUANTILE
    min_runs: int = MIN_RUNS
    ratios: list[float] = field(default_factory=list)
    by_class: dict[str, list[float]] = field(default_factory=dict)
    completed: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0.0 < self.quantile <= 1.0:
            raise ValueError(f"quantile must be in (0, 1], got {self.quantile}")

    def observe(self, ran: int, limit: int, klass: str = "", completed: bool = True) -> None:
        """A run of class `klass` that ended after `ran` slots of a `limit`-slot limit."""
        ratio = min(ran / limit, 1.0)
        self.ratios.append(ratio)
        if klass:
            self.by_class.setdefault(klass, []).append(ratio)
            self.completed[klass] = self.completed.get(klass, 0) + completed

    def ratio(self, klass: str = "", quantile: float | None = None) -> float:
        """The `quantile` (this one's own unless given) of the ratios of class `klass` (of all
        runs while fewer than `min_runs` of it have ended; 1.0, the limit, before `min_runs`
        runs have ended)."""
        q = self.quantile if quantile is None else quantile
        own = self.by_class.get(klass, [])
        if len(own) >= self.min_runs:
            return float(np.quantile(own, q))
        if len(self.ratios) < self.min_runs:
            return 1.0
        return float(np.quantile(self.ratios, q))

    def learned(self) -> bool:
        """Whether enough runs have ended for a prediction other than the limit."""
        return len(self.ratios) >= self.min_runs

    def within(self, share: float, klass: str = "") -> float:
        """The share of the ended runs of class `klass` (of all, while fewer than `min_runs` of
        it have ended) that ran at most `share` of their limit: the chance that a run ends
        within that much of its limit."""
        own = self.by_class.get(klass, [])
        ratios = own if len(own) >= self.min_runs else self.ratios
        if not ratios:
            return 1.0 if share >= 1.0 else 0.0
        return sum(r <= share + 1e-9 for r in ratios) / len(ratios)

    def success(self, klass: str) -> float:
        """The share of class `klass`'s ended runs that completed (1.0 before `min_runs` of them
        have ended; half a run when none has, so that no job is worth nothing): what a start of
        such a job is worth, per unit of its value."""
        ended = len(self.by_class.get(klass, []))
        if ended < self.min_runs:
            return 1.0
        return max(self.completed.get(klass, 0), 0.5) / ended

    def ratio_after(self, ran: float, klass: str = "") -> float:
        """The `quantile` of the ratios above `ran` (a share of the limit already run), of class
        `klass` when `min_runs` of it ran that long, else of all: what a job still running at
        `ran` is predicted to run in all, 1.0 (its limit) when fewer than `min_runs` ended runs
        ran that long."""
        for ratios in (self.by_class.get(klass, []), self.ratios):
            longer = [r for r in ratios if r > ran]
            if len(longer) >= self.min_runs:
                return float(np.quantile(longer, self.quantile))
        return 1.0


class Predicted:
    """The instance a predicting policy plans on: the jobs it bets on with their predicted run
    times and discounted priority, every other job as it is, and the forecast trimmed at the
    slots where a job on borrowed time holds GPUs that the forecast's replicas need (the plans
    before it reserved them; inference takes them back in the world). A trim lasts, so every
    later state agrees with the plans that ran before it."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.demand = {s.index: s.demand.astype(float).copy() for s in instance.services}
        self.cache: tuple[tuple[object, ...], Instance] | None = None

    def told(
        self,
        runtimes: RunTimes,
        running: Mapping[int, Running],
        predict: Collection[int],
        discount: bool = True,
        on_time_by_limit: bool = False,
        by_class: bool = False,
        due_quantile: float | None = None,
    ) -> Instance:
        """The instance whose states the planner sees: the `predict` jobs on their predicted
        run times (with their priority discounted for the bet, if `discount`; with their due
        slot moved earlier by what their limit adds to the prediction, if `on_time_by_limit`,
        so that a plan counts a job on time only when its limit would end in time; with a
        deadline moved earlier by what the `due_quantile` of the run times adds to the
        prediction, if given, so that a plan counts a job on time only when it ends in time
        that often; with `by_class`, on its gang class's run times and with its priority times
        that class's success share), every other job on its limit, given the running jobs'
        believed ends."""
        trimmed = self.trim(running)
        classes = ("single", "gang") if by_class else ("",)
        ratios = {k: runtimes.ratio(k) for k in classes}
        safe = {k: runtimes.ratio(k, due_quantile) for k in classes} if due_quantile else ratios
        odds = {k: runtimes.success(k) if by_class else 1.0 for k in classes}
        share = runtimes.quantile if discount else 1.0
        key = (
            tuple(ratios.values()),
            tuple(odds.values()),
            share,
            frozenset(predict),
            on_time_by_limit,
            tuple(safe.values()),
        )
        if self.cache is not None and self.cache[0] == key and not trimmed:
            return self.cache[1]
        inst = self.instance
        names = [p.name for p in inst.pools]
        jobs = []
        for job_spec, job in zip(inst.spec.jobs, inst.jobs, strict=True):
            if job.index not in predict:
                jobs.append(job_spec)
                continue
            klass = gang_class(job.gpus) if by_class else ""
            ratio = ratios[klass]
            predicted = {p: max(1, math.ceil(ratio * d - 1e-9)) for p, d in job.durations.items()}
            update: dict[str, object] = {
                "duration": {names[p]: d for p, d in predicted.items()},
                "pools": None,
                # it ends within its prediction with probability `quantile`: what it is worth
                # to start, per GPU-hour, is its priority that much less
                # (`by_class`: and it completes as often as its class has)
                "priority": job_spec.priority * share * odds[klass],
            }
            if on_time_by_limit:
                slack = max(job.durations[p] - d for p, d in predicted.items())
                due = inst.slots if job.deadline is None else job.deadline
                update["deadline"] = max(job.release, due - slack)
            elif job.deadline is not None and safe[klass] > ratio:
                slack = max(
                    math.ceil(safe[klass] * d - 1e-9) - predicted[p]
                    for p, d in job.durations.items()
                )
                update["deadline"] = max(job.release, job.deadline - slack)
            jobs.append(job_spec.model_copy(update=update))
        spec = inst.spec.model_copy(update={"jobs": jobs})
        told = compile_instance(spec, {k: v.tolist() for k, v in self.demand.items()})
        self.cache = (key, told)
        return told

    def trim(self, running: Mapping[int, Running]) -> bool:
        """Trim the forecast where the running jobs leave too little room for its required
        replicas; returns whether anything was trimmed."""
        inst = self.instance
        taken = np.zeros((inst.num_nodes, inst.slots), dtype=np.int64)
        for j, run in running.items():
            limit = run.start + inst.jobs[j].durations[run.pool]
            end = limit if run.end is None else run.end
            for n, g in run.gpus.items():
                taken[n, run.start : end] += len(g)
        trimmed = False
        for pool in inst.pools:
            members = [s for s in inst.services if s.pool == pool.index]
            rows = slice(pool.first_node, pool.first_node + pool.nodes)
            busy = np.flatnonzero(taken[rows].any(axis=0))
            for t in busy.tolist() if members else []:
                req = [_req(self.demand[s.index][t], s.headroom) for s in members]
                demands = [(s.gpus_per_replica, r) for s, r in zip(members, req, strict=True)]
                placed, _ = pack(np.maximum(inst.capacity[rows, t] - taken[rows, t], 0), demands)
                for k, s in enumerate(members):
                    fit = int(placed[k].sum())
                    if fit < req[k]:
                        self.demand[s.index][t] = fit / (1 + s.headroom)
                        trimmed = True
        return trimmed


def _req(demand: float, headroom: float) -> int:
    return math.ceil(demand * (1 + headroom) - 1e-9)
