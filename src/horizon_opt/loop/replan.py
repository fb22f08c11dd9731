"""Re-planning from the cluster's state without breaking near promises.

A re-plan starts from an instance at `now` (running jobs placed, finished jobs left out) and the
plan it replaces. Starts that the previous plan promised within the freeze window are held, like
Slurm's reservations: those jobs are placed where they were promised, so no solver moves them.
The rest is planned again, cpsat starting from the previous plan, and the new plan reports its
churn against the previous one.

Beyond the window, a stability weight `W` gives every promise a price: a plan that keeps a job
at its promised pool and start, on time, earns `W * value` on top of the job's value, so a move
must gain more than that. cpsat optimizes pwo plus these bonuses; its proven bound is a bound on
that sum, hence also on pwo (looser by at most the bonuses), so the gap it reports stays honest.
The heuristic solvers ignore the weight.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from horizon_opt.loop.state import hold_starts
from horizon_opt.model.instance import Instance, Promise
from horizon_opt.plans.churn import churn
from horizon_opt.plans.plan import Plan
from horizon_opt.solvers import SolveOptions, solve
from horizon_opt.solvers.reclaim import quotas_bind, quotas_kept

# Starts this near are held: people act on them, and a re-plan every 2 h never moves a start
# that the plan before it was about to make.
DEFAULT_FREEZE_MINUTES = 120
PROMISE_AHEAD_MINUTES = 120  # a start predicted this far ahead is a promise people plan around
MAX_STABILITY = 10.0  # a promise worth ten times its job: beyond that, freeze it instead


@dataclass(frozen=True)
class Replan:
    plan: Plan  # with `churn` set
    held: tuple[str, ...]  # jobs whose promised start was held
    not_held: tuple[str, ...]  # one line per promise in the window that the state no longer allows


def replan(
    instance: Instance,
    previous: Plan,
    solver: str = "cpsat",
    options: SolveOptions | None = None,
    *,
    freeze_slots: int | None = None,
    stability: float = 0.0,
) -> Replan:
    """Plan `instance` again from its `now`, holding the previous plan's starts in
    [now, now + freeze_slots) (default: DEFAULT_FREEZE_MINUTES, rounded up to slots), and
    pricing every later promise at `stability` times its job's value."""
    if freeze_slots is None:
        freeze_slots = -(-DEFAULT_FREEZE_MINUTES // instance.slot_minutes)
    if freeze_slots < 0:
        raise ValueError(f"freeze_slots must be >= 0, got {freeze_slots}")
    if not 0.0 <= stability <= MAX_STABILITY:
        raise ValueError(f"stability must be from 0 to {MAX_STABILITY:g}, got {stability}")
    held_instance, held, not_held = hold_starts(instance, previous, instance.now + freeze_slots)
    if stability > 0:
        held_instance = with_promises(held_instance, previous, stability)
    options = options or SolveOptions()
    if options.hint is None:
        options = replace(options, hint=previous)
    plan = solve(held_instance, solver, options)
    if held and quotas_bind(instance):
        plan, held, lent = _quotas_kept_in_state(instance, plan, held)
        not_held += lent
    changes = churn(instance, previous, plan).model_copy(
        update={"held": len(held), "stability": stability}
    )
    return Replan(plan.model_copy(update={"churn": changes}), tuple(held), tuple(not_held))


def _quotas_kept_in_state(
    instance: Instance, plan: Plan, held: list[str]
) -> tuple[Plan, list[str], list[str]]:
    """`plan` (made with the held starts placed) with rule 9 kept in `instance`, where a held
    start is a promise, not a run: borrowing it promised can be given back, and must be when it
    keeps another team's job out of its quota (FORMAT.md, "Teams"). Returns the plan, the held
    jobs still where they were held, and a line per hold given up."""
    kept = quotas_kept(instance, plan)
    if kept is plan:
        return plan, held, []
    before = {a.job: (a.pool, a.start) for a in plan.assignments}
    after = {a.job: (a.pool, a.start) for a in kept.assignments}
    moved = [job for job in held if after.get(job) != before[job]]
    lines = [
        f"{job}: its start at slot {before[job][1]} cannot be held: it borrows GPUs that "
        "another team's job needs within its quota (rule 9)"
        for job in moved
    ]
    return kept, [job for job in held if job not in moved], lines


def with_promises(instance: Instance, previous: Plan, stability: float) -> Instance:
    """The instance with a promise on every free job that `previous` starts at or after now."""
    promised = {
        a.job: a
        for a in previous.assignments
        if a.start >= instance.now and a.pool in instance.pool_index
    }
    jobs = []
    for job in instance.jobs:
        a = promised.get(job.id)
        pool = -1 if a is None else instance.pool_index[a.pool]
        if a is None or job.placed is not None or pool not in job.durations:
            jobs.append(job)
            continue
        jobs.append(replace(job, promise=Promise(pool, a.start, stability * job.value)))
    return replace(instance, jobs=tuple(jobs))


def with_held_promises(instance: Instance, starts: Mapping[str, int], weight: float) -> Instance:
    """The instance with a `by` promise on every free job of `starts` (job id -> the start
    people were told), worth `weight` times its value: a plan that starts the job by then, on
    time, earns it. A promise already past (the job did not start by then) is dropped."""
    jobs = []
    for job in instance.jobs:
        start = starts.get(job.id)
        if start is None or start < instance.now or job.placed is not None:
            jobs.append(job)
            continue
        jobs.append(replace(job, promise=Promise(-1, start, weight * job.value, by=True)))
    return replace(instance, jobs=tuple(jobs))
