"""A tight proven bound on pwo from a pool-level time-indexed relaxation.

The relaxation; every valid plan under FORMAT.md maps to a feasible point of it with the same pwo:

- A column `(j, p, s)` says "job j runs on pool p over slots s .. s+d-1" (d: its duration there).
  Only runs that some valid plan could contain are columns: `s >= earliest start` (release,
  pushed past what predecessors need at least), `s + d <= S`, and the job fits ALONE at every
  slot of the run: its GPUs fit the pool's free GPUs after the required inference replicas
  (`pool_free_gpus`). Leaving the others out is what closes most of the energy LP's gap: the LP
  can no longer run a 32-GPU gang at 27/32 through a slot where 27 GPUs are free. (Whole nodes
  need no separate filter: `n * G <= up * G - inference` already gives
  `n <= up - ceil(inference / G)`. Nor does replica granularity: the free GPUs are a multiple
  of every replica size's gcd, as every size divides G.)
- A column earns the job's value when it ends by the deadline. Late columns (value 0) exist only
  for jobs that other jobs run after: those may have to run late so that a successor can run.
- Rows, per pool and slot: the GPUs of the running columns fit the free GPUs, and their whole
  nodes fit the nodes that inference can leave free. Per job: at most one column. Per
  dependency (a after b) and for some times t, always including a's latest start: the runs of a
  that start by t add up to at most the runs of b that end by t (a starts after b ends).

Inference replicas get no node layout: the pool-level rows hold for every layout.

LP, by column generation. The columns are implicit (millions on xl) and priced in bulk with
prefix sums; the restricted master is a small step-form LP in HiGHS, warm-started. Every dual
vector `y >= 0` of the capacity, whole-node and dependency rows certifies a bound by weak duality,
computed exactly over ALL columns:

    L(y) = free.y + whole.yw + sum_j max(0, max_k rc_k),   rc_k = value_k - a_k.y,

so solver tolerances or a column generation stopped early can only make it looser, never wrong.
A first LP has one row per dependency; when it converges, a second with a few times per
dependency starts from its columns (slower, on the generated instances 0.1-0.3% lower).

MIP. When the model is small and time is left, HiGHS's branch-and-cut on the same model (all
columns, binary) can prove a little more. Its dual bound is not certified, so it is padded by a
relative `MIP_MARGIN` (5e-7, above HiGHS's 1e-7 primal and dual feasibility tolerances, below
the cpsat solver's 1e-6 optimality test), and HiGHS is kept from rounding it to the objective's
granularity (see `explicit_model`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import highspy
import numpy as np
import numpy.typing as npt

from horizon_opt.instance import Instance, topological_order
from horizon_opt.solvers.cpsat.bound import (
    Bound,
    _quiet_stdout,
    earliest_starts,
    pool_free_gpus,
)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

MIP_MARGIN = 5e-7  # relative padding on HiGHS's (uncertified) MIP dual bound
MIP_MAX_COLUMNS = 50_000  # the MIP is tried only on models this small...
MIP_MAX_NONZEROS = 1_000_000  # ...with at most this many matrix entries (HiGHS's memory)...
MIP_SECONDS_PER_ENTRY = 4e-5  # ...and when the time left covers HiGHS's presolve and root LP
MIP_MAX_SECONDS = 60.0  # beyond this it gains little, and its search tree keeps growing
FLOAT_SLACK = 1e-9  # relative padding of the certificate's floating-point sum
DEP_ROWS_MAX = 2_000  # dependency rows in all, at least DEP_ROWS_MIN per dependency, in the
DEP_ROWS_MIN = 4  # second LP (the first has one per dependency): more rows make a slower LP
INITIAL_RUNS = 3  # per job and pool in the first master (more: slower re-solves; fewer: more)


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


@dataclass
class Duals:
    y: FloatArray  # [P, S] >= 0, GPU rows
    yw: FloatArray  # [P, S] >= 0, whole-node rows
    eta: FloatArray  # [dependency rows] >= 0


def whole_free_nodes(instance: Instance) -> FloatArray:
    """[P, S] nodes that inference can leave entirely free: up - ceil(inference GPUs / G)."""
    P, S = len(instance.pools), instance.slots
    inference = np.zeros((P, S))
    for sv in instance.services:
        inference[sv.pool] += sv.req * sv.gpus_per_replica
    out = np.zeros((P, S))
    for pool in instance.pools:
        up = instance.up[pool.node_range.start : pool.node_range.stop].sum(axis=0)
        G = pool.gpus_per_node
        out[pool.index] = np.maximum(up - np.ceil(inference[pool.index] / G - 1e-9), 0)
    return out


def build_columns(instance: Instance) -> Columns:
    S = instance.slots
    est = earliest_starts(instance)
    free = np.asarray(pool_free_gpus(instance), dtype=np.float64)
    whole = whole_free_nodes(instance)
    has_successor = [False] * len(instance.jobs)
    for job in instance.jobs:
        for p in job.after:
            has_successor[p] = True
    runs: list[list[tuple[int, IntArray, int, int, int]]] = []  # (pool, starts, d, gpus, nodes)
    for job in instance.jobs:
        runs.append([])
        last_end = S if has_successor[job.index] else job.latest_end(S)
        for p, d in job.durations.items():
            starts = np.arange(est[job.index], last_end - d + 1, dtype=np.int64)
            if not len(starts):
                continue
            G = instance.pools[p].gpus_per_node
            n = job.gpus // G if job.gpus >= G else 0
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
    latest_end = np.array([job.latest_end(S) for job in instance.jobs], dtype=np.int64)
    job_value = np.array([job.value for job in instance.jobs], dtype=np.float64)
    on_time = start + dur <= latest_end[job_of]
    counts = np.bincount(job_of, minlength=len(instance.jobs))
    job_first = np.r_[0, np.cumsum(counts)].astype(np.int64)
    return Columns(
        job=job_of,
        pool=per_column([part[1] for part in parts]),
        start=start.astype(np.int64),
        dur=dur,
        gpus=per_column([part[4] for part in parts]).astype(np.float64),
        nodes=per_column([part[5] for part in parts]).astype(np.float64),
        value=np.where(on_time, job_value[job_of], 0.0),
        job_first=job_first,
        free=free,
        whole=whole,
        pairs=pairs,
        deps=dependencies(pairs, job_first, start, start + dur, 1),
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


# -- the certificate ------------------------------------------------------------------------------


def reduced_costs(cols: Columns, duals: Duals) -> FloatArray:
    """rc_k = value_k - a_k.y for every column, without the job rows."""
    P = cols.free.shape[0]
    Y = np.concatenate([np.zeros((P, 1)), np.cumsum(duals.y, axis=1)], axis=1)
    W = np.concatenate([np.zeros((P, 1)), np.cumsum(duals.yw, axis=1)], axis=1)
    end = cols.start + cols.dur
    rc: FloatArray = (
        cols.value
        - cols.gpus * (Y[cols.pool, end] - Y[cols.pool, cols.start])
        - cols.nodes * (W[cols.pool, end] - W[cols.pool, cols.start])
    )
    deps = cols.deps
    if deps.rows:
        # a plain row i of dependency r holds a successor column starting at s for every
        # t_i >= s, so its dual weighs in as the sum of eta over rows i.. of the chain
        suffix = np.r_[np.cumsum(duals.eta[::-1])[::-1], 0.0]
        chain_end = np.repeat(deps.first[1:], np.diff(deps.first))
        tail = suffix[: deps.rows] - suffix[chain_end]
        rc += np.bincount(deps.col, weights=deps.sign * tail[deps.row], minlength=len(rc))
    return rc


def best_per_job(cols: Columns, rc: FloatArray) -> FloatArray:
    """max(0, max_k rc_k) per job: the best it can add (0: it does not run)."""
    best = np.zeros(cols.jobs)
    has = np.diff(cols.job_first) > 0
    if has.any():
        best[has] = np.maximum(np.maximum.reduceat(rc, cols.job_first[:-1][has]), 0.0)
    return best


def lagrangian(cols: Columns, duals: Duals) -> tuple[float, FloatArray]:
    """The weak-duality bound L(duals) over every column, and the columns' reduced costs.

    For any plan's point x: value.x = sum_k rc_k x_k + y.(A x) <= sum_j max(0, max rc_j) + y.b,
    since each job uses at most one column, A x <= b and y >= 0.
    """
    assert duals.y.min(initial=0.0) >= 0 and duals.yw.min(initial=0.0) >= 0
    assert duals.eta.min(initial=0.0) >= 0
    rc = reduced_costs(cols, duals)
    terms = np.concatenate(
        [(cols.free * duals.y).ravel(), (cols.whole * duals.yw).ravel(), best_per_job(cols, rc)]
    )
    value = float(np.sum(terms)) + FLOAT_SLACK * float(np.sum(np.abs(terms))) + 1e-9
    return value, rc


# -- the LP by column generation ------------------------------------------------------------------


def _highs() -> highspy.Highs:
    with _quiet_stdout():  # highspy prints a banner to fd 1 when constructed
        h = highspy.Highs()  # type: ignore[no-untyped-call]
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    return h


def _i32(a: npt.ArrayLike) -> npt.NDArray[np.int32]:
    return np.asarray(a, dtype=np.int32)


def _chains(first: IntArray) -> tuple[IntArray, IntArray, FloatArray]:
    """Step-form usage variables of chains of rows first[c] : first[c + 1], as CSC columns.

    Variable i of a chain has +1 in row i and -1 in row i + 1 (when in the chain), so it
    equals the running sum of what the columns put in rows up to i.
    """
    n = int(first[-1])
    last = np.zeros(n, dtype=bool)
    last[first[1:] - 1] = True
    counts = np.where(last, 1, 2)
    starts = (np.cumsum(counts) - counts).astype(np.int64)
    index = np.empty(int(counts.sum()), dtype=np.int64)
    value = np.empty(len(index))
    i = np.arange(n)
    index[starts], value[starts] = i, 1.0
    index[starts[~last] + 1], value[starts[~last] + 1] = i[~last] + 1, -1.0
    return starts, index, value


def _chain_duals(pi: FloatArray, first: IntArray) -> FloatArray:
    """The plain rows' duals from the step rows' duals: pi[i+1] - pi[i] in a chain, pi[end] = 0."""
    nxt = np.r_[pi[1:], 0.0]
    nxt[first[1:] - 1] = 0.0
    step: FloatArray = np.maximum(nxt - pi, 0.0)
    return step


class Master:
    """The restricted master LP, in step form so that a column has few entries.

    u[p,t] <= free[p,t] is the GPUs in use on pool p at slot t, defined by the equality rows
    D[p,t]: u[p,t] - u[p,t-1] - (GPUs of columns starting at t) + (GPUs of those ending at t) = 0;
    the same for whole nodes, and z <= 0 for the dependency rows (see `Dependencies`). The plain
    model's row duals are y[p,t] = pi[p,t+1] - pi[p,t] (pi[p,S] = 0). The usage variables have no
    lower bound (usage is never negative anyway), which keeps those duals non-negative.
    """

    def __init__(self, cols: Columns) -> None:
        self.cols = cols
        P, S = cols.free.shape
        self.P, self.S, self.nD = P, S, P * S
        nD, J, deps = self.nD, cols.jobs, cols.deps
        self.first = np.r_[np.arange(0, 2 * nD, S), 2 * nD + deps.first].astype(np.int64)
        n_chain = int(self.first[-1])
        self.row_job = n_chain
        self.h = _highs()
        n_rows = n_chain + J
        lower = np.r_[np.zeros(n_chain), np.full(J, -highspy.kHighsInf)]
        upper = np.r_[np.zeros(n_chain), np.ones(J)]
        self.h.addRows(n_rows, lower, upper, 0, _i32(np.zeros(n_rows)), _i32([]), np.zeros(0))
        starts, index, value = _chains(self.first)
        ub = np.r_[np.maximum(cols.free.ravel(), 0.0), np.maximum(cols.whole.ravel(), 0.0)]
        ub = np.r_[ub, np.zeros(deps.rows)]
        lb = np.full(n_chain, -highspy.kHighsInf)
        self.h.addCols(
            n_chain, np.zeros(n_chain), lb, ub, len(index), _i32(starts), _i32(index), value
        )
        self.h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        self.fixed = n_chain  # HiGHS columns before the job columns
        self.in_master = np.zeros(len(cols.job), dtype=bool)
        self.members: list[IntArray] = []

    @property
    def columns(self) -> IntArray:
        return np.concatenate(self.members) if self.members else np.zeros(0, dtype=np.int64)

    def add(self, ks: IntArray) -> None:
        ks = np.unique(ks[~self.in_master[ks]])
        if not len(ks):
            return
        c, S, nD, m, deps = self.cols, self.S, self.nD, len(ks), self.cols.deps
        s, e, g, n = c.start[ks], c.start[ks] + c.dur[ks], c.gpus[ks], c.nodes[ks]
        base = c.pool[ks] * S
        inside, whole, every = e < S, n > 0, np.ones(m, dtype=bool)
        end_row = base + np.minimum(e, S - 1)
        entries: list[tuple[IntArray, FloatArray, IntArray]] = [
            (base + s, -g, np.flatnonzero(every)),
            (end_row, g, np.flatnonzero(inside)),
            (nD + base + s, -n, np.flatnonzero(whole)),
            (nD + end_row, n, np.flatnonzero(whole & inside)),
            (self.row_job + c.job[ks], np.ones(m), np.flatnonzero(every)),
        ]
        rows = [r[i] for r, _, i in entries]
        vals = [v[i] for _, v, i in entries]
        owner = [i for _, _, i in entries]
        counts = deps.by_col[ks + 1] - deps.by_col[ks]
        if counts.any():
            k = np.repeat(np.arange(m), counts)
            offset = np.arange(len(k)) - np.repeat(np.cumsum(counts) - counts, counts)
            entry = deps.order[deps.by_col[ks][k] + offset]
            rows.append(2 * nD + deps.row[entry])
            vals.append(deps.sign[entry])
            owner.append(k)
        R, V, K = np.concatenate(rows), np.concatenate(vals), np.concatenate(owner)
        order = np.lexsort((R, K))
        R, V, K = R[order], V[order], K[order]
        starts = np.searchsorted(K, np.arange(m))
        self.h.addCols(m, c.value[ks], np.zeros(m), np.ones(m), len(R), _i32(starts), _i32(R), V)
        self.in_master[ks] = True
        self.members.append(ks)

    def solve(self, seconds: float) -> tuple[float, Duals, bool] | None:
        """Objective, duals, and whether the master LP was solved to optimality."""
        # HiGHS's time limit counts from the object's creation, across runs
        self.h.setOptionValue("time_limit", self.h.getRunTime() + max(0.01, seconds))
        self.h.run()
        optimal = self.h.getModelStatus() == highspy.HighsModelStatus.kOptimal
        pi = np.asarray(self.h.getSolution().row_dual, dtype=np.float64)
        if len(pi) != self.h.getNumRow() or not np.all(np.isfinite(pi)):
            return None
        plain = _chain_duals(pi[: self.row_job], self.first)
        P, S, nD = self.P, self.S, self.nD
        duals = Duals(
            y=plain[:nD].reshape(P, S), yw=plain[nD : 2 * nD].reshape(P, S), eta=plain[2 * nD :]
        )
        return float(self.h.getInfo().objective_function_value), duals, optimal

    def primal(self) -> FloatArray:
        """The last solve's values of the job columns, in the order of `columns`."""
        x = np.asarray(self.h.getSolution().col_value, dtype=np.float64)[self.fixed :]
        return np.clip(x, 0.0, 1.0)


