"""Plans that borrow and keep teams' quotas by construction: the pool-level model with rule 9.

The search within quotas (`quotas.py`) never lets a team borrow, so a gang larger than its
team's quota never runs; a plan that borrows freely is torn apart by the reclaim. This model
lets teams borrow and writes FORMAT.md's rule 9 as constraints over the pool-level model
(`relaxation.pool_model`): per job, pool and slot where the job could wait within its team's
quota, it must not be kept out, that is, not (waiting, `used + gpus <= quota`, `free < gpus` and
`free + B >= gpus`). Each of the four is a literal that must be true when its condition holds;
`free` counts the required replicas only, and the runs are then packed on nodes with the
replicas decided at exactly `req` (`model.pack_subproblem`), so the free GPUs rule 9
reads in the packed plan are the model's.

It is not a relaxation (a plan may hold more replicas than required, which the model does not
allow): its objective bounds nothing, and only its packed plan counts, which the reclaim then
checks like every other candidate.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from horizon_opt.model.instance import Instance, pinned_jobs
from horizon_opt.model.teams import quota_profile
from horizon_opt.plans.inference import Layout, elastic_layout
from horizon_opt.relaxation.columns import pool_free_gpus
from horizon_opt.relaxation.pool_model import (
    PoolModel,
    PoolVars,
    build_pool_model,
    run_length,
    solution_runs,
)
from horizon_opt.solvers.assemble import Placement
from horizon_opt.solvers.cpsat.budget import Budget
from horizon_opt.solvers.cpsat.model import NodeModel, pack_subproblem
from horizon_opt.solvers.cpsat.objective import end_weights, value_scale
from horizon_opt.solvers.cpsat.runner import Runner
from horizon_opt.solvers.options import SolveOptions

MAX_TERMS = 20_000  # (job, pool, slot) triples: beyond, the search within quotas does better
COMPLETION_SECONDS = 1.0  # to complete the start plan's solution (its runs fixed: quick)

Expr = cp_model.LinearExpr | int


def fits(instance: Instance) -> bool:
    """The rule's literals stay within `MAX_TERMS` (and the instance is a whole one: a residual
    instance's held GPUs belong to no team the rule could read)."""
    terms = sum(len(j.durations) for j in instance.jobs) * (instance.slots - instance.now)
    return instance.held is None and instance.team_held is None and terms <= MAX_TERMS


class _Started:
    """Literals `started[j, p, t]`: job j runs on pool p and starts at or before slot t."""

    def __init__(self, model: cp_model.CpModel, v: PoolVars) -> None:
        self.model, self.v = model, v
        self.span = {key: _span(var) for key, var in v.start.items()}
        self.cache: dict[tuple[int, int, int], cp_model.IntVar] = {}

    def at(self, j: int, p: int, t: int) -> Expr:
        if (j, p) not in self.v.start:
            return 0
        lo, hi = self.span[j, p]
        if t < lo:
            return 0
        if t >= hi:
            return self.v.present[j, p]
        if (j, p, t) not in self.cache:
            b, present, start = (
                self.model.new_bool_var(""),
                self.v.present[j, p],
                self.v.start[j, p],
            )
            self.model.add_implication(b, present)
            self.model.add(start <= t).only_enforce_if(b)
            self.model.add(start >= t + 1).only_enforce_if([present, ~b])
            self.cache[j, p, t] = b
        return self.cache[j, p, t]

    def running(self, instance: Instance, j: int, p: int, t: int) -> Expr:
        return self.at(j, p, t) - self.at(j, p, t - run_length(instance.jobs[j], p))

    def ended(self, instance: Instance, j: int, t: int) -> Expr:
        """1 when job j runs and ends at or before slot t."""
        job = instance.jobs[j]
        return sum(self.at(j, p, t - run_length(job, p)) for p in job.durations)


