"""Cause `quota-borrowed-by`: a job that would fit within its team's quota, in time, if other
teams gave back the GPUs they hold above their own quotas (what Kueue reclaims).

The borrowed work is found per team of the waiting job: every planned job of another team that
runs while that team holds more than its quota on the pool, least valuable first, as long as
taking it out leaves its team at or above its quota over its run (only borrowed GPUs are given
back). The job's window is then searched beside the rest of the plan, and must keep its own team
within quota.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from horizon_opt.model.instance import Instance, IntArray
from horizon_opt.model.teams import quota_profile, team_usage
from horizon_opt.solvers.assemble import Placement
from horizon_opt.solvers.grid import Fit


def team_used(instance: Instance, placements: Sequence[Placement]) -> IntArray:
    """[teams, P, S] GPUs the placements' jobs hold per team, pool and slot."""
    runs = (
        (instance.jobs[p.job].team, p.pool, p.start, p.end(instance), instance.jobs[p.job].gpus)
        for p in placements
    )
    return team_usage(len(instance.teams), len(instance.pools), instance.slots, runs)


def borrowed_work(
    instance: Instance, placed: Mapping[int, Placement], team: int, used: IntArray
) -> list[int]:
    """The planned jobs of teams other than `team` that only borrowed GPUs run: least valuable
    first, each taken while its team stays at or above its quota over its run."""
    quota = quota_profile(instance.teams, len(instance.pools))
    left = used.copy()
    out: list[int] = []
    for p in sorted(placed.values(), key=lambda p: (instance.jobs[p.job].value, -p.start)):
        job = instance.jobs[p.job]
        if job.team is None or job.team == team:
            continue
        end = p.end(instance)
        run = left[job.team, p.pool, p.start : end]
        if len(run) and (run - job.gpus >= quota[job.team, p.pool]).all():
            run -= job.gpus
            out.append(p.job)
    return out


def within_quota(instance: Instance, fit: Fit, j: int, used: IntArray) -> bool:
    """Whether job j's run at `fit` keeps its team within its quota on that pool."""
    job = instance.jobs[j]
    assert job.team is not None
    quota = instance.teams[job.team].quota.get(fit.pool, 0)
    end = fit.start + job.durations[fit.pool]
    return bool((used[job.team, fit.pool, fit.start : end] + job.gpus <= quota).all())
