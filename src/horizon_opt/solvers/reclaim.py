"""Quotas kept: Kueue's reclaim applied to a plan, so that no team's job waits within its quota
for GPUs another team borrowed (FORMAT.md, validity rule 9).

A job is kept out at slot t on pool p when it waits there (released, its predecessors ended,
not started, able to end by the horizon), fits its team's quota (`used + gpus <= quota`), and
the pool's free GPUs are too few for it while the GPUs that other teams' movable jobs hold above
their quotas would make enough. Slots are visited in order. At each, while some job is kept
out (the most valuable first), a borrowing job running then on that pool (of a team above its
quota; not placed, nor run after by a placed job; `borrower_order`) leaves the plan, with
every job that runs after it, until the pool has the waiting job's GPUs free; the waiting job
then takes its earliest fit from that slot, and the jobs that left take theirs after it, most
valuable first (or stay out). GPUs that left free earlier slots too, so the visit goes back to
the earliest slot a leaving job ran. After `MOVES_PER_JOB` rounds per job, kept-out jobs only
make room and nothing is placed again: jobs then only leave, so the visit ends, with no job
kept out anywhere.

Every solver's plan goes through `keep_quotas` (the registry's `solve`), so the rule holds for
all of them without a code path of their own; a plan's pwo may drop by it, and its bound, which
leaves quotas out, still holds.
"""

from __future__ import annotations

import time

import numpy as np

from horizon_opt.model.instance import Instance, IntArray, pinned_jobs, topological_order
from horizon_opt.model.teams import quota_profile
from horizon_opt.plans.inference import Layout, plan_layout
from horizon_opt.plans.plan import Plan, Status
from horizon_opt.plans.tolerance import reaches
from horizon_opt.solvers.assemble import Placement, build_plan, plan_placements, stamp
from horizon_opt.solvers.diagnosis import unscheduled_causes
from horizon_opt.solvers.grid import CapacityGrid, Fit, earliest_start
from horizon_opt.solvers.listsched import grid_beside
from horizon_opt.solvers.residual import started_gpus

MOVES_PER_JOB = 4  # rounds per job that place jobs again; then borrowing jobs only leave


def quotas_bind(instance: Instance) -> bool:
    """Whether some team has a quota (else nothing can be kept out of one)."""
    return any(team.quota for team in instance.teams)


class _Usage:
    """GPUs per team (all, and movable: of jobs neither placed in the instance nor `pinned`)
    and per pool, kept in step with the plan's placements."""

    def __init__(
        self, instance: Instance, layout: Layout, placed: dict[int, Placement], pinned: set[int]
    ) -> None:
        self.inst = instance
        self.pinned = pinned
        T, P, S = len(instance.teams), len(instance.pools), instance.slots
        self.team = np.zeros((T, P, S), dtype=np.int64)
        self.movable = np.zeros((T, P, S), dtype=np.int64)
        self.pool = np.zeros((P, S), dtype=np.int64)
        self.cap = np.zeros((P, S), dtype=np.int64)
        for pool in instance.pools:
            nodes = slice(pool.first_node, pool.first_node + pool.nodes)
            self.cap[pool.index] = layout.free[nodes].sum(axis=0)
        self.quota = quota_profile(instance.teams, P)
        for pl in placed.values():
            self.add(pl, 1)

    def add(self, pl: Placement, sign: int) -> None:
        job = self.inst.jobs[pl.job]
        run = slice(pl.start, pl.end(self.inst))
        self.pool[pl.pool, run] += sign * job.gpus
        if job.team is not None:
            self.team[job.team, pl.pool, run] += sign * job.gpus
            if job.placed is None and pl.job not in self.pinned:
                self.movable[job.team, pl.pool, run] += sign * job.gpus

    def free(self, p: int, t: int) -> int:
        return int(self.cap[p, t] - self.pool[p, t])

    def reclaimable(self, team: int, p: int, t: int) -> int:
        """GPUs the other teams' movable jobs hold above their quotas on pool p at slot t."""
        above = np.maximum(self.team[:, p, t] - self.quota[:, p], 0)
        mine = np.minimum(above, self.movable[:, p, t])
        return int(mine.sum() - mine[team])


