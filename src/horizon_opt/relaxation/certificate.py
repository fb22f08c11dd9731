"""The bound certificate: weak duality, computed exactly over ALL columns.

Every dual vector `y >= 0` of the capacity, whole-node, dependency and team-limit rows
certifies a bound:

    L(y) = free.y + whole.yw + cap.yt + sum_j max(0, max_k rc_k),   rc_k = value_k - a_k.y,

(the inner max over job j's columns), so solver tolerances, or a column generation stopped
early, can only make it looser, never wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from horizon_opt.model.instance import FloatArray
from horizon_opt.relaxation.columns import Columns

FLOAT_SLACK = 1e-9  # relative padding of the certificate's floating-point sum


@dataclass
class Duals:
    y: FloatArray  # [P, S] >= 0, GPU rows
    yw: FloatArray  # [P, S] >= 0, whole-node rows
    eta: FloatArray  # [dependency rows] >= 0
    yt: FloatArray  # [limit chains, S] >= 0, team-limit rows


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
    rc -= limit_prices(cols, duals)
    deps = cols.deps
    if deps.rows:
        # a plain row i of dependency r holds a successor column starting at s for every
        # t_i >= s, so its dual weighs in as the sum of eta over rows i.. of the chain
        suffix = np.r_[np.cumsum(duals.eta[::-1])[::-1], 0.0]
        chain_end = np.repeat(deps.first[1:], np.diff(deps.first))
        tail = suffix[: deps.rows] - suffix[chain_end]
        rc += np.bincount(deps.col, weights=deps.sign * tail[deps.row], minlength=len(rc))
    return rc


def limit_prices(cols: Columns, duals: Duals) -> FloatArray:
    """What each column pays for the team-limit rows it runs through: gpus * sum of yt."""
    chain = cols.limits.chain
    out = np.zeros(len(chain))
    mine = np.flatnonzero(chain >= 0)
    if not len(mine):
        return out
    L = duals.yt.shape[0]
    T = np.concatenate([np.zeros((L, 1)), np.cumsum(duals.yt, axis=1)], axis=1)
    end = cols.start[mine] + cols.dur[mine]
    out[mine] = cols.gpus[mine] * (T[chain[mine], end] - T[chain[mine], cols.start[mine]])
    return out


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
    assert duals.eta.min(initial=0.0) >= 0 and duals.yt.min(initial=0.0) >= 0
    rc = reduced_costs(cols, duals)
    terms = np.concatenate(
        [
            (cols.free * duals.y).ravel(),
            (cols.whole * duals.yw).ravel(),
            (cols.limits.cap * duals.yt).ravel(),
            best_per_job(cols, rc),
        ]
    )
    value = float(np.sum(terms)) + FLOAT_SLACK * float(np.sum(np.abs(terms))) + 1e-9
    return value, rc
