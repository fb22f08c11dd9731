"""HiGHS's MIP on the relaxation: every column binary, solved by branch and cut.

When the model is small and time is left, its dual bound can prove a little more than the LP.
That dual bound is not certified, so it is padded by a relative `MIP_MARGIN` (above HiGHS's 1e-7
primal and dual feasibility tolerances, below the cpsat solver's 1e-6 optimality test), and
HiGHS is kept from rounding it to the objective's granularity (see `explicit_model`).
"""

from __future__ import annotations

import time

import highspy
import numpy as np

from horizon_opt.params import SearchParams
from horizon_opt.relaxation.columns import Columns
from horizon_opt.relaxation.highs import as_int32, new_highs
from horizon_opt.relaxation.master import step_variables

MIP_MARGIN = 5e-7  # relative padding on HiGHS's (uncertified) MIP dual bound


def explicit_model(cols: Columns) -> highspy.HighsLp:
    """The relaxation with every column binary, plain capacity and team-limit rows, step-form
    dependencies."""
    P, S = cols.free.shape
    J, K, deps, limits = cols.jobs, len(cols.job), cols.deps, cols.limits
    whole_pools = np.unique(cols.pool[cols.nodes > 0])
    whole_row = np.full(P, -1, dtype=np.int64)
    whole_row[whole_pools] = P * S + np.arange(len(whole_pools)) * S
    row_job = P * S + len(whole_pools) * S
    row_dep = row_job + J
    row_limit = row_dep + deps.rows
    n_rows = row_limit + limits.cap.size
    k = np.repeat(np.arange(K), cols.dur)  # one entry per column and slot of its run
    slot = cols.start[k] + np.arange(len(k)) - np.repeat(np.cumsum(cols.dur) - cols.dur, cols.dur)
    pool = cols.pool[k]
    w = cols.nodes[k] > 0
    z_starts, z_index, z_value = step_variables(deps.first)
    z_owner = K + np.repeat(np.arange(deps.rows), np.diff(np.r_[z_starts, len(z_index)]))
    rows = [pool * S + slot, whole_row[pool[w]] + slot[w], row_job + cols.job]
    chain = limits.chain[k]
    lim = chain >= 0
    rows += [row_dep + deps.row, row_dep + z_index, row_limit + chain[lim] * S + slot[lim]]
    vals = [cols.gpus[k], cols.nodes[k][w], np.ones(K), deps.sign, z_value, cols.gpus[k][lim]]
    owner = [k, k[w], np.arange(K), deps.col, z_owner, k[lim]]
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
    lp.row_lower_ = np.r_[
        np.full(row_dep, -highspy.kHighsInf),
        np.zeros(deps.rows),
        np.full(limits.cap.size, -highspy.kHighsInf),
    ]
    lp.row_upper_ = np.r_[
        np.maximum(cols.free.ravel(), 0.0),
        np.maximum(cols.whole[whole_pools].ravel(), 0.0),
        np.ones(J),
        np.zeros(deps.rows),
        limits.cap.ravel(),
    ]
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = as_int32(np.searchsorted(C, np.arange(n + 1)))
    lp.a_matrix_.index_ = as_int32(R)
    lp.a_matrix_.value_ = V.astype(np.float64)
    integer, continuous = highspy.HighsVarType.kInteger, highspy.HighsVarType.kContinuous
    lp.integrality_ = [integer] * K + [continuous] * deps.rows
    return lp


def mip_fits(cols: Columns, params: SearchParams) -> bool:
    """Whether the MIP is small enough to try (HiGHS's time and memory)."""
    return (
        len(cols.job) <= params.mip_max_columns and int(cols.dur.sum()) <= params.mip_max_nonzeros
    )


def mip_dual_bound(cols: Columns, deadline: float, max_seconds: float) -> float | None:
    """HiGHS's MIP dual bound on the relaxation (padded), or None when it has none in time."""
    if not len(cols.job):
        return 0.0
    lp = explicit_model(cols)
    h = new_highs()
    left = deadline - time.perf_counter()
    h.setOptionValue("time_limit", max(0.01, min(max_seconds, left - max(0.2, 0.03 * left))))
    h.setOptionValue("mip_rel_gap", 0.0)
    h.passModel(lp)
    status = h.run()
    dual = float(h.getInfo().mip_dual_bound)
    odd = status == highspy.HighsStatus.kError or not np.isfinite(dual) or dual < 0
    if odd or h.getModelStatus() == highspy.HighsModelStatus.kInfeasible:
        return None  # (x = 0 is always feasible: never trust an odd answer)
    return dual + MIP_MARGIN * max(1.0, abs(dual))