@dataclass
class LpResult:
    bound: float
    converged: bool = False
    iterations: int = 0
    columns: IntArray | None = None  # the master's columns at the end
    x: FloatArray | None = None  # the master's primal values of `columns` (its last solve)


def _attractive(cols: Columns, rc: FloatArray, members: IntArray, tol: float) -> IntArray:
    """Per job, its best column, when that beats every master column of the job.

    (One column per job rather than per (job, pool): fewer pivots per master re-solve; on xl
    this converges about twice as fast.)
    """
    mu = np.zeros(cols.jobs)
    np.maximum.at(mu, cols.job[members], rc[members])
    gain = rc - mu[cols.job]
    cand = np.flatnonzero(gain > tol)
    job = cols.job[cand]
    order = np.lexsort((-gain[cand], job))
    job = job[order]
    return cand[order][np.r_[True, job[1:] != job[:-1]]] if len(cand) else cand


def spread_runs(cols: Columns, per_pool: int) -> IntArray:
    """Up to `per_pool` on-time runs of each job on each pool, spread from earliest to latest."""
    on_time = np.flatnonzero(cols.value > 0)
    if not len(on_time):
        return on_time
    key = cols.job[on_time] * (cols.free.shape[0] + 1) + cols.pool[on_time]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    count = np.diff(np.r_[first, len(key)])
    picks = first[:, None] + np.round(
        np.linspace(0.0, 1.0, per_pool)[None, :] * (count[:, None] - 1)
    ).astype(np.int64)
    return np.unique(on_time[picks.ravel()])


