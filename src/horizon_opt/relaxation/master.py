"""The relaxation's LP, by column generation.

The columns are implicit (too many to list on large instances) and priced in bulk with prefix
sums (`certificate.reduced_costs`); the restricted master is a small step-form LP in HiGHS,
warm-started. After every master solve its duals certify a bound over all columns
(`certificate.lagrangian`), so the bound holds wherever the loop stops.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import highspy
import numpy as np

from horizon_opt.model.instance import FloatArray, IntArray
from horizon_opt.relaxation.certificate import Duals, best_per_job, lagrangian
from horizon_opt.relaxation.columns import Columns
from horizon_opt.relaxation.highs import as_int32, new_highs


def step_variables(first: IntArray) -> tuple[IntArray, IntArray, FloatArray]:
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


def _plain_duals(pi: FloatArray, first: IntArray) -> FloatArray:
    """The plain rows' duals from the step rows' duals: pi[i+1] - pi[i] in a chain, pi[end] = 0."""
    nxt = np.r_[pi[1:], 0.0]
    nxt[first[1:] - 1] = 0.0
    step: FloatArray = np.maximum(nxt - pi, 0.0)
    return step


class Master:
    """The restricted master LP, in step form so that a column has few entries.

    u[p,t] <= free[p,t] is the GPUs in use on pool p at slot t, defined by the equality rows
    D[p,t]: u[p,t] - u[p,t-1] - (GPUs of columns starting at t) + (GPUs of those ending at t) = 0;
    the same for whole nodes and for each team's GPUs on a pool it has a limit on (`limits.py`),
    and z <= 0 for the dependency rows (see `Dependencies`). The plain
    model's row duals are y[p,t] = pi[p,t+1] - pi[p,t] (pi[p,S] = 0). The usage variables have no
    lower bound (usage is never negative anyway), which keeps those duals non-negative.
    """

    def __init__(self, cols: Columns) -> None:
        self.cols = cols
        P, S = cols.free.shape
        self.P, self.S, self.nD = P, S, P * S
        nD, J, deps, limits = self.nD, cols.jobs, cols.deps, cols.limits
        self.row_limit = 2 * nD + deps.rows
        team_ends = self.row_limit + S * np.arange(1, limits.chains + 1)
        self.first = np.r_[np.arange(0, 2 * nD, S), 2 * nD + deps.first, team_ends]
        self.first = self.first.astype(np.int64)
        n_chain = int(self.first[-1])
        self.row_job = n_chain
        self.h = new_highs()
        n_rows = n_chain + J
        lower = np.r_[np.zeros(n_chain), np.full(J, -highspy.kHighsInf)]
        upper = np.r_[np.zeros(n_chain), np.ones(J)]
        self.h.addRows(
            n_rows, lower, upper, 0, as_int32(np.zeros(n_rows)), as_int32([]), np.zeros(0)
        )
        starts, index, value = step_variables(self.first)
        ub = np.r_[np.maximum(cols.free.ravel(), 0.0), np.maximum(cols.whole.ravel(), 0.0)]
        ub = np.r_[ub, np.zeros(deps.rows), limits.cap.ravel()]
        lb = np.full(n_chain, -highspy.kHighsInf)
        self.h.addCols(
            n_chain, np.zeros(n_chain), lb, ub, len(index), as_int32(starts), as_int32(index), value
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
        chain = c.limits.chain[ks]
        limited = chain >= 0
        team_base = self.row_limit + np.maximum(chain, 0) * S
        entries += [
            (team_base + s, -g, np.flatnonzero(limited)),
            (team_base + np.minimum(e, S - 1), g, np.flatnonzero(limited & inside)),
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
        self.h.addCols(
            m, c.value[ks], np.zeros(m), np.ones(m), len(R), as_int32(starts), as_int32(R), V
        )
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
        plain = _plain_duals(pi[: self.row_job], self.first)
        P, S, nD = self.P, self.S, self.nD
        duals = Duals(
            y=plain[:nD].reshape(P, S),
            yw=plain[nD : 2 * nD].reshape(P, S),
            eta=plain[2 * nD : self.row_limit],
            yt=plain[self.row_limit :].reshape(self.cols.limits.chains, S),
        )
        return float(self.h.getInfo().objective_function_value), duals, optimal

    def primal(self) -> FloatArray:
        """The last solve's values of the job columns, in the order of `columns`."""
        x = np.asarray(self.h.getSolution().col_value, dtype=np.float64)[self.fixed :]
        return np.clip(x, 0.0, 1.0)


@dataclass
class LpResult:
    bound: float
    # The duals that certify `bound`: the best master solve's, not the last one's, so that
    # bound + their capacity terms bounds the LP with more capacity (`prices.py`); the last
    # duals do not give that when an earlier solve certified a lower bound. Zero duals (every
    # job on time) until a master solve lowers the bound.
    duals: Duals
    converged: bool = False
    iterations: int = 0
    columns: IntArray | None = None  # the master's columns at the end
    x: FloatArray | None = None  # the master's primal values of `columns` (its last solve)


def _attractive(cols: Columns, rc: FloatArray, members: IntArray, tol: float) -> IntArray:
    """Per job, its best column, when that beats every master column of the job.

    (One column per job rather than per (job, pool): fewer pivots per master re-solve, and
    faster convergence.)
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
    log: Callable[[str], None] | None,
    initial: IntArray | None,
    initial_runs: int,
    max_steps: int | None = None,
) -> LpResult:
    """The LP's certified bound, by column generation until converged, `deadline` or
    `max_steps` master solves (each solved to the end when `deadline` is infinite, so that a
    rerun takes the same steps).

    The master starts with `initial`, or with `initial_runs` on-time runs of each job on each
    pool, spread from its earliest to its latest (`spread_runs`; from the earliest runs alone,
    column generation takes many more steps).
    """
    P, S = cols.free.shape
    zero = Duals(
        np.zeros((P, S)),
        np.zeros((P, S)),
        np.zeros(cols.deps.rows),
        np.zeros(cols.limits.cap.shape),
    )
    result = LpResult(float(np.sum(best_per_job(cols, cols.value))), zero)  # every job on time
    if not len(cols.job):
        result.converged = True
        return result
    master = Master(cols)
    master.add(spread_runs(cols, initial_runs) if initial is None else initial)
    started = time.perf_counter()
    while time.perf_counter() < deadline and (max_steps is None or result.iterations < max_steps):
        result.iterations += 1
        solved = master.solve(deadline - time.perf_counter())
        if solved is None:
            break
        objective, duals, optimal = solved
        result.columns = master.columns
        result.x = master.primal()
        bound, rc = lagrangian(cols, duals)
        if bound < result.bound:
            result.bound, result.duals = bound, duals
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
