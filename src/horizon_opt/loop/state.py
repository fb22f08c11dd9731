"""The cluster's state at `now`, written as an instance: what re-planning and the replay start from.

An instance with `now` holds the jobs that have not ended: running jobs and held starts are
`placed`, finished jobs are left out (and out of the `after` lists of the jobs that waited for
them). These functions build such instances from a plan, so that `replan` can hold a previous
plan's near starts (the freeze window) and `simulate` can step a cluster forward.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from horizon_opt.errors import InstanceError
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.model.spec import InstanceSpec, PlacedSpec
from horizon_opt.plans.plan import Assignment, Plan


def placed_spec(a: Assignment) -> PlacedSpec:
    """A plan assignment as a job's `placed:` field."""
    return PlacedSpec(pool=a.pool, start=a.start, gpus={n: list(g) for n, g in a.gpus.items()})


def without_jobs(spec: InstanceSpec, ended: Collection[str]) -> InstanceSpec:
    """The spec without the `ended` jobs, which also leave the `after` lists of the others."""
    jobs = [
        j
        if not set(j.after) & set(ended)
        else j.model_copy(update={"after": [a for a in j.after if a not in ended]})
        for j in spec.jobs
        if j.id not in ended
    ]
    return spec.model_copy(update={"jobs": jobs})


def with_placed(spec: InstanceSpec, placed: dict[str, PlacedSpec], now: int) -> InstanceSpec:
    """The spec at `now`, with these jobs placed (others keep what they had)."""
    jobs = [
        j.model_copy(update={"placed": placed[j.id]}) if j.id in placed else j for j in spec.jobs
    ]
    return spec.model_copy(update={"jobs": jobs, "now": now})


def state_at(spec: InstanceSpec, plan: Plan, now: int) -> InstanceSpec:
    """The state at `now` if `plan` ran exactly as planned until then: jobs that ended by `now`
    are left out, jobs that started before `now` are placed, the rest is free."""
    ended = {a.job for a in plan.assignments if a.end <= now}
    running = {a.job: placed_spec(a) for a in plan.assignments if a.start < now < a.end}
    return with_placed(without_jobs(spec, ended), running, now)


def hold_starts(
    instance: Instance, previous: Plan, until: int
) -> tuple[Instance, list[str], list[str]]:
    """Hold the starts that `previous` promised in [now, until) (the freeze window): those jobs
    are placed there, like Slurm's reservations.

    Returns the instance with the holds, the ids held, and one line per promise that the state
    no longer allows (its nodes are down or taken, its job changed), which stays free instead.
    """
    spec = instance.spec
    free = {j.id for j in instance.jobs if j.placed is None}
    candidates = [
        a
        for a in sorted(previous.assignments, key=lambda a: (a.start, a.job))
        if a.job in free and instance.now <= a.start < until
    ]
    if not candidates:
        return instance, [], []
    holds = {a.job: placed_spec(a) for a in candidates}
    try:
        return _compiled(spec, holds, instance), list(holds), []
    except InstanceError:
        pass
    kept: dict[str, PlacedSpec] = {}
    dropped: list[str] = []
    for a in candidates:  # one at a time, in start order: keep each hold the state allows
        try:
            _compiled(spec, {**kept, a.job: holds[a.job]}, instance)
        except InstanceError as exc:
            dropped.append(
                f"{a.job}: its start at slot {a.start} cannot be held: {exc.problems[0]}"
            )
            continue
        kept[a.job] = holds[a.job]
    return _compiled(spec, kept, instance), list(kept), dropped


def _compiled(spec: InstanceSpec, holds: dict[str, PlacedSpec], instance: Instance) -> Instance:
    # Services compile in file order, so a service's index is its position in the spec; its
    # demand is passed on as compiled (a CSV file is read once, when the instance is loaded).
    # With an open end it keeps its horizon: the plan made for it is checked against it, so a
    # hold that would run past it (its job's run time grew since the promise) is not allowed.
    demands = {s.index: s.demand.tolist() for s in instance.services}
    held = compile_instance(with_placed(spec, holds, instance.now), demands, instance.slots)
    if held.slots > instance.slots:
        ends = {j.id: j.placed.end for j in held.jobs if j.placed is not None}
        raise InstanceError(
            [
                f"job {job!r} would run until slot {end}, past the horizon ({instance.slots} slots)"
                for job, end in ends.items()
                if end > instance.slots
            ]
        )
    broken = _above_limits(instance, held) + _through_blackouts(instance, held, holds)
    if broken:
        raise InstanceError(broken)
    return held


def _through_blackouts(instance: Instance, held: Instance, holds: Collection[str]) -> list[str]:
    """The holds whose runs (as long as their jobs' runs are now) cross one of their blackouts:
    a placed job's blackouts bind nothing, but in `instance` a held start is a waiting job's."""
    lines = []
    for job_id in holds:
        placed = held.jobs[held.job_index[job_id]].placed
        assert placed is not None  # (a hold is placed in `held`)
        start, end = placed.start, placed.end
        for lo, hi in instance.jobs[instance.job_index[job_id]].blackouts:
            if start < hi and lo < end:
                lines.append(
                    f"job {job_id!r} would run [{start}, {end}) through its blackout [{lo}, {hi})"
                )
    return lines


def _above_limits(instance: Instance, held: Instance) -> list[str]:
    """Where the holds take a team above its limit (rule 8) in `instance`, in which a held start
    is a waiting job, not a run: with them a team may hold at most its limit, or what its
    running jobs alone hold where that is more (placed jobs are never a violation themselves)."""
    if not instance.limited:
        return []
    cap = np.maximum(instance.team_room, instance.placed_team_gpus)
    holding = held.placed_team_gpus
    lines = []
    for team, p in zip(*np.nonzero((holding > cap).any(axis=2)), strict=True):
        t = int(np.argmax(holding[team, p] > cap[team, p]))
        lines.append(
            f"team {instance.teams[team].name!r} would hold {holding[team, p, t]} GPUs of pool "
            f"{instance.pools[p].name!r} at slot {t}, above the {cap[team, p, t]} it may hold (rule 8)"
        )
    return lines