def column_generation(
    cols: Columns,
    deadline: float,
    log: Callable[[str], None] | None = None,
    initial: IntArray | None = None,
) -> LpResult:
    """The LP's certified bound, by column generation until converged or `deadline`.

    The master starts with `initial`, or with each job's earliest, middle and latest on-time
    run on each pool (on xl this converges in about 40 s; from the earliest runs alone, in 110).
    """
    result = LpResult(float(np.sum(best_per_job(cols, cols.value))))  # every job on time
    if not len(cols.job):
        result.converged = True
        return result
    master = Master(cols)
    master.add(spread_runs(cols, INITIAL_RUNS) if initial is None else initial)
    started = time.perf_counter()
    while time.perf_counter() < deadline:
        result.iterations += 1
        solved = master.solve(deadline - time.perf_counter())
        if solved is None:
            break
        objective, duals, optimal = solved
        result.columns = master.columns
        result.x = master.primal()
        bound, rc = lagrangian(cols, duals)
        result.bound = min(result.bound, bound)
        if log is not None:
            log(
                f"time-indexed LP ({cols.deps.rows} dependency rows): iteration "
                f"{result.iterations}, {time.perf_counter() - started:.2f}s, master "
                f"{objective:.3f}, bound {result.bound:.3f}, {int(master.in_master.sum())} columns"
            )
        new = _attractive(cols, rc, master.columns, 1e-7 * max(1.0, abs(objective)))
        if not len(new):
            result.converged = optimal
            break
        master.add(new)
    return result