def _span(var: cp_model.IntVar) -> tuple[int, int]:
    domain = list(var.proto.domain)  # (the proto's repeated field has no negative index)
    return int(domain[0]), int(domain[-1])


@dataclass
class _Use:
    """Per (team, pool, slot) the GPUs a team holds (`used`) and those of its jobs that could
    give them back (`movable`); per (pool, slot) the GPUs left free."""

    used: dict[tuple[int, int, int], Expr]
    movable: dict[tuple[int, int, int], Expr]
    free: dict[tuple[int, int], Expr]


def _use(model: cp_model.CpModel, instance: Instance, started: _Started) -> _Use:
    pinned = pinned_jobs(instance)
    capacity = np.floor(pool_free_gpus(instance) + 1e-9).astype(np.int64)
    out = _Use({}, {}, {})
    teams = range(len(instance.teams))
    for p in range(len(instance.pools)):
        on_pool = [j for (j, q) in started.v.start if q == p]
        mine = {team: [j for j in on_pool if instance.jobs[j].team == team] for team in teams}
        movable = {
            team: [j for j in mine[team] if instance.jobs[j].placed is None and j not in pinned]
            for team in teams
        }
        for t in range(instance.now, instance.slots):
            held = {j: instance.jobs[j].gpus * started.running(instance, j, p, t) for j in on_pool}
            cap = max(int(capacity[p, t]), 0)
            out.free[p, t] = _named(model, cap - sum(held.values()), cap)
            for team in teams:
                out.used[team, p, t] = _named(model, sum(held[j] for j in mine[team]), cap)
                out.movable[team, p, t] = _named(model, sum(held[j] for j in movable[team]), cap)
    return out


def _named(model: cp_model.CpModel, expr: Expr, top: int) -> Expr:
    """A sum of GPUs as one integer variable from 0 to `top` (the pool's capacity bounds every
    such sum), so that the rule's many constraints on it share it."""
    if isinstance(expr, int):
        return expr
    var = model.new_int_var(0, top, "")
    model.add(var == expr)
    return var


class _Borrowed:
    """`B` of rule 9 per (team, pool, slot): what the other teams hold above their quotas there,
    each at most what it could give back."""

    def __init__(self, model: cp_model.CpModel, instance: Instance, use: _Use) -> None:
        self.model, self.use = model, use
        self.quota = quota_profile(instance.teams, len(instance.pools))
        self.teams = len(instance.teams)
        self.top = int(instance.node_gpus.sum())
        self.given: dict[tuple[int, int, int], Expr] = {}

    def others(self, team: int, p: int, t: int) -> Expr:
        return sum(self._of(other, p, t) for other in range(self.teams) if other != team)

    def _of(self, team: int, p: int, t: int) -> Expr:
        if (team, p, t) not in self.given:
            used, movable = self.use.used[team, p, t], self.use.movable[team, p, t]
            if isinstance(used, int) and isinstance(movable, int):  # (no job of it can be there)
                self.given[team, p, t] = min(max(used - int(self.quota[team, p]), 0), movable)
                return self.given[team, p, t]
            m, top = self.model, self.top
            above, back = m.new_int_var(-top, top, ""), m.new_int_var(0, top, "")
            over, could = m.new_int_var(0, top, ""), m.new_int_var(0, top, "")
            m.add(above == used - int(self.quota[team, p]))
            m.add_max_equality(over, [above, 0])
            m.add(could == movable)
            m.add_min_equality(back, [over, could])
            self.given[team, p, t] = back
        return self.given[team, p, t]