def keep_quotas(instance: Instance, placements: list[Placement], layout: Layout) -> list[Placement]:
    """The placements with no job kept out of its team's quota (see the module)."""
    placed = {p.job: p for p in placements}
    pinned = pinned_jobs(instance)
    usage = _Usage(instance, layout, placed, pinned)
    order = sorted(range(len(instance.jobs)), key=lambda j: -instance.jobs[j].value)
    budget = MOVES_PER_JOB * len(instance.jobs)  # rounds that place jobs again
    t = instance.now
    while t < instance.slots:
        kept = _kept_out(instance, placed, usage, order, t)
        if kept is None:
            t += 1
            continue
        j, p = kept
        left = _make_room(instance, placed, usage, pinned, (j, p, t))
        if not left:  # (a job is kept out only while movable borrowing holds its GPUs)
            raise RuntimeError(f"internal error: nothing to reclaim for {instance.jobs[j].id}")
        budget -= 1
        if budget >= 0:
            _place(instance, layout, placed, usage, [j], t)
            _place(instance, layout, placed, usage, [q for q, _ in left], t + 1)
        # (GPUs freed before t may now hold a job there that borrowing keeps out: look again)
        t = min([t, *(start for _, start in left)])
    return list(placed.values())


def best_with_quotas(
    instance: Instance, candidates: list[tuple[list[Placement], Layout]]
) -> tuple[list[Placement], Layout]:
    """The candidate worth most once its quotas are kept (`keep_quotas`), kept so: a search
    that knows nothing of quotas may lose more to the reclaim than a plainer plan (the first
    candidate wins ties)."""
    best: tuple[float, list[Placement], Layout] | None = None
    for placements, layout in candidates:
        kept = keep_quotas(instance, placements, layout)
        value = sum(p.earned(instance) for p in kept)
        if best is None or value > best[0] + 1e-9:
            best = (value, kept, layout)
    assert best is not None
    return best[1], best[2]


def _waiting(instance: Instance, placed: dict[int, Placement], j: int, t: int) -> bool:
    job = instance.jobs[j]
    if job.placed is not None or job.team is None or job.release > t:
        return False
    if j in placed and placed[j].start <= t:
        return False
    return all(q in placed and placed[q].end(instance) <= t for q in job.after)


def _kept_out(
    instance: Instance, placed: dict[int, Placement], usage: _Usage, order: list[int], t: int
) -> tuple[int, int] | None:
    """The most valuable job kept out at slot t, and its pool; None when there is none."""
    for j in order:
        if not _waiting(instance, placed, j, t):
            continue
        job = instance.jobs[j]
        assert job.team is not None
        for p, d in job.durations.items():
            if t + d > instance.slots:
                continue
            if usage.team[job.team, p, t] + job.gpus > usage.quota[job.team, p]:
                continue
            free = usage.free(p, t)
            if free < job.gpus <= free + usage.reclaimable(job.team, p, t):
                return j, p
    return None


def borrower_order(
    instance: Instance, j: int, start: int, above: IntArray
) -> tuple[float, float, int, int]:
    """Which borrower gives back first (the smallest key): a job of the team holding the most
    above its quota (`above`, per team) per unit of its weight, as Kueue's fair sharing
    preempts; within a team the least valuable, the latest started."""
    job = instance.jobs[j]
    assert job.team is not None  # a borrower is a team's job
    team = instance.teams[job.team]
    return (-float(above[job.team]) / team.weight, job.value, -start, j)


def _make_room(
    instance: Instance,
    placed: dict[int, Placement],
    usage: _Usage,
    pinned: set[int],
    kept: tuple[int, int, int],
) -> list[tuple[int, int]]:
    """Take borrowing jobs off pool p at slot t until job j's GPUs are free there (`kept`: j,
    p, t): first of the team holding the most above its quota per unit of its weight, least
    valuable first (`borrower_order`); returns every job that left (with the jobs after them)
    and the slot it started at."""
    j, p, t = kept
    job = instance.jobs[j]
    left: list[tuple[int, int]] = []
    while usage.free(p, t) < job.gpus:
        borrowing = [
            pl
            for pl in placed.values()
            if pl.pool == p
            and pl.start <= t < pl.end(instance)
            and (team := instance.jobs[pl.job].team) is not None
            and team != job.team
            and instance.jobs[pl.job].placed is None
            and pl.job not in pinned
            and usage.team[team, p, t] > usage.quota[team, p]
        ]
        if not borrowing:
            break
        above = usage.team[:, p, t] - usage.quota[:, p]
        victim = min(
            borrowing,
            key=lambda pl: borrower_order(instance, pl.job, pl.start, above),
        )
        stack = [victim.job]
        while stack:
            q = stack.pop()
            if q in placed:
                gone = placed.pop(q)
                usage.add(gone, -1)
                left.append((q, gone.start))
                stack.extend(instance.successors[q])
    return left


