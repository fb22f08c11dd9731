"""What people ask a scheduler about their job: when will it start, why not, what would it take.

One record per job, read off a plan that passes the checker, from the whole plan (Slurm's
`squeue --start` and reason codes, but true). For a late or unplanned job: the cause code that
binds (`solvers.diagnosis`), the earliest start at which it fits by moving only lower-value
work, and the value threshold of its best window: the priority above which it outranks every job
in its way there. For every job: its earliest start alone, on the cluster with inference and
outages but no other batch work, which tells "cannot on this cluster at all" apart from "lost to
other work".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Literal

from horizon_opt.errors import InputError
from horizon_opt.model.instance import Instance, IntArray, topological_order
from horizon_opt.plans.check import ensure_valid
from horizon_opt.plans.inference import elastic_layout, plan_layout
from horizon_opt.plans.plan import Plan
from horizon_opt.solvers.assemble import plan_placements
from horizon_opt.solvers.causes import Cause, Code
from horizon_opt.solvers.diagnosis import Diagnosis
from horizon_opt.solvers.grid import CapacityGrid, Fit, earliest_start
from horizon_opt.solvers.listsched import earliest_end
from horizon_opt.solvers.relaid import beside, must_move
from horizon_opt.solvers.residual import residual_instance

Status = Literal["on-time", "late", "not-planned", "running", "reserved"]

_NO_PRIORITY = {
    Code.NO_FITTING_POOL: "no allowed pool ever holds its gang",
    Code.DEADLINE_IMPOSSIBLE: "it cannot end in time even alone on the cluster",
    Code.PREDECESSOR_UNPLANNED: "it waits for a job that is not planned, which must be planned "
    "first; a higher priority of its own counts toward that only where the solver passes it on "
    "(cpsat weighs the pair's value; greedy ranks a job's predecessors by it)",
    Code.PREDECESSOR_LATE: "a job it runs after ends too late, and must end earlier first; a "
    "higher priority of its own counts toward that only where the solver passes it on (cpsat "
    "weighs the pair's value; greedy ranks a job's predecessors by it)",
    Code.INFERENCE_RESERVED: "the plan's inference reservation, not batch work, takes its room",
    Code.TEAM_LIMIT: "its own team's jobs hold the team's limit: only a higher limit, or "
    "moving the team's own work, makes room",
    Code.QUOTA_BORROWED: "other teams hold its team's quota: a plan that gives quotas back "
    "(reclaims them) makes room, whatever its priority",
    Code.OTHERS_QUOTA: "the work in its way runs within other teams' quotas, which come first "
    "whatever its priority: only a larger quota for its team, or less of its team's own work "
    "on the pool, makes room",
}


@dataclass(frozen=True)
class JobExplanation:
    """One job's answer. Slots are the instance's; `*_time` are ISO times when it has a start.

    `earliest_alone`: its earliest start alone on the cluster (after its release, `now`, and its
    predecessors' earliest ends, each alone on the cluster too; predecessors that would share a
    pool at once are placed together), None when it or a predecessor never fits. For a late or
    unplanned job, `code` and `reason` say what binds; `insert_at` is the earliest start (ending
    in time, after its planned predecessors) at which it fits by moving only work worth less
    than it (`insert_moves`); `priority_needed` is the priority above which it would outrank
    every job in the way at its best window (`window_start` on `window_pool`), or None with
    `no_priority` saying why none is enough (for a job waiting on its predecessors: what must
    happen first, or why nothing can). Outranking is by value (priority x work), a job in the
    way counting with what runs after it (`Diagnosis.worth`). It is a comparison of the job
    with each job in its way, one by one, not a promise of any solver: greedy and fifo order by
    their own rules, and a plan that maximizes pwo may move that work elsewhere or keep it.
    `inference_moved`: the plan's inference layout leaves the job no room in time even with
    every batch job moved, so these windows place the inference requirement to suit it too.
    """

    job: str
    status: Status
    priority: float
    value: float
    deadline: int | None
    pool: str | None
    start: int | None
    end: int | None
    start_time: str | None
    end_time: str | None
    earliest_alone: int | None
    earliest_alone_pool: str | None
    code: str | None = None
    reason: str | None = None
    insert_at: int | None = None
    insert_pool: str | None = None
    insert_moves: tuple[str, ...] = ()
    priority_needed: float | None = None
    window_start: int | None = None
    window_pool: str | None = None
    window_moves: tuple[str, ...] = ()
    no_priority: str | None = None
    inference_moved: bool = False

    @property
    def waits(self) -> int | None:
        """Slots between its earliest start alone and its planned start."""
        if self.start is None or self.earliest_alone is None:
            return None
        return self.start - self.earliest_alone


class _Explainer:
    """The plan's residual view (placed jobs are part of the cluster) and the grids at the value
    thresholds asked so far."""

    def __init__(self, instance: Instance, plan: Plan) -> None:
        self.full = instance
        self.inst = residual_instance(instance) if instance.placed else instance
        layout = plan_layout(self.inst, plan)
        if layout is None:  # the checker accepted the plan, so its inference fits
            raise RuntimeError("internal error: the plan's inference layout does not fit")
        self.placements = plan_placements(self.inst, plan)
        self.assigned = {a.job: a for a in plan.assignments}
        self.diagnosis = Diagnosis(self.inst, self.placements, layout)
        late = [
            p.job for p in self.placements if not self.inst.windows[p.job].on_time(p.end(self.inst))
        ]
        placed = {p.job for p in self.placements}
        unplanned = [j.index for j in self.inst.jobs if j.index not in placed]
        self.causes = self.diagnosis.causes(unplanned + late)
        self.values = sorted({self.diagnosis.worth(p.job) for p in self.placements})
        self._grids: dict[float, CapacityGrid] = {}
        self._order = topological_order(self.inst)
        self._alone_fit: dict[int, Fit | None] = {}  # a job's earliest-ending window alone
        self._chain: dict[int, int | None] = {}  # chain_start's answers
        self._elastic: IntArray | None = None  # the elastic reservation's free GPUs

    def chain_start(self, j: int) -> int | None:
        """The earliest start that job j's predecessors allow when each runs alone on the
        cluster as early as it can (after their own): their windows must exist, not just their
        shortest run times. None when a predecessor never fits. Only j's ancestors are searched,
        each once per explainer. Ancestors that would share a pool at the same time may not fit
        together: then they are placed together (`_joint_start`), a start that a plan reaches."""
        if j not in self._chain:
            self._chain[j] = self._chain_start(j)
        return self._chain[j]

    def _chain_start(self, j: int) -> int | None:
        inst, alone = self.inst, self.diagnosis.alone
        ancestors = self._all_ancestors(j)
        for k in self._order:
            if k in ancestors and k not in self._alone_fit:
                start, last = self._ready_alone(k), inst.windows[k].horizon
                fit = None if start is None else alone.earliest_end(inst.jobs[k], start, last)
                self._alone_fit[k] = fit
        start = self._ready_alone(j)
        spans = [
            (f.pool, f.start, f.start + inst.jobs[k].durations[f.pool])
            for k in ancestors
            if (f := self._alone_fit[k]) is not None
        ]
        if start is None or not _overlap(spans):
            return start
        joint = self._joint_start(j, ancestors)
        return start if joint is None else max(start, joint)

    def _all_ancestors(self, j: int) -> set[int]:
        """Every job that j runs after, transitively."""
        found: set[int] = set()
        stack = list(self.inst.jobs[j].after)
        while stack:
            q = stack.pop()
            if q not in found:
                found.add(q)
                stack.extend(self.inst.jobs[q].after)
        return found

    def _ready_alone(self, j: int) -> int | None:
        fits = [self._alone_fit[p] for p in self.inst.jobs[j].after]
        ends = [
            None if f is None else f.start + self.inst.jobs[p].durations[f.pool]
            for p, f in zip(self.inst.jobs[j].after, fits, strict=True)
        ]
        if any(e is None for e in ends):
            return None
        return max([self.inst.windows[j].ready, *(e for e in ends if e is not None)])

    def _joint_start(self, j: int, ancestors: set[int]) -> int | None:
        """Job j's earliest start after its ancestors placed one by one (each ending as early as
        it can beside those placed before it, and the elastic reservation): a start that a plan
        of these jobs alone reaches, though another order or layout may reach an earlier one.
        None when one of them finds no window there."""
        inst = self.inst
        if self._elastic is None:
            self._elastic = elastic_layout(inst).free
        grid = CapacityGrid(inst, self._elastic.copy())
        ends: dict[int, int] = {}

        def ready(k: int) -> int:
            return max([inst.windows[k].ready, *(ends[p] for p in inst.jobs[k].after)])

        for k in self._order:
            if k in ancestors:
                job = inst.jobs[k]
                fit = earliest_end(grid, job, ready(k), inst.windows[k].horizon)
                if fit is None:
                    return None
                grid.occupy(fit, job.gangs[fit.pool], job.durations[fit.pool], job.team)
                ends[k] = fit.start + job.durations[fit.pool]
        return ready(j)

    def _ancestors(self, j: int) -> set[int]:
        """The planned jobs that j runs after, transitively: they stay wherever j goes."""
        found: set[int] = set()
        stack = list(self.inst.jobs[j].after)
        while stack:
            q = stack.pop()
            if q in self.diagnosis.placed and q not in found:
                found.add(q)
                stack.extend(self.inst.jobs[q].after)
        return found

    def _without_below(self, threshold: float, j: int) -> CapacityGrid:
        """The plan's inference, the jobs j runs after, and its other jobs worth more than
        `threshold`. Cached for the jobs that are not planned and run after none."""
        before = self._ancestors(j)
        if j in self.diagnosis.placed or before:
            return self.diagnosis.grid(
                p
                for p in self.placements
                if p.job != j and (self.diagnosis.worth(p.job) > threshold or p.job in before)
            )
        if threshold not in self._grids:
            self._grids[threshold] = self.diagnosis.grid(
                p for p in self.placements if self.diagnosis.worth(p.job) > threshold
            )
        return self._grids[threshold]

    def relaid(self, j: int) -> bool:
        """Whether the plan's inference layout leaves job j no room in time even with every
        batch job moved: its windows then place the inference requirement to suit it."""
        job, latest = self.inst.jobs[j], self.inst.windows[j].latest_end
        return earliest_start(self.diagnosis.reserved, job, self.diagnosis.ready(j), latest) is None

    def fit_above(self, threshold: float, j: int, relaid: bool) -> Fit | None:
        """Job j's earliest window in time with the plan's inference, the jobs it runs after and
        its other jobs worth more than `threshold` kept (`relaid`: the jobs kept, and the
        inference requirement placed to suit it)."""
        job, latest = self.inst.jobs[j], self.inst.windows[j].latest_end
        ready = self.diagnosis.ready(j)
        if not relaid:
            return earliest_start(self._without_below(threshold, j), job, ready, latest)
        before = self._ancestors(j)
        keep = (
            p
            for p in self.placements
            if p.job != j and (self.diagnosis.worth(p.job) > threshold or p.job in before)
        )
        return beside(self.inst, keep).earliest_start(job, ready, latest)

    def best_window(self, j: int, relaid: bool) -> tuple[float, Fit] | None:
        """The lowest value v such that the job fits in time with only the jobs worth more
        than v left in place, and that fit (a bisection: fewer jobs left, more room)."""
        lo, hi = 0, len(self.values)  # thresholds values[0..]; hi: every batch job moved
        fit: tuple[float, Fit] | None = None
        while lo < hi:
            mid = (lo + hi) // 2
            found = self.fit_above(self.values[mid], j, relaid)
            if found is None:
                lo = mid + 1
            else:
                hi, fit = mid, (self.values[mid], found)
        return fit

    def moves(self, fit: Fit, j: int, threshold: float, relaid: bool) -> tuple[str, ...]:
        """The jobs that must move for j to run at `fit`, most valuable first: of the jobs on its
        nodes during it worth at most `threshold`, those that do not fit back beside j (tried
        from the most valuable down; `relaid`: `relaid.must_move`), and the planned jobs that
        run after those."""
        if relaid:
            before = self._ancestors(j)
            moved = must_move(
                self.inst,
                self.placements,
                j,
                fit,
                lambda q: self.diagnosis.worth(q) <= threshold and q not in before,
                self.diagnosis.rank,
            )
        else:
            moved = self._moved_beside_layout(fit, j, threshold)
        return self._with_successors(moved)

    def _moved_beside_layout(self, fit: Fit, j: int, threshold: float) -> set[int]:
        inst, job = self.inst, self.inst.jobs[j]
        start, end = fit.start, fit.start + job.durations[fit.pool]
        need = job.gangs[fit.pool].gpus_per_node
        free = self._without_below(threshold, j).free[start:end, list(fit.nodes)].astype(int)
        column = {n: k for k, n in enumerate(fit.nodes)}
        before = self._ancestors(j)
        holders = [
            q
            for worth_less in (False, True)
            for q in self.diagnosis.holders(fit, j, worth_less)
            if self.diagnosis.worth(q) <= threshold and q not in before
        ]
        holders.sort(key=lambda q: (-self.diagnosis.worth(q), q))
        moved: set[int] = set()
        for q in holders:
            p = self.diagnosis.placed[q]
            rows = slice(max(p.start, start) - start, min(p.end(inst), end) - start)
            cols = [column[n] for n in p.nodes if n in column]
            uses = p.gpus_per_node(inst)
            if (free[rows, cols] - uses >= need).all():
                free[rows, cols] -= uses  # it stays
            else:
                moved.add(q)
        return moved

    def _with_successors(self, moved: set[int]) -> tuple[str, ...]:
        """The job ids of `moved` and of the planned jobs that run after them, most valuable
        first (what runs after a moved job moves too, all worth no more)."""
        inst, moved = self.inst, set(moved)
        stack = list(moved)
        while stack:
            for q in inst.successors[stack.pop()]:
                if q in self.diagnosis.placed and q not in moved:
                    moved.add(q)
                    stack.append(q)
        order = sorted(moved, key=lambda q: (-self.diagnosis.worth(q), q))
        return tuple(inst.jobs[q].id for q in order)

    def record(self, job_id: str) -> JobExplanation:
        whole = self.full.jobs[self.full.job_index[job_id]]
        a = self.assigned.get(job_id)
        base: dict[str, Any] = {
            "job": job_id,
            "priority": whole.priority,
            "value": whole.value,
            "deadline": whole.deadline,
            "pool": None if a is None else a.pool,
            "start": None if a is None else a.start,
            "end": None if a is None else a.end,
            "start_time": None if a is None else a.start_time,
            "end_time": None if a is None else a.end_time,
        }
        if whole.placed is not None:
            status: Status = "running" if whole.placed.start < self.full.now else "reserved"
            return JobExplanation(
                status=status, earliest_alone=None, earliest_alone_pool=None, **base
            )
        j = self.inst.job_index[job_id]
        job, last = self.inst.jobs[j], self.inst.windows[j].horizon
        start = self.chain_start(j)
        alone = None if start is None else self.diagnosis.alone.earliest_start(job, start, last)
        base["earliest_alone"] = None if alone is None else alone.start
        base["earliest_alone_pool"] = None if alone is None else self.inst.pools[alone.pool].name
        cause = self.causes.get(j)
        if cause is None:
            return JobExplanation(status="on-time", **base)
        return JobExplanation(
            status="late" if a is not None else "not-planned",
            code=str(cause.code),
            reason=cause.sentence,
            **base,
            **self._what_it_takes(j, cause),
        )

    def _chain_too_late(self, j: int) -> str | None:
        """Why no priority is enough for a job that waits on its predecessors, when even they,
        each alone on the cluster as early as it can, end too late for it (None otherwise)."""
        job = self.inst.jobs[j]
        self.chain_start(j)
        ready = self._ready_alone(j)  # a bound: no plan has them all ended sooner
        if ready is None:
            return (
                "no priority is enough: a job it runs after never fits on the cluster, even alone"
            )
        latest = self.inst.windows[j].latest_end
        if self.diagnosis.alone.can_start(job, ready, latest):
            return None
        return (
            f"no priority is enough: the jobs it runs after cannot all end before slot {ready}, "
            f"even each alone on the cluster: too late for it to end by slot {latest}"
        )

    def _what_it_takes(self, j: int, cause: Cause) -> dict[str, Any]:
        pools = self.inst.pools
        if cause.code in _NO_PRIORITY:
            waits = cause.code in (Code.PREDECESSOR_UNPLANNED, Code.PREDECESSOR_LATE)
            too_late = self._chain_too_late(j) if waits else None
            return {"no_priority": too_late or _NO_PRIORITY[cause.code]}
        if cause.code == Code.ROOM_UNUSED:  # it fits as things stand: any priority will do
            assert cause.window is not None
            here = {"pool": pools[cause.window.pool].name, "start": cause.window.start}
            return {
                "insert_at": here["start"],
                "insert_pool": here["pool"],
                "priority_needed": 0.0,
                "window_start": here["start"],
                "window_pool": here["pool"],
            }
        job, relaid = self.inst.jobs[j], self.relaid(j)
        out: dict[str, Any] = {"inference_moved": relaid}
        below = _just_below(job.value)
        insert = self.fit_above(below, j, relaid)
        if insert is not None:
            out |= {
                "insert_at": insert.start,
                "insert_pool": pools[insert.pool].name,
                "insert_moves": self.moves(insert, j, below, relaid),
            }
        best = self.best_window(j, relaid)
        if best is None:  # cannot happen past the causes' checks, but never a made-up number
            return out | {"no_priority": "no window fits even with every batch job moved"}
        threshold, fit = best
        return out | {
            "priority_needed": threshold / job.work_hours,
            "window_start": fit.start,
            "window_pool": pools[fit.pool].name,
            "window_moves": self.moves(fit, j, threshold, relaid),
        }


def _overlap(spans: list[tuple[int, int, int]]) -> bool:
    """Whether two of the windows (pool, start, end) share a pool at some slot: then they may
    not fit together, where each fits alone."""
    spans = sorted(spans)
    return any(p == q and s < e for (p, _, e), (q, s, _) in pairwise(spans))


def _just_below(value: float) -> float:
    """The largest float below `value`: jobs worth more than it are those worth at least `value`."""
    return math.nextafter(value, -math.inf)


def explain(
    instance: Instance, plan: Plan, job: str | None = None, source: str = "the plan"
) -> list[JobExplanation]:
    """One record per job of the instance (or for `job` alone), in the instance's order.

    Raises InputError when the plan (named `source`) does not pass the checker for this
    instance, or `job` is not one of its jobs.
    """
    ensure_valid(instance, plan, source)
    if job is not None and job not in instance.job_index:
        raise InputError([f"--job: no job {job!r} in instance {instance.name!r}"])
    explainer = _Explainer(instance, plan)
    ids = [job] if job is not None else [j.id for j in instance.jobs]
    return [explainer.record(i) for i in ids]
