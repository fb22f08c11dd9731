"""Reclaim in the replay: a team's waiting work takes its quota back from running borrowers.

A plan keeps quotas (FORMAT.md, rule 9) only among the jobs it may move; a running job is placed,
so a job released while another team's running jobs borrow its quota would wait behind them. A
cluster does not let it: Kueue preempts workloads of ClusterQueues above their nominal quota
(`reclaimWithinCohort`) when a workload within its own quota cannot otherwise be admitted. The
replay does the same before each slot's decision, read at pool level as rule 9 is: a ready job
whose team stays within its quota on a pool, for which the pool's free GPUs are short and the
other teams' GPUs above their quotas would cover the shortfall, preempts those teams' running
jobs there until it fits, in the order plans give borrowed GPUs back
(`solvers.reclaim.borrower_order`: the team furthest above its quota per unit of weight first,
then the least valuable job). Waiting jobs are served in order of value, each counted as
admitted on the pool it reclaimed or found room on, so two jobs do not count the same free GPUs.
The preempted jobs lose their progress and wait again, as any preempted job in the replay.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from horizon_opt.model.instance import Instance, IntArray
from horizon_opt.model.teams import quota_profile
from horizon_opt.solvers.reclaim import borrower_order


@dataclass(frozen=True)
class Holding:
    """A running job as the reclaim reads it."""

    pool: int
    start: int


def reclaim_victims(
    inst: Instance,
    running: Mapping[int, Holding],
    waiting: Iterable[int],
    free: IntArray,
    t: int,
) -> list[int]:
    """The running jobs to preempt at `t` so that the `waiting` jobs (ready to start) get their
    teams' quotas back; `free` holds the GPUs free per pool at `t`."""
    quota = quota_profile(inst.teams, len(inst.pools))
    if not quota.any():
        return []
    used = np.zeros_like(quota)
    for j, h in running.items():
        team = inst.jobs[j].team
        if team is not None:
            used[team, h.pool] += inst.jobs[j].gpus
    free = free.copy()
    held = dict(running)
    victims: list[int] = []
    for j in sorted(waiting, key=lambda k: (-inst.jobs[k].value, k)):
        job = inst.jobs[j]
        if job.team is None:
            continue
        for p, d in job.fastest_first:
            if t + d > inst.slots or used[job.team, p] + job.gpus > quota[job.team, p]:
                continue
            taken = _take_back(inst, held, used, quota, free, job.team, p, job.gpus)
            if taken is None:
                continue
            victims += taken
            free[p] -= job.gpus
            used[job.team, p] += job.gpus
            break
    return victims


def _take_back(
    inst: Instance,
    held: dict[int, Holding],
    used: IntArray,
    quota: IntArray,
    free: IntArray,
    team: int,
    pool: int,
    gpus: int,
) -> list[int] | None:
    """The borrowers to preempt on `pool` so that `gpus` are free for `team` (none when they
    already are); None when the other teams' borrowing could not free them."""
    above = np.maximum(used[:, pool] - quota[:, pool], 0)
    above[team] = 0
    if free[pool] + int(above.sum()) < gpus:
        return None
    taken: list[int] = []
    while free[pool] < gpus:
        borrowers = [
            k
            for k, h in held.items()
            if h.pool == pool
            and (other := inst.jobs[k].team) is not None
            and other != team
            and used[other, pool] > quota[other, pool]
        ]
        assert borrowers  # free + GPUs above quotas >= gpus: someone still borrows here
        above = used[:, pool] - quota[:, pool]
        k = min(borrowers, key=lambda b: borrower_order(inst, b, held[b].start, above))
        other = inst.jobs[k].team
        assert other is not None
        del held[k]
        used[other, pool] -= inst.jobs[k].gpus
        free[pool] += inst.jobs[k].gpus
        taken.append(k)
    return taken
