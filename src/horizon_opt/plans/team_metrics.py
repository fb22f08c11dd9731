"""Per-team figures of a plan (FORMAT.md, Metrics by team): GPU-hours against quota, borrowed
and lent, how often borrowing kept the team out of its quota, pwo, on-time jobs, waits, and one
fairness figure. Computed from the plan file alone.
"""

from __future__ import annotations

import numpy as np

from horizon_opt.model.instance import Instance
from horizon_opt.model.teams import quota_profile, team_usage
from horizon_opt.plans.check import kept_out
from horizon_opt.plans.plan import Plan, TeamFigures


def team_figures(instance: Instance, plan: Plan) -> dict[str, TeamFigures]:
    """Each team's figures; GPU-hours count the slots from `now` on, as `batch_gpu_hours`."""
    h, now, S = instance.hours_per_slot, instance.now, instance.slots
    T, P = len(instance.teams), len(instance.pools)
    runs = []
    pwo = np.zeros(T)
    waits: list[list[float]] = [[] for _ in range(T)]
    for a in plan.assignments:
        job = instance.jobs[instance.job_index[a.job]]
        if job.team is None:
            continue
        runs.append((job.team, instance.pool_index[a.pool], max(a.start, now), a.end, job.gpus))
        if job.ends_on_time(a.end):
            pwo[job.team] += job.value
            waits[job.team].append((a.start - job.wait_release) * h)
    quota = quota_profile(instance.teams, P)[:, :, None]
    kept = kept_out(instance, plan).sum(axis=(1, 2))  # (rule 9's own count)
    used = team_usage(T, P, S, runs)[:, :, now:]  # [T, P, slots from now]
    above = np.maximum(used - quota, 0)
    idle = np.maximum(quota - used, 0)
    others_above = above.sum(axis=0, keepdims=True) - above
    lent = np.minimum(idle, others_above)
    gpu_hours = used.sum(axis=(1, 2)) * h
    quota_hours = quota[:, :, 0].sum(axis=1) * (S - now) * h
    return {
        team.name: TeamFigures(
            gpu_hours=float(gpu_hours[t]),
            quota_gpu_hours=float(quota_hours[t]),
            borrowed_gpu_hours=float(above[t].sum() * h),
            lent_gpu_hours=float(lent[t].sum() * h),
            share=_part(gpu_hours, t),
            quota_share=_part(quota_hours, t),
            pwo=float(pwo[t]),
            completed=len(waits[t]),
            mean_wait_hours=float(np.mean(waits[t])) if waits[t] else 0.0,
            kept_out_slots=int(kept[t]),
        )
        for t, team in enumerate(instance.teams)
    }


def _part(values: np.ndarray, t: int) -> float:
    total = float(values.sum())
    return float(values[t]) / total if total > 0 else 0.0


def fairness(figures: dict[str, TeamFigures]) -> float | None:
    """Jain's index of share / quota_share over the teams with a quota: 1 when every team's
    part of the GPU-hours is its part of the quotas, down to 1/n when one team takes all.
    None without a team with a quota, or without any GPU-hours."""
    x = np.array([f.share / f.quota_share for f in figures.values() if f.quota_share > 0])
    if not len(x) or not (x > 0).any():
        return None
    return float(x.sum() ** 2 / (len(x) * (x**2).sum()))