# -- the MIP --------------------------------------------------------------------------------------


def explicit_model(cols: Columns) -> highspy.HighsLp:
    """The relaxation with every column binary, plain capacity rows, step-form dependencies."""
    P, S = cols.free.shape
    J, K, deps = cols.jobs, len(cols.job), cols.deps
    whole_pools = np.unique(cols.pool[cols.nodes > 0])
    whole_row = np.full(P, -1, dtype=np.int64)
    whole_row[whole_pools] = P * S + np.arange(len(whole_pools)) * S
    row_job = P * S + len(whole_pools) * S
    row_dep = row_job + J
    n_rows = row_dep + deps.rows
    k = np.repeat(np.arange(K), cols.dur)  # one entry per column and slot of its run
    slot = cols.start[k] + np.arange(len(k)) - np.repeat(np.cumsum(cols.dur) - cols.dur, cols.dur)
    pool = cols.pool[k]
    w = cols.nodes[k] > 0
    z_starts, z_index, z_value = _chains(deps.first)
    z_owner = K + np.repeat(np.arange(deps.rows), np.diff(np.r_[z_starts, len(z_index)]))
    rows = [pool * S + slot, whole_row[pool[w]] + slot[w], row_job + cols.job]
    rows += [row_dep + deps.row, row_dep + z_index]
    vals = [cols.gpus[k], cols.nodes[k][w], np.ones(K), deps.sign, z_value]
    owner = [k, k[w], np.arange(K), deps.col, z_owner]
    R, V, C = np.concatenate(rows), np.concatenate(vals), np.concatenate(owner)
    order = np.lexsort((R, C))
    R, V, C = R[order], V[order], C[order]
    n = K + deps.rows
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = n_rows
    lp.sense_ = highspy.ObjSense.kMaximize
    # Costs raised by 1-2e-8 (relative and absolute), unevenly: no longer integral multiples of
    # one unit, so HiGHS does not round its dual bound down to that grid (a rounding that a
    # numerical error within its tolerances could push a whole unit too far). Raised costs only
    # raise the optimum, so the bound still holds for the real values.
    bump = 1e-8 * (1.0 + np.modf(np.arange(K) * 0.6180339887498949)[0])
    cost = np.where(cols.value > 0, cols.value * (1.0 + bump) + bump, 0.0)
    lp.col_cost_ = np.r_[cost, np.zeros(deps.rows)].astype(np.float64)
    lp.col_lower_ = np.r_[np.zeros(K), np.full(deps.rows, -highspy.kHighsInf)]
    lp.col_upper_ = np.r_[np.ones(K), np.zeros(deps.rows)]
    lp.row_lower_ = np.r_[np.full(row_dep, -highspy.kHighsInf), np.zeros(deps.rows)]
    lp.row_upper_ = np.r_[
        np.maximum(cols.free.ravel(), 0.0),
        np.maximum(cols.whole[whole_pools].ravel(), 0.0),
        np.ones(J),
        np.zeros(deps.rows),
    ]
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = _i32(np.searchsorted(C, np.arange(n + 1)))
    lp.a_matrix_.index_ = _i32(R)
    lp.a_matrix_.value_ = V.astype(np.float64)
    integer, continuous = highspy.HighsVarType.kInteger, highspy.HighsVarType.kContinuous
    lp.integrality_ = [integer] * K + [continuous] * deps.rows
    return lp