def add_quota_rule(model: cp_model.CpModel, instance: Instance, v: PoolVars) -> None:
    """Rule 9 over the pool-level model's runs (see the module)."""
    started = _Started(model, v)
    use = _use(model, instance, started)
    borrowed = _Borrowed(model, instance, use)
    quota = borrowed.quota
    kept_out: dict[tuple[int, int, int, int], cp_model.IntVar] = {}

    def kept(team: int, p: int, t: int, gpus: int) -> cp_model.IntVar:
        """True whenever a job of `gpus` waiting there would be kept out."""
        if (team, p, t, gpus) not in kept_out:
            within, short, reach = (model.new_bool_var("") for _ in range(3))
            free = use.free[p, t]
            model.add(use.used[team, p, t] >= int(quota[team, p]) - gpus + 1).only_enforce_if(
                ~within
            )
            model.add(free >= gpus).only_enforce_if(~short)
            model.add(free + borrowed.others(team, p, t) <= gpus - 1).only_enforce_if(~reach)
            lit = model.new_bool_var("")
            model.add_bool_or([lit, ~within, ~short, ~reach])
            kept_out[team, p, t, gpus] = lit
        return kept_out[team, p, t, gpus]

    for job in instance.jobs:
        if job.team is None or job.placed is not None:
            continue
        if any(not any((q, p) in v.start for p in instance.jobs[q].durations) for q in job.after):
            continue  # (a predecessor never runs: the job never waits)
        for t in range(max(job.release, instance.now), instance.slots):
            pools = [
                p
                for p, d in job.durations.items()
                if t + d <= instance.slots and job.gpus <= quota[job.team, p]
            ]
            if not pools:
                continue
            waits = model.new_bool_var("")
            ahead = sum(started.at(job.index, p, t) for p in job.durations)
            unfinished = sum(1 - started.ended(instance, q, t) for q in job.after)
            model.add(waits + ahead + unfinished >= 1)
            for p in pools:
                model.add_bool_or([~waits, ~kept(job.team, p, t, job.gpus)])


def quota_plan(
    instance: Instance,
    options: SolveOptions,
    seconds: float,
    hint: Sequence[Placement],
) -> tuple[list[Placement], Layout] | None:
    """The model's best runs within `seconds` (from `hint`, a plan that keeps rule 9), packed on
    nodes; None when it found none. Its solves run as the search's do (`Runner`: on the wall
    clock, the model runs with two or more workers only; Ctrl-C stops a solve and keeps its best
    solution).

    First the pool with the most idle GPUs in `hint` is searched with every other run fixed (a
    job that has to borrow enters a plan only when most runs of its pool move with it, a move
    CP-SAT's own neighbourhoods of this model rarely make), the next idlest when that search
    closes within its time, then CP-SAT's neighbourhoods improve the whole model from there."""
    started = time.perf_counter()
    runs = {p.job: (p.pool, p.start) for p in hint}
    built = build_pool_model(instance, runs or None)
    add_quota_rule(built.model, instance, built.vars)
    runner = Runner(Budget(seconds, False, options.params))
    with runner.installed():
        params = options.params
        search = seconds * (1 - params.quota_pack_share)
        values = _completed(runner, built, runs)
        if values is not None and params.quota_pool_share > 0:
            ends = time.perf_counter() + params.quota_pool_share * (
                search - (time.perf_counter() - started)
            )
            for pool in _pools_by_idleness(instance, runs):
                limit = ends - time.perf_counter()
                if limit <= 0 or runner.budget.interrupted:
                    break
                values, closed = _on_one_pool(runner, built, runs, pool, values, limit, options)
                runs = _runs_in(built.vars, values)
                if not closed:  # (its time ran out there: nothing is left for another pool)
                    break
        if values is not None:
            _hint_all(built.model, values)
        solver = runner.solver(
            search - (time.perf_counter() - started), options.seed, options.workers
        )
        # (its many reified rows make CP-SAT's tree search slow to improve on the start)
        solver.parameters.use_lns_only = True
        (status,) = (None,) if runner.budget.interrupted else runner.run([(solver, built.model)])
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            runs = solution_runs(built.vars, solver.value)
        elif values is None:
            return None
        return _pack(instance, options, runner, runs, hint)


