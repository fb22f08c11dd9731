"""A reference bound for tests: the energy LP, weaker than the time-indexed relaxation.

It keeps only two things from the real problem, both true of every valid plan: a job that earns
its value puts `gpus * duration` GPU-slots inside its on-time window (at most `gpus` per slot),
and a pool never gives batch work more GPU-slots in a slot than its nodes have left after the
required inference replicas. Fractional jobs and preemption are allowed, so its optimum is >= the
best pwo. Every solution of the time-indexed LP maps to one of this LP, so the time-indexed
bound must never be above it: a check, built independently, that the relaxation keeps every
row it should.

The bound is certified by weak duality, not read off the solver: from any non-negative row
duals `y`, `b.y + sum_j u_j * max(0, c_j - (A^T y)_j)` bounds the LP (every column is boxed in
[0, u_j]), so solver tolerances cannot make the reported bound too low. Slot-exact: meant for
the small instances of the tests.
"""

from __future__ import annotations

import highspy
import numpy as np

from horizon_opt.model.instance import Instance, earliest_starts
from horizon_opt.relaxation import pool_free_gpus
from horizon_opt.relaxation.highs import new_highs


def energy_bound(instance: Instance, time_limit: float = 60.0) -> float:
    """The energy LP's certified bound; HiGHS stops at `time_limit` (any duals still certify)."""
    S = instance.slots
    est = earliest_starts(instance)
    free = pool_free_gpus(instance)

    cost: list[float] = []
    upper: list[float] = []
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    row_upper: list[float] = []

    def new_row(ub: float) -> int:
        row_upper.append(ub)
        return len(row_upper) - 1

    def new_col(c: float, ub: float) -> int:
        cost.append(c)
        upper.append(ub)
        return len(cost) - 1

    pool_rows = [[new_row(max(0.0, free[p, t])) for t in range(S)] for p in range(len(free))]
    x_cols: dict[int, list[int]] = {}
    for j in instance.jobs:
        x_cols[j.index] = []
        lo, hi = est[j.index], j.latest_end(S)
        window = {p: d for p, d in j.durations.items() if hi - lo >= d}
        if not window:
            continue
        one = new_row(1.0)  # sum_p x[j,p] <= 1
        for p, d in window.items():
            x = new_col(j.value, 1.0)
            x_cols[j.index].append(x)
            rows.append(one)
            cols.append(x)
            vals.append(1.0)
            energy = new_row(0.0)  # gpus*d*x - sum_t e <= 0
            rows.append(energy)
            cols.append(x)
            vals.append(j.gpus * d)
            for t in range(lo, hi):
                cap = float(j.gpus)
                e = new_col(0.0, cap)
                rows += [energy, pool_rows[p][t]]
                cols += [e, e]
                vals += [-1.0, 1.0]
                link = new_row(0.0)  # e - cap*x <= 0
                rows += [link, link]
                cols += [e, x]
                vals += [1.0, -cap]
    for j in instance.jobs:
        for p in j.after:  # a job earns nothing unless its predecessors run
            if not x_cols[j.index] or instance.jobs[p].latest_end(S) < S:
                continue  # a predecessor with a deadline may run late, outside x
            r = new_row(0.0)
            for x in x_cols[j.index]:
                rows.append(r)
                cols.append(x)
                vals.append(1.0)
            for x in x_cols[p]:
                rows.append(r)
                cols.append(x)
                vals.append(-1.0)

    value = _solve_certified(
        time_limit,
        np.array(cost),
        np.array(upper),
        np.array(rows),
        np.array(cols),
        np.array(vals),
        np.array(row_upper),
    )
    return min(value, sum(j.value for j in instance.jobs))


def _solve_certified(
    time_limit: float,
    c: np.ndarray,
    u: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    vals: np.ndarray,
    b: np.ndarray,
) -> float:
    """max c.x s.t. A x <= b, 0 <= x <= u; returns a weak-duality bound from HiGHS's duals."""
    n, m = len(c), len(b)
    if n == 0:
        return 0.0
    order = np.lexsort((rows, cols))
    rows, cols, vals = rows[order], cols[order], vals[order]
    starts = np.searchsorted(cols, np.arange(n + 1))
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = m
    lp.sense_ = highspy.ObjSense.kMaximize
    lp.col_cost_ = c.astype(np.float64)
    lp.col_lower_ = np.zeros(n)
    lp.col_upper_ = u.astype(np.float64)
    lp.row_lower_ = np.full(m, -highspy.kHighsInf)
    lp.row_upper_ = b.astype(np.float64)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = starts.astype(np.int32)
    lp.a_matrix_.index_ = rows.astype(np.int32)
    lp.a_matrix_.value_ = vals.astype(np.float64)
    h = new_highs()
    h.setOptionValue("time_limit", float(time_limit))
    h.passModel(lp)
    h.run()
    y = np.asarray(h.getSolution().row_dual, dtype=np.float64)
    if len(y) != m or not np.all(np.isfinite(y)):
        return float(np.sum(np.maximum(c, 0) * u))  # no usable duals: the trivial bound
    # Every y >= 0 certifies a bound; try both sign conventions and keep the tighter one.
    return min(
        _dual_bound(c, u, rows, cols, vals, b, np.maximum(sign * y, 0.0)) for sign in (1, -1)
    )


def _dual_bound(
    c: np.ndarray,
    u: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    vals: np.ndarray,
    b: np.ndarray,
    y: np.ndarray,
) -> float:
    aty = np.bincount(cols, weights=vals * y[rows], minlength=len(c))
    return float(b @ y + np.sum(u * np.maximum(0.0, c - aty)))