def mip_fits(cols: Columns) -> bool:
    return len(cols.job) <= MIP_MAX_COLUMNS and int(cols.dur.sum()) <= MIP_MAX_NONZEROS


def mip_dual_bound(cols: Columns, deadline: float) -> float | None:
    """HiGHS's MIP dual bound on the relaxation (padded), or None when it has none in time."""
    if not len(cols.job):
        return 0.0
    lp = explicit_model(cols)
    h = _highs()
    left = deadline - time.perf_counter()
    h.setOptionValue("time_limit", max(0.01, min(MIP_MAX_SECONDS, left - max(0.2, 0.03 * left))))
    h.setOptionValue("mip_rel_gap", 0.0)
    h.passModel(lp)
    status = h.run()
    dual = float(h.getInfo().mip_dual_bound)
    odd = status == highspy.HighsStatus.kError or not np.isfinite(dual) or dual < 0
    if odd or h.getModelStatus() == highspy.HighsModelStatus.kInfeasible:
        return None  # (x = 0 is always feasible: never trust an odd answer)
    return dual + MIP_MARGIN * max(1.0, abs(dual))


# -- entry point ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Relaxation:
    """The time-indexed LP of an instance, solved as far as its time allowed.

    `lp.x` (over `lp.columns`) is the master's last primal solution: the solver uses it to
    guide its search (`guide.py`); only `lp.bound` is a proven bound.
    """

    cols: Columns
    lp: LpResult
    seconds: float


