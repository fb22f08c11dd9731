"""A second proven bound on pwo: the instance at pool level, solved by CP-SAT.

Each pool's GPUs at each slot are one capacity: the GPUs of its up nodes (less those that placed
jobs hold) minus the GPUs of the required replicas `req[v][t]`, the fewest that any valid plan
must give inference there. Node placement is dropped; what stays of the placement rule holds for
every node layout: a job uses only pools where it fits at all (the compiled gangs), only starts
where it fits alone beside the required replicas, and a whole-node gang counts its nodes against
the nodes that inference can leave whole (`columns.whole_free_nodes`, the LP's own row). Each
team's runs on a pool it has a limit on fit that limit (rule 8); quotas are left out.

Every valid plan maps to a feasible solution with the same objective: each of its jobs runs on
its pool over the same slots, within both capacities, after its predecessors, and earns its value
when it ends by its deadline (and a re-plan's stability bonus when it keeps its promise). So the
model's optimum, and any proven bound of CP-SAT on it (`best_objective_bound`, valid even when
the search stops before it closes), bounds pwo. Unlike the time-indexed LP and MIP, dependencies
are exact here, and the search is CP-SAT's own.

Values are rounded UP to integer objective units, so the bound only gets looser by rounding.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from horizon_opt.model.instance import FloatArray, Instance, Job, topological_order
from horizon_opt.relaxation.columns import pool_free_gpus, whole_free_nodes
from horizon_opt.relaxation.limits import limit_caps

MAX_UNITS = 2**53  # objective units in all: exact in a double, far from CP-SAT's int64 limit


@dataclass(frozen=True)
class PoolLimits:
    """How long CP-SAT may work on the pool model: `seconds` of wall clock, and with one worker
    `deterministic` units (CP-SAT's own, so a rerun stops at the same point), on `workers`."""

    seconds: float
    workers: int = 1
    deterministic: float | None = None
    seed: int = 0
    give_up_after: float | None = None
    """Seconds after which it stops when its bound is not yet below the one `pool_bound`'s
    `known` returns (only without a deterministic limit: this depends on the machine's speed)."""


@dataclass(frozen=True)
class PoolSolution:
    """The model's best solution: a relaxation's, not a plan (the cpsat solver tries to place
    it on nodes, `starts.pool_start`)."""

    runs: dict[int, tuple[int, int]]  # job -> (pool, start) of each job it runs
    value: float  # its objective: pwo plus kept promises' bonuses (values rounded up)


@dataclass(frozen=True)
class PoolBound:
    value: float | None  # None when CP-SAT proved nothing (no usable objective bound)
    optimal: bool  # the model is solved: `value` is its optimum
    seconds: float
    deterministic_time: float
    solution: PoolSolution | None = None  # None when CP-SAT found none


@dataclass
class PoolVars:
    """The model's variables, per job and per (job, pool)."""

    start: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)
    present: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)
    interval: dict[tuple[int, int], cp_model.IntervalVar] = field(default_factory=dict)
    job_start: dict[int, cp_model.IntVar] = field(default_factory=dict)
    job_end: dict[int, cp_model.IntVar] = field(default_factory=dict)
    runs: dict[int, cp_model.LinearExpr] = field(default_factory=dict)  # 1 when the job runs
    last_end: dict[int, int] = field(default_factory=dict)  # the latest end of any of its runs


@dataclass(frozen=True)
class PoolModel:
    model: cp_model.CpModel
    scale: float  # objective units per unit of pwo
    vars: PoolVars


def objective_scale(values: list[float]) -> float:
    """The smallest power of ten (<= 10^6) that makes every value an integer, lowered while the
    sum of all units could overflow. Units are rounded up, so any scale keeps the bound valid."""
    scale: float = 10**6
    for exact in (1, 10, 100, 1_000, 10_000, 100_000):
        if all(abs(v * exact - round(v * exact)) < 1e-6 for v in values):
            scale = exact
            break
    while scale > 1e-300 and sum(units(v, scale) for v in values) > MAX_UNITS:
        scale /= 10
    return scale


