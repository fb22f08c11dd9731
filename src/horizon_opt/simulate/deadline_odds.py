"""Deadline odds: what a job with a deadline is worth to a plan made on learned run times.

A plan on learned run times counts a job on time when its learned run (the median of the runs
ended so far) ends by its deadline: it does about half the time. Started early enough that its
limit ends by the deadline, it ends in time for sure. Without odds the plan is indifferent
between starting a deadline job at once and at the last slot its median allows, and in a busy
cluster a big gang slides there, re-plan after re-plan, until its luck runs out. With odds the
planner sees such a job at `share` (the quantile its run times are learned at) of its value for
a start whose learned run ends in time, and at its whole value for a start whose limit does
(a `by` promise per pool, `Promise.by_pool`): the chance of ending on time, read at those two
points of the run-time distribution.
"""

from __future__ import annotations

from dataclasses import replace

from horizon_opt.model.instance import Instance, Promise


def with_deadline_odds(state: Instance, written: Instance, share: float) -> Instance:
    """`state` (planned on learned run times) with each free job that has a deadline and no
    promise worth `share` of its value, plus the rest for a start whose limit (in `written`,
    the instance as written) ends by the deadline, on each pool where such a start is left."""
    jobs = []
    for job in state.jobs:
        if job.deadline is None or job.placed is not None or job.promise is not None:
            jobs.append(job)
            continue
        limits = written.jobs[written.job_index[job.id]].durations
        first = max(state.now, job.release)
        latest = tuple(
            (p, job.deadline - limits[p])
            for p in sorted(job.durations)
            if p in limits and job.deadline - limits[p] >= first
        )
        odds = replace(job, priority=job.priority * share)
        if latest:
            bonus = job.value - odds.value
            start = max(s for _, s in latest)
            odds = replace(odds, promise=Promise(-1, start, bonus, by=True, by_pool=latest))
        jobs.append(odds)
    return replace(state, jobs=tuple(jobs))