def _place(
    instance: Instance,
    layout: Layout,
    placed: dict[int, Placement],
    usage: _Usage,
    jobs: list[int],
    t: int,
) -> None:
    """Place `jobs` (most valuable first, predecessors before) at their earliest fit from slot
    t that ends in time; a job placed already moves only to start earlier (and end before the
    jobs after it start), and one without a fit stays out."""
    wanted = set(jobs)
    rank = {j: -instance.jobs[j].value for j in jobs}
    grid = grid_beside(instance, layout, list(placed.values()))  # kept in step below
    for j in topological_order(instance, key=lambda k: rank.get(k, 0.0)):
        if j not in wanted:
            continue
        job, window = instance.jobs[j], instance.windows[j]
        if any(q not in placed for q in job.after):
            continue
        old = placed.pop(j, None)
        if old is not None:
            usage.add(old, -1)
            _grid_take(grid, instance, old, release=True)
        ready = window.after([t, *(placed[q].end(instance) for q in job.after)])
        fit = earliest_start(grid, job, ready, window.latest_end)
        new = None if fit is None else Placement(j, fit.pool, fit.start, fit.nodes)
        # (an earlier start that ends later, on a slower pool, must still end before its
        # successors start)
        if new is not None and (
            old is None
            or (
                new.start < old.start
                and all(
                    placed[s].start >= new.end(instance)
                    for s in instance.successors[j]
                    if s in placed
                )
            )
        ):
            placed[j] = new
        elif old is not None:
            placed[j] = old
        if j in placed:
            usage.add(placed[j], 1)
            _grid_take(grid, instance, placed[j], release=False)


def _grid_take(grid: CapacityGrid, instance: Instance, p: Placement, release: bool) -> None:
    """Take a placement's GPUs (and its team's room) on the grid, or give them back."""
    job = instance.jobs[p.job]
    fit, gang, d = Fit(p.pool, p.start, p.nodes), job.gangs[p.pool], job.durations[p.pool]
    if release:
        grid.release(fit, gang, d, job.team)
    else:
        grid.occupy(fit, gang, d, job.team)


def solver_placements(instance: Instance, plan: Plan) -> tuple[list[Placement], Layout]:
    """A solver's plan as placements and the layout of its inference (which a solver's plan
    always has)."""
    layout = plan_layout(instance, plan)
    if layout is None:
        raise RuntimeError("internal error: a solver's plan has no valid inference layout")
    return plan_placements(instance, plan), layout


def quotas_kept(instance: Instance, plan: Plan) -> Plan:
    """A solver's plan with no job kept out of its team's quota (`keep_quotas`); the plan as it
    is when nothing had to move. A bound stays (it leaves quotas out); `optimal` stays only
    where the pwo still meets it."""
    started = time.perf_counter() - (plan.wall_seconds or 0.0)
    placements, layout = solver_placements(instance, plan)
    kept = keep_quotas(instance, placements, layout)
    if sorted(kept, key=lambda p: p.job) == sorted(placements, key=lambda p: p.job):
        return plan
    reasons = unscheduled_causes(instance, kept, layout)
    fixed = started_gpus(instance)
    draft = build_plan(instance, plan.solver, kept, layout, reasons, started=started, fixed=fixed)
    pwo = draft.objective
    status: Status = plan.status
    if plan.bound is not None and not reaches(pwo, plan.bound):
        status = "feasible"
    return stamp(
        instance,
        draft.model_copy(update={"status": status}),
        started=started,
        bound=plan.bound,
        bound_source=plan.bound_source,
        build_seconds=plan.build_seconds,
    )