def units(value: float, scale: float) -> int:
    """A value in integer objective units, rounded up (a bound must never shrink by rounding)."""
    return max(0, math.ceil(value * scale - 1e-9))


def run_length(job: Job, pool: int) -> int:
    """Slots the job runs on the pool: its placed `end - start` when placed there."""
    if job.placed is not None and job.placed.pool == pool:
        return job.placed.end - job.placed.start
    return job.durations[pool]


def earliest(instance: Instance) -> list[int]:
    """Each job's earliest start: a placed job's start; else its release, pushed past each
    predecessor's earliest start plus its shortest run (a placed one's own length)."""
    est = [j.placed.start if j.placed is not None else j.release for j in instance.jobs]
    for j in topological_order(instance):
        job = instance.jobs[j]
        if job.placed is None:
            for q in job.after:
                pred = instance.jobs[q]
                est[j] = max(est[j], est[q] + min(run_length(pred, p) for p in pred.durations))
    return est


def fitting_starts(instance: Instance) -> dict[tuple[int, int], list[int]]:
    """Per (job, pool), the starts at which it fits alone for its whole run: at or after its
    earliest start, ending by the horizon (by its deadline when nothing runs after it: a late
    job without successors adds nothing and takes room), within the pool's free GPUs and, for a
    whole-node gang, its whole nodes. A placed job has its placed start only. A job with a
    predecessor that can never run gets none."""
    est = earliest(instance)
    free, whole = pool_free_gpus(instance), whole_free_nodes(instance)
    out: dict[tuple[int, int], list[int]] = {}
    for job in instance.jobs:
        if job.placed is not None:
            out[job.index, job.placed.pool] = [job.placed.start]
            continue
        window = instance.windows[job.index]
        for p, d in job.durations.items():
            gang = job.gangs[p]
            ok = free[p] >= job.gpus - 1e-9
            if gang.whole:
                ok &= whole[p] >= gang.nodes - 1e-9
            blocked = np.r_[0, np.cumsum(~ok)]
            starts = window.allowed(d, est[job.index], window.useful_end).array()
            starts = starts[blocked[starts + d] == blocked[starts]]
            if len(starts):
                out[job.index, p] = starts.tolist()
    runnable = {j for j, _ in out}
    for j in topological_order(instance):
        if j in runnable and any(q not in runnable for q in instance.jobs[j].after):
            runnable.discard(j)
    return {key: v for key, v in out.items() if key[0] in runnable}


def add_runs(
    model: cp_model.CpModel, instance: Instance, starts: Mapping[tuple[int, int], list[int]]
) -> PoolVars:
    """One optional interval per (job, pool) over the starts where it fits alone; a job runs on
    at most one pool, and its job-level start and end are those of the run it makes."""
    v = PoolVars()
    S = instance.slots
    for job in instance.jobs:
        j = job.index
        pools = [p for p in job.durations if (j, p) in starts]
        if not pools:
            v.runs[j] = cp_model.LinearExpr.constant(0)
            continue
        v.job_start[j] = model.new_int_var(0, S, f"s{j}")
        v.job_end[j] = model.new_int_var(0, S, f"e{j}")
        for p in pools:
            d = run_length(job, p)
            s = model.new_int_var_from_domain(cp_model.Domain.from_values(starts[j, p]), "")
            lit = model.new_bool_var("")
            v.start[j, p], v.present[j, p] = s, lit
            v.interval[j, p] = model.new_optional_fixed_size_interval_var(s, d, lit, "")
            model.add(v.job_start[j] == s).only_enforce_if(lit)
            model.add(v.job_end[j] == s + d).only_enforce_if(lit)
            v.last_end[j] = max(v.last_end.get(j, 0), starts[j, p][-1] + d)
        v.runs[j] = cp_model.LinearExpr.sum([v.present[j, p] for p in pools])
        model.add(v.runs[j] <= 1)
    return v