def _runs_in(v: PoolVars, values: Sequence[int]) -> dict[int, tuple[int, int]]:
    """The runs of a solution given as every variable's value, by proto index."""
    return solution_runs(v, lambda var: values[var.index])


def _fix(
    model: cp_model.CpModel, v: PoolVars, runs: dict[int, tuple[int, int]], jobs: Iterable[int]
) -> None:
    """Each of `jobs` run as `runs` has it, or not at all."""
    chosen = set(jobs)
    for (j, p), present in v.present.items():
        if j not in chosen:
            continue
        run = runs.get(j)
        model.add(present == int(run is not None and run[0] == p))
        if run is not None and run[0] == p:
            model.add(v.start[j, p] == run[1])


def _completed(
    runner: Runner, built: PoolModel, runs: dict[int, tuple[int, int]]
) -> list[int] | None:
    """Every variable's value in the solution that runs `runs` (a plan that keeps rule 9), the
    rule's literals and sums included; None when it is not found in time."""
    fixed = built.model.clone()
    _fix(fixed, built.vars, runs, {j for j, _ in built.vars.present})
    solver = runner.solver(COMPLETION_SECONDS, 0, 1)
    (status,) = runner.run([(solver, fixed)])
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return list(solver.response_proto.solution)


def _hint_all(model: cp_model.CpModel, values: Sequence[int]) -> None:
    """Hint every variable (CP-SAT then starts from that solution; hinted with the runs alone,
    it has to complete them itself and often starts from a worse solution of its own)."""
    model.clear_hints()  # type: ignore[no-untyped-call]
    for i, value in enumerate(values):
        model.add_hint(model.get_int_var_from_proto_index(i), value)


def _pools_by_idleness(instance: Instance, runs: dict[int, tuple[int, int]]) -> list[int]:
    """The pools, those whose GPUs `runs` leave idle longest (beside the required replicas)
    first."""
    idle = np.floor(pool_free_gpus(instance) + 1e-9)[:, instance.now :].clip(0).sum(axis=1)
    for j, (p, start) in runs.items():
        job = instance.jobs[j]
        end = min(start + run_length(job, p), instance.slots)
        idle[p] -= job.gpus * max(end - max(start, instance.now), 0)
    return sorted(range(len(instance.pools)), key=lambda p: (-idle[p], p))


def _on_one_pool(
    runner: Runner,
    built: PoolModel,
    runs: dict[int, tuple[int, int]],
    pool: int,
    values: list[int],
    seconds: float,
    options: SolveOptions,
) -> tuple[list[int], bool]:
    """`values`, or a better solution in which only the runs on `pool` and the jobs `runs` does
    not run may change; and whether that search closed (found the best such solution)."""
    model = built.model.clone()
    _hint_all(model, values)
    _fix(model, built.vars, runs, {j for j, (p, _) in runs.items() if p != pool})
    solver = runner.solver(seconds, options.seed, options.workers)
    (status,) = runner.run([(solver, model)])
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return list(solver.response_proto.solution), status == cp_model.OPTIMAL
    return values, False


def _pack(
    instance: Instance,
    options: SolveOptions,
    runner: Runner,
    runs: dict[int, tuple[int, int]],
    hint: Sequence[Placement],
) -> tuple[list[Placement], Layout] | None:
    """The runs on nodes as they are, with the replicas decided (at exactly `req`); a run that
    `hint` has on the same pool and slot is hinted onto its nodes there (the hint is packed, so
    the runs the model kept from it pack at once)."""
    sub = pack_subproblem(instance, elastic_layout(instance), runs, hint)
    weights = end_weights(instance, options.params.end_order)
    nm = NodeModel(instance, sub, value_scale(instance), weights)
    nm.keep_only(runs)
    seconds = runner.budget.time_limit * options.params.quota_pack_share
    solver = runner.solver(seconds, options.seed, options.workers)
    (status,) = runner.run([(solver, nm.model)])
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return list(nm.extract(solver).values()), nm.extract_layout(solver)
