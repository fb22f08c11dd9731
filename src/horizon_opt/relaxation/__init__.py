"""Relaxations of the planning problem and the proven bounds on pwo they give.

The time-indexed relaxation: pool-level runs (job, pool, start) as columns (`columns`), its LP by
column generation (`master`) certified by weak duality (`certificate`), HiGHS's MIP on it when
small (`mip`), and the entry points (`bound`). The second bound, a pool-level CP-SAT model
(`pool_model`), keeps dependencies exact and drops node placement. Both keep teams' limits
(`limits`) and leave quotas out.
"""

from horizon_opt.relaxation.bound import Bound, Relaxation, proven_bound, solve_lp, tighten
from horizon_opt.relaxation.columns import (
    Columns,
    build_columns,
    pool_free_gpus,
    whole_free_nodes,
)
from horizon_opt.relaxation.master import LpResult
from horizon_opt.relaxation.mip import mip_fits

__all__ = [
    "Bound",
    "Columns",
    "LpResult",
    "Relaxation",
    "build_columns",
    "mip_fits",
    "pool_free_gpus",
    "proven_bound",
    "solve_lp",
    "tighten",
    "whole_free_nodes",
]