def add_capacity(
    model: cp_model.CpModel,
    intervals: list[tuple[cp_model.IntervalVar, int]],
    profile: FloatArray,
) -> None:
    """`intervals` (with their demand) fit under a capacity that changes over time: a cumulative
    of the profile's peak, where fixed intervals take what the profile lacks slot by slot."""
    if not intervals:
        return
    level = np.maximum(np.floor(profile + 1e-9), 0).astype(np.int64)
    peak = int(level.max(initial=0))
    items = list(intervals)
    t, S = 0, len(level)
    while t < S:
        u = t
        while u < S and level[u] == level[t]:
            u += 1
        if peak - level[t] > 0:
            items.append((model.new_fixed_size_interval_var(t, u - t, ""), peak - int(level[t])))
        t = u
    model.add_cumulative([i for i, _ in items], [d for _, d in items], peak)


def add_pool_capacities(model: cp_model.CpModel, instance: Instance, v: PoolVars) -> None:
    """Per pool: GPUs within the free GPUs, and whole-node gangs' nodes within the whole nodes."""
    free, whole = pool_free_gpus(instance), whole_free_nodes(instance)
    for pool in instance.pools:
        p = pool.index
        gpus, nodes = [], []
        for (j, q), interval in v.interval.items():
            if q != p:
                continue
            gang = instance.jobs[j].gangs[p]
            gpus.append((interval, instance.jobs[j].gpus))
            if gang.whole:
                nodes.append((interval, gang.nodes))
        add_capacity(model, gpus, free[p])
        add_capacity(model, nodes, whole[p])


def add_team_limits(model: cp_model.CpModel, instance: Instance, v: PoolVars) -> None:
    """Per team and pool with a limit: its runs there, placed ones included, within the GPUs it
    may hold (`limits.limit_caps`; quotas are left out, see `limits.py`)."""
    caps = limit_caps(instance)
    for (team, p), cap in caps.items():
        runs = [
            (interval, instance.jobs[j].gpus)
            for (j, q), interval in v.interval.items()
            if q == p and instance.jobs[j].team == team
        ]
        if sum(g for _, g in runs) > cap.min(initial=0.0):
            add_capacity(model, runs, cap)


def add_dependencies(model: cp_model.CpModel, instance: Instance, v: PoolVars) -> None:
    """A job runs only when each job it runs after runs too, and starts after that one ends."""
    for job in instance.jobs:
        s = job.index
        if s not in v.job_start:
            continue
        for q in job.after:
            model.add(v.runs[s] <= v.runs[q])
            if q not in v.job_end:  # (then s cannot run either: runs[q] is 0)
                continue
            for p in job.durations:
                if (s, p) in v.start:
                    model.add(v.start[s, p] >= v.job_end[q]).only_enforce_if(v.present[s, p])


def add_objective(model: cp_model.CpModel, instance: Instance, v: PoolVars, scale: float) -> None:
    """Maximize the value of the jobs that run and end on time, plus kept promises' bonuses."""
    terms: list[cp_model.LinearExprT] = []
    for job in instance.jobs:
        j = job.index
        if j not in v.job_end:
            continue
        on_time: cp_model.LinearExprT = v.runs[j]
        due = instance.windows[j].latest_end
        if v.last_end[j] > due:  # it may run late (for a successor, or placed)
            lit = model.new_bool_var("")
            model.add(lit <= v.runs[j])
            model.add(v.job_end[j] <= due).only_enforce_if(lit)
            on_time = lit
        terms.append(units(job.value, scale) * on_time)
        promise = job.promise
        if promise is not None and promise.by:
            kept = model.new_bool_var("")
            for p in (p for p in job.durations if (j, p) in v.present):
                lits = [kept, v.present[j, p]]
                model.add(v.start[j, p] <= promise.latest(p)).only_enforce_if(lits)
            model.add(kept <= on_time)
            terms.append(units(promise.bonus, scale) * kept)
        elif promise is not None and (j, promise.pool) in v.present:
            kept = model.new_bool_var("")
            model.add_implication(kept, v.present[j, promise.pool])
            model.add(v.start[j, promise.pool] == promise.start).only_enforce_if(kept)
            model.add(kept <= on_time)
            terms.append(units(promise.bonus, scale) * kept)
    model.maximize(sum(terms))


