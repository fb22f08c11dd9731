"""The relaxation's columns, runs (job, pool, start), and the rows they touch.

Every valid plan under FORMAT.md maps to a feasible point of the relaxation with the same pwo:

- A column `(j, p, s)` says "job j runs on pool p over slots s .. s+d-1" (d: its duration there).
  Only runs that some valid plan could contain are columns: `s >= earliest start` (release,
  pushed past what predecessors need at least), `s + d <= S`, and the job fits ALONE at every
  slot of the run: its GPUs fit the pool's free GPUs after the required inference replicas
  (`pool_free_gpus`). Leaving the other runs out is what makes the relaxation tighter than a
  count of GPU-slots: the LP can no longer run a 32-GPU gang at 27/32 through a slot where 27
  GPUs are free. (Whole nodes need no separate filter: `n * G <= up * G - inference` already
  gives `n <= up - ceil(inference / G)`. Nor does replica granularity: the free GPUs are a
  multiple of every replica size's gcd, as every size divides G.)
- A column earns the job's value when it ends by the deadline (plus the stability bonus of a
  re-plan when it is the job's promised run: the relaxation then bounds pwo + bonuses, which
  also bounds pwo). Late columns (value 0) exist only
  for jobs that other jobs run after: those may have to run late so that a successor can run.
- Rows, per pool and slot: the GPUs of the running columns fit the free GPUs, and their whole
  nodes fit the nodes that inference can leave free. Per team and pool with a limit, and slot:
  the GPUs of the team's running columns fit its limit (`limits.py`; quotas are left out). Per
  job: at most one column. Per
  dependency (a after b) and for some times t, always including a's latest start: the runs of a
  that start by t add up to at most the runs of b that end by t (a starts after b ends).

Inference replicas get no node layout: the pool-level rows hold for every layout.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from horizon_opt.model.instance import FloatArray, Instance, IntArray, topological_order
from horizon_opt.relaxation.limits import TeamLimits, team_limits


@dataclass(frozen=True)
class Columns:
    """Every run (job, pool, start) a valid plan could contain; a job's columns are contiguous."""

    job: IntArray
    pool: IntArray
    start: IntArray
    dur: IntArray
    gpus: FloatArray
    nodes: FloatArray  # whole nodes the gang takes (0 for a job on part of one node)
    value: FloatArray  # the job's value when this run ends on time, else 0
    job_first: IntArray  # [J + 1]: the columns of job j are job_first[j] : job_first[j + 1]
    free: FloatArray  # [P, S] GPUs left to batch work after the required inference
    whole: FloatArray  # [P, S] nodes that inference can leave entirely free
    pairs: list[tuple[int, int]]  # (successor, predecessor) of every dependency
    deps: Dependencies  # its rows
    limits: TeamLimits  # the team limits' rows (`limits.py`)

    @property
    def jobs(self) -> int:
        return len(self.job_first) - 1


@dataclass(frozen=True)
class Dependencies:
    """Rows "successor runs started by t <= predecessor runs ended by t", in step form.

    Dependency r checks times t_0 < ... < t_m (its successor's possible starts, thinned when
    there are too many; the last is always the latest start, so a successor never runs without
    its predecessor). Its rows are `first[r] + i`. Row i reads z_i - z_{i-1} - (successor
    columns starting in (t_{i-1}, t_i]) + (predecessor columns ending in (t_{i-1}, t_i]) = 0 with
    z_i <= 0: z_i is the plain row's left-hand side. `col`, `row`, `sign` list the entries
    (-1 for a successor's start, +1 for a predecessor's end); `by_col` indexes them by column.
    """

    first: IntArray  # [R + 1]
    col: IntArray
    row: IntArray
    sign: FloatArray
    by_col: IntArray  # [K + 1]: entries of column k (in the order of `order`)
    order: IntArray  # entry indices sorted by column

    @property
    def rows(self) -> int:
        return int(self.first[-1])


def pool_free_gpus(instance: Instance) -> FloatArray:
    """[P, S] GPUs left to batch work in each pool once every service has req[v][t] replicas."""
    free = np.zeros((len(instance.pools), instance.slots))
    for pool in instance.pools:
        free[pool.index] = instance.capacity[pool.node_range.start : pool.node_range.stop].sum(
            axis=0
        )
    for s in instance.services:
        free[s.pool] -= s.req * s.gpus_per_replica
    return free


def whole_free_nodes(instance: Instance) -> FloatArray:
    """[P, S] nodes that inference can leave entirely free: whole nodes - ceil(inference GPUs
    that the GPUs left on partly held nodes cannot take / G)."""
    P, S = len(instance.pools), instance.slots
    inference = np.zeros((P, S))
    for sv in instance.services:
        inference[sv.pool] += sv.req * sv.gpus_per_replica
    out = np.zeros((P, S))
    for pool in instance.pools:
        rows = slice(pool.node_range.start, pool.node_range.stop)
        whole = instance.whole[rows]
        spare = np.where(whole, 0, instance.capacity[rows]).sum(axis=0)
        G = pool.gpus_per_node
        rest = np.maximum(inference[pool.index] - spare, 0)
        out[pool.index] = np.maximum(whole.sum(axis=0) - np.ceil(rest / G - 1e-9), 0)
    return out


