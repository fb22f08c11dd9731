"""The policy most clusters run: a Slurm-style online backfill, as a baseline for the optimizer.

What it models, slot by slot over the horizon, knowing at each slot only the jobs released so
far (nothing of the future, unlike the planners):

- priority: waiting jobs in order of priority (it dominates), then age (earlier release first),
  then file order, as Slurm's multifactor priority does when the job priority weight dominates;
- dependencies: a job waits until every job it runs after has ended (`afterok`);
- backfill, conservative: every waiting job, in that order, gets a reservation at the earliest
  start where it fits next to the running jobs and the reservations before it; a job starts now
  only when its reservation is now, so a lower-priority job starts early only when it delays no
  higher-priority one. At most `MAX_JOB_TEST` waiting jobs are planned per pass (Slurm's
  `bf_max_job_test`), the rest wait for the next pass;
- gangs on the placement rule (one node, or whole nodes), first-fit nodes, fastest pool first on
  a tie;
- a job that can no longer end by its deadline is not started (it would earn nothing);
- inference: the static peak reservation (`backfill-static`) or the forecast per slot
  (`backfill`), laid out as fifo and greedy lay it out;
- `backfill-value` is the same backfill ordered as the plan objective values jobs, with no plan:
  by value density (pwo per GPU-hour held, which is the priority on a job's fastest pool), then
  the earliest deadline, then the least work, so that among equals the job most likely to end
  on time, and soonest, goes first. If the optimizer's gain were only its ordering, this peer
  would match it.

- teams: their limits hold as for every solver (account limits, `GrpTRES`); with quotas, a
  fair-share factor scales each job's priority, as Slurm's classic `2^(-U/S)`: `U` is its team's
  part of the GPU-hours the teams' jobs have run so far, `S` its part of the quotas (a team
  without a quota: `S` = 0, so any usage puts it last; a job without a team: factor 1).

What it simplifies: run times are the jobs' durations (users' estimates, exact here), a pass
runs at every slot where something changed (a release, an end, inference giving GPUs back)
rather than on a timer, usage does not decay, and there is no QOS, partition limit or
preemption.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable

import numpy as np

from horizon_opt.model.instance import Instance, IntArray, Job
from horizon_opt.plans.inference import Layout, elastic_layout, static_peak_layout
from horizon_opt.plans.plan import Plan
from horizon_opt.solvers.assemble import Placement, build_plan
from horizon_opt.solvers.diagnosis import unscheduled_causes
from horizon_opt.solvers.grid import CapacityGrid, earliest_start
from horizon_opt.solvers.options import SolveOptions

MAX_JOB_TEST = 500  # waiting jobs planned per pass, as Slurm's bf_max_job_test default


def _pass_slots(instance: Instance, layout: Layout) -> list[int]:
    """Slots where a pass can start something new, as a heap: a release or the first start
    after a blackout (the first start of each interval of a job's start domains), or inference
    giving GPUs back (the ends of jobs join as they start)."""
    grows = np.flatnonzero((np.diff(layout.free, axis=1) > 0).any(axis=0)) + 1
    firsts = {lo for w in instance.windows for p in w.durations for lo, _ in w.starts(p).intervals}
    return sorted({0, *(w.earliest for w in instance.windows), *firsts, *grows.tolist()})


def _age_order(job: Job) -> tuple[float, ...]:
    return (-job.priority, job.release, job.index)


def _value_order(job: Job) -> tuple[float, ...]:
    deadline = math.inf if job.deadline is None else job.deadline
    return (-job.priority, deadline, job.work_hours, job.release, job.index)


def fair_share(instance: Instance, placements: dict[int, Placement], t: int) -> dict[int, float]:
    """Each team's factor `2^(-U/S)` at slot t (see the module); {} without quotas."""
    quotas = np.array([sum(team.quota.values()) for team in instance.teams], dtype=float)
    if not quotas.sum():
        return {}
    used = np.zeros(len(instance.teams))
    for p in placements.values():
        team = instance.jobs[p.job].team
        if team is not None:
            used[team] += instance.jobs[p.job].gpus * max(0, min(p.end(instance), t) - p.start)
    usage = used / used.sum() if used.sum() else used
    shares = quotas / quotas.sum()
    return {
        k: 2.0 ** (-usage[k] / shares[k]) if shares[k] else float(usage[k] == 0)
        for k in range(len(instance.teams))
    }


def _pass_order(
    instance: Instance,
    order: dict[int, tuple[float, ...]],
    placements: dict[int, Placement],
    t: int,
) -> Callable[[int], tuple[float, ...]]:
    """The sort key of a pass at slot t: `order`, its priority scaled by the fair-share factor
    of the job's team."""
    factors = fair_share(instance, placements, t)
    if not factors:
        return order.__getitem__

    def key(j: int) -> tuple[float, ...]:
        team = instance.jobs[j].team
        first, *rest = order[j]
        return (first * (1.0 if team is None else factors[team]), *rest)

    return key


def solve(
    instance: Instance,
    options: SolveOptions | None = None,
    *,
    static: bool = False,
    by_value: bool = False,
) -> Plan:
    started = time.perf_counter()
    layout = static_peak_layout(instance) if static else elastic_layout(instance)
    free: IntArray = layout.free.astype(np.int64).copy()  # [N, S] left by the started jobs
    S, windows = instance.slots, instance.windows
    rank = _value_order if by_value else _age_order
    order = {j.index: rank(j) for j in instance.jobs}
    placements: dict[int, Placement] = {}
    given_up: set[int] = set()
    passes = _pass_slots(instance, layout)  # a heap: the ends of started jobs join it
    done = -1  # the last slot passed
    while passes and (t := heapq.heappop(passes)) < S:
        if t == done:
            continue
        done = t
        waiting = sorted(
            (
                j.index
                for j in instance.jobs
                if j.index not in placements
                and j.index not in given_up
                and windows[j.index].earliest <= t
                and all(q in placements and placements[q].end(instance) <= t for q in j.after)
            ),
            key=_pass_order(instance, order, placements, t),
        )
        grid = CapacityGrid(instance, free)  # running jobs taken; reservations on this copy
        for p in placements.values():
            grid.hold(instance.jobs[p.job], p.pool, p.start, p.end(instance))
        for j in waiting[:MAX_JOB_TEST]:
            job, window = instance.jobs[j], windows[j]
            if not window.in_time_from(t):
                given_up.add(j)  # it can no longer end in time, on any pool
                continue
            fit = earliest_start(grid, job, t, window.horizon)
            if fit is None:
                continue  # no room as things stand: no reservation, wait for a later pass
            gang, d = job.gangs[fit.pool], job.durations[fit.pool]
            if not window.on_time(fit.start + d):
                continue  # it would end late as things stand: likewise
            grid.occupy(fit, gang, d, job.team)
            if fit.start == t:  # its reservation is now: it starts
                free[list(fit.nodes), t : t + d] -= gang.gpus_per_node
                placements[j] = Placement(j, fit.pool, t, fit.nodes)
                heapq.heappush(passes, t + d)
    name = "backfill-static" if static else "backfill-value" if by_value else "backfill"
    chosen = list(placements.values())
    reasons = unscheduled_causes(instance, chosen, layout)
    return build_plan(instance, name, chosen, layout, reasons, started=started)