def build_pool_model(
    instance: Instance, hint: Mapping[int, tuple[int, int]] | None = None
) -> PoolModel:
    """The pool-level model of `instance`; `hint`: job -> (pool, start) of a known plan."""
    model = cp_model.CpModel()
    values = [j.value for j in instance.jobs]
    values += [j.promise.bonus for j in instance.jobs if j.promise is not None]
    scale = objective_scale(values)
    v = add_runs(model, instance, fitting_starts(instance))
    add_pool_capacities(model, instance, v)
    add_team_limits(model, instance, v)
    add_dependencies(model, instance, v)
    add_objective(model, instance, v, scale)
    for (j, p), lit in v.present.items():
        chosen = hint.get(j) if hint is not None else None
        model.add_hint(lit, chosen is not None and chosen[0] == p)
        if chosen is not None and chosen[0] == p:
            model.add_hint(v.start[j, p], chosen[1])
    return PoolModel(model, scale, v)


def pool_bound(
    instance: Instance,
    limits: PoolLimits,
    hint: Mapping[int, tuple[int, int]] | None = None,
    on_solver: Callable[[cp_model.CpSolver], None] | None = None,
    known: Callable[[], float | None] | None = None,
) -> PoolBound:
    """CP-SAT's proven bound on the pool-level model within `limits`. `on_solver` receives the
    solver before it runs, so that a caller can stop it (Ctrl-C, the search being over); `known`
    gives the best bound known elsewhere, for `limits.give_up_after`."""
    started = time.perf_counter()
    built = build_pool_model(instance, hint)
    solver = cp_model.CpSolver()
    params = solver.parameters
    params.num_workers = limits.workers
    params.random_seed = limits.seed
    params.max_time_in_seconds = max(0.01, limits.seconds - (time.perf_counter() - started))
    if limits.deterministic is not None:
        params.max_deterministic_time = max(0.01, limits.deterministic)
    params.catch_sigint_signal = False  # Ctrl-C belongs to the caller
    params.linearization_level = 2  # (the cumulatives' energy cuts: without, the bound stalls)
    if on_solver is not None:
        on_solver(solver)
    timer = _give_up_timer(solver, built.scale, limits, known)
    status = solver.solve(built.model)
    if timer is not None:
        timer.cancel()
    seconds = time.perf_counter() - started
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.UNKNOWN):
        raise RuntimeError(f"internal error: pool model status {solver.status_name(status)}")
    found = status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    # A solve stopped before its first solution (UNKNOWN: stopped in presolve, or by the search
    # being over) reports 0 as its bound, which bounds nothing: only a solve that found a
    # solution has proven its bound. (An objective of integer units: it rounds down to one.)
    bound = solver.best_objective_bound if found else math.inf
    value = math.floor(bound + 1e-6) / built.scale if math.isfinite(bound) else None
    solution = _solution(solver, built) if found else None
    optimal = status == cp_model.OPTIMAL
    return PoolBound(value, optimal, seconds, solver.deterministic_time, solution)


def solution_runs(
    v: PoolVars, value: Callable[[cp_model.IntVar], int]
) -> dict[int, tuple[int, int]]:
    """job -> (pool, start) of each job a solution runs, `value` reading its variables."""
    return {j: (p, int(value(v.start[j, p]))) for (j, p), lit in v.present.items() if value(lit)}


def _solution(solver: cp_model.CpSolver, built: PoolModel) -> PoolSolution:
    """Every run of the solver's best solution, and its objective."""
    return PoolSolution(
        solution_runs(built.vars, solver.value), solver.objective_value / built.scale
    )


def _give_up_timer(
    solver: cp_model.CpSolver,
    scale: float,
    limits: PoolLimits,
    known: Callable[[], float | None] | None,
) -> threading.Timer | None:
    """Stops the solve after `limits.give_up_after` seconds when its bound is still no better
    than `known()`: it is then unlikely to get below it in the time left."""
    if limits.give_up_after is None or known is None or limits.deterministic is not None:
        return None
    latest = [math.inf]

    def on_bound(bound: float) -> None:
        latest[0] = bound / scale

    def check() -> None:
        other = known()
        if other is not None and latest[0] >= other:
            solver.stop_search()

    solver.best_bound_callback = on_bound
    timer = threading.Timer(limits.give_up_after, check)
    timer.daemon = True
    timer.start()
    return timer