def solve_lp(
    instance: Instance, deadline: float, log: Callable[[str], None] | None = None
) -> Relaxation:
    """The LP with one row per dependency (every successor run needs a predecessor run that ends
    by the successor's latest start), by column generation until converged or `deadline`."""
    started = time.perf_counter()
    cols = build_columns(instance)
    lp = column_generation(cols, deadline, log)
    if log is not None:
        log(
            f"time-indexed LP: bound {lp.bound:.3f}, {len(cols.job)} columns, {lp.iterations} "
            f"steps, {'converged' if lp.converged else 'stopped early'} "
            f"({time.perf_counter() - started:.2f}s)"
        )
    return Relaxation(cols, lp, time.perf_counter() - started)


def tighten(
    relaxation: Relaxation, deadline: float, log: Callable[[str], None] | None = None
) -> Bound:
    """The LP's bound, lowered with the time left before `deadline`:

    - when the LP stopped early: column generation resumes from its columns;
    - when it converged and the model is small enough for the MIP: first the LP with rows at
      more of each successor's start times, started from the first LP's columns (on the
      generated instances: 0.1-0.3% lower, slower), then HiGHS's MIP dual bound on it.
    When the LP converged on a model too large for the MIP, nothing is tried: the finer rows
    alone gained 0.02% on the generated large and xl instances, for a tenth of the time limit.
    Every step only lowers the bound; whatever step the deadline stops, the bound is valid.
    """
    started = time.perf_counter()
    cols, lp = relaxation.cols, relaxation.lp

    def say(line: str) -> None:
        if log is not None:
            log(f"{line} ({time.perf_counter() - started:.2f}s)")

    def result(value: float, method: str) -> Bound:
        seconds = relaxation.seconds + time.perf_counter() - started
        return Bound(value, cols.free.shape[1], seconds, method)

    if not lp.converged:
        more = column_generation(cols, deadline, log, lp.columns)
        say(f"time-indexed LP, resumed: bound {more.bound:.3f}")
        value = min(lp.bound, more.bound)
        return result(value, "time-indexed LP" + ("" if more.converged else " (stopped early)"))
    value, method = lp.bound, "time-indexed LP"
    if not mip_fits(cols):
        return result(value, method)
    if cols.pairs and deadline - started >= 0.5 * relaxation.seconds:
        # (from the first LP's columns the second takes about half as long: else skip it)
        per_dep = max(DEP_ROWS_MIN, DEP_ROWS_MAX // len(cols.pairs))
        finer = with_dependency_rows(cols, per_dep)
        if finer.deps.rows > cols.deps.rows:
            second = column_generation(finer, deadline, log, lp.columns)
            say(f"time-indexed LP, {finer.deps.rows} dependency rows: bound {second.bound:.3f}")
            value = min(value, second.bound)
            if second.converged:
                cols = finer
    enough = 0.05 + MIP_SECONDS_PER_ENTRY * float(cols.dur.sum())  # else no dual bound in time
    if deadline - time.perf_counter() >= enough:
        mip = mip_dual_bound(cols, deadline)
        say(f"time-indexed MIP: dual bound {mip}")
        if mip is not None and mip < value:
            value, method = mip, "time-indexed MIP"
    return result(value, method)


def time_indexed_bound(
    instance: Instance, time_limit: float, log: Callable[[str], None] | None = None
) -> Bound:
    """A proven upper bound on pwo for every valid plan, within about `time_limit` seconds:
    `solve_lp`, then `tighten` with the time left."""
    deadline = time.perf_counter() + max(0.0, time_limit)
    return tighten(solve_lp(instance, deadline, log), deadline, log)