def build_columns(instance: Instance) -> Columns:
    """Every run that fits alone, with one dependency row per dependency."""
    windows = instance.windows
    free = np.asarray(pool_free_gpus(instance), dtype=np.float64)
    whole = whole_free_nodes(instance)
    runs: list[list[tuple[int, IntArray, int, int, int]]] = []  # (pool, starts, d, gpus, nodes)
    for job in instance.jobs:
        runs.append([])
        window = windows[job.index]
        for p, d in job.durations.items():
            starts = window.allowed(d, window.ready, window.useful_end).array()
            if not len(starts):
                continue
            gang = job.gangs[p]
            n = gang.nodes if gang.whole else 0
            blocked = np.r_[0, np.cumsum(free[p] < job.gpus)]
            starts = starts[blocked[starts + d] == blocked[starts]]
            if len(starts):
                runs[job.index].append((p, starts, d, job.gpus, n))
    # A job that can never run makes every job that runs after it impossible too.
    for j in topological_order(instance):
        if any(not runs[p] for p in instance.jobs[j].after):
            runs[j] = []
    pairs = [(job.index, p) for job in instance.jobs if runs[job.index] for p in job.after]
    parts = [(j, *run) for j in range(len(runs)) for run in runs[j]]
    sizes = np.array([len(part[2]) for part in parts], dtype=np.int64)

    def per_column(values: list[int]) -> IntArray:
        return np.repeat(np.asarray(values, dtype=np.int64), sizes)

    job_of = per_column([part[0] for part in parts])
    start = np.concatenate([part[2] for part in parts]) if parts else np.zeros(0, np.int64)
    dur = per_column([part[3] for part in parts])
    latest_end = np.array([w.latest_end for w in windows], dtype=np.int64)
    job_value = np.array([job.value for job in instance.jobs], dtype=np.float64)
    on_time = start + dur <= latest_end[job_of]
    pool_of = per_column([part[1] for part in parts])
    counts = np.bincount(job_of, minlength=len(instance.jobs))
    job_first = np.r_[0, np.cumsum(counts)].astype(np.int64)
    bonus = np.zeros(len(job_of))  # a re-plan's stability bonus, on the promised run only
    for job in instance.jobs:
        if job.promise is not None:
            mine = np.arange(job_first[job.index], job_first[job.index + 1])
            if job.promise.by:
                latest = [job.promise.latest(p) for p in pool_of[mine].tolist()]
                hit = mine[start[mine] <= np.array(latest, dtype=np.int64)]
            else:
                exact = (pool_of[mine] == job.promise.pool) & (start[mine] == job.promise.start)
                hit = mine[exact]
            bonus[hit] = job.promise.bonus
    return Columns(
        job=job_of,
        pool=pool_of,
        start=start.astype(np.int64),
        dur=dur,
        gpus=per_column([part[4] for part in parts]).astype(np.float64),
        nodes=per_column([part[5] for part in parts]).astype(np.float64),
        value=np.where(on_time, job_value[job_of] + bonus, 0.0),
        job_first=job_first,
        free=free,
        whole=whole,
        pairs=pairs,
        deps=dependencies(pairs, job_first, start, start + dur, 1),
        limits=team_limits(instance, job_of, pool_of),
    )


def with_dependency_rows(cols: Columns, per_dep: int) -> Columns:
    """The same columns with up to `per_dep` rows per dependency."""
    deps = dependencies(cols.pairs, cols.job_first, cols.start, cols.start + cols.dur, per_dep)
    return replace(cols, deps=deps)


def dependencies(
    pairs: list[tuple[int, int]],
    job_first: IntArray,
    start: IntArray,
    end: IntArray,
    per_dep: int,
) -> Dependencies:
    """Rows at up to `per_dep` of the successor's start times (always its latest)."""
    first = [0]
    cols: list[IntArray] = []
    rows: list[IntArray] = []
    signs: list[FloatArray] = []
    for succ, pred in pairs:
        mine = np.arange(job_first[succ], job_first[succ + 1])
        times = np.unique(start[mine])
        if len(times) > per_dep:  # any subset of the rows is still a relaxation
            keep = np.linspace(len(times) - 1, 0, per_dep).round().astype(int)
            times = times[np.unique(keep)]
        theirs = np.arange(job_first[pred], job_first[pred + 1])
        theirs = theirs[end[theirs] <= times[-1]]  # later ends never precede a start
        cols += [mine, theirs]
        rows += [
            first[-1] + np.searchsorted(times, start[mine]),
            first[-1] + np.searchsorted(times, end[theirs]),
        ]
        signs += [np.full(len(mine), -1.0), np.full(len(theirs), 1.0)]
        first.append(first[-1] + len(times))
    col = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
    order = np.argsort(col, kind="stable")
    return Dependencies(
        first=np.array(first, dtype=np.int64),
        col=col.astype(np.int64),
        row=(np.concatenate(rows) if rows else col).astype(np.int64),
        sign=np.concatenate(signs) if signs else np.zeros(0),
        by_col=np.searchsorted(col[order], np.arange(len(start) + 1)).astype(np.int64),
        order=order.astype(np.int64),
    )
