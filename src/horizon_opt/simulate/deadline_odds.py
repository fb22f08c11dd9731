"""Deadline odds: what a job with a deadline is worth to a plan made on learned run times.

A plan on learned run times counts a job on time when its learned run (the median of the runs
ended so far) ends by its deadline: it does about half the time. Without odds the plan is
indifferent between starting a deadline job at once and at the last slot its median allows, and
in a busy cluster a big gang slides there, re-plan after re-plan, until its luck runs out. With
odds the planner sees such a job at the learned quantile's share of its value (a half) for any
start whose learned run ends in time, and at its chance of ending in time for the earliest start
that matters on each pool: a start early enough that its limit ends by the deadline (then
certain), or, where none is left, its first possible start (then the share of the ended runs
that ran no longer than the time left, a share of its limit). That second point is a `by`
promise per pool (`Promise.by_pool`) worth the difference.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from horizon_opt.model.instance import Instance, Job, Promise
from horizon_opt.simulate.runtimes import RunTimes, gang_class


def with_deadline_odds(
    state: Instance, written: Instance, runtimes: RunTimes, by_class: bool = False
) -> Instance:
    """`state` (planned on `runtimes`, of each job's gang class with `by_class`) with each free
    job that has a deadline and no promise valued by its odds (see the module); `written` is the
    instance as written, whose durations are the limits. Unchanged until runs have ended: the
    plans are then on limits."""
    if not runtimes.learned():
        return state
    jobs = []
    for job in state.jobs:
        if job.deadline is None or job.placed is not None or job.promise is not None:
            jobs.append(job)
            continue
        limits = written.jobs[written.job_index[job.id]].durations
        klass = gang_class(job.gpus) if by_class else ""
        jobs.append(_with_odds(job, state.now, limits, runtimes, klass))
    return replace(state, jobs=tuple(jobs))


def _with_odds(
    job: Job, now: int, limits: Mapping[int, int], runtimes: RunTimes, klass: str
) -> Job:
    """`job` at the quantile's share of its value, plus a promise for its odds' points."""
    share = runtimes.quantile
    assert job.deadline is not None
    first = max(now, job.release)
    points = {}  # pool -> (the start that matters, the chance of ending in time from it)
    for p in sorted(job.durations) if job.deadline > first else ():
        if p not in limits:
            continue
        start = max(first, job.deadline - limits[p])
        odds = runtimes.within((job.deadline - start) / limits[p], klass)
        if odds > share:
            points[p] = (start, odds)
    counted = replace(job, priority=job.priority * share)
    if not points:
        return counted
    level = min(odds for _, odds in points.values())
    bonus = job.value * (level - share)
    latest = tuple((p, s) for p, (s, _) in points.items())
    start = max(s for _, s in latest)
    return replace(counted, promise=Promise(-1, start, bonus, by=True, by_pool=latest))
