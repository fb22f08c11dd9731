"""Ruin and recreate: re-place an LNS neighbourhood by list scheduling instead of CP-SAT.

A CP-SAT subproblem is solved exactly but costs a model build and a solve (large: about six a
second on two cores). Re-placing the same neighbourhood greedily, one job at a time at its
earliest-ending fit in a randomized value order, costs a few milliseconds, so the search can try
hundreds of neighbourhoods for each exact one. The move is kept only when pwo goes up (or stays,
with earlier ends), and is otherwise undone exactly.
"""

from __future__ import annotations

import numpy as np

from horizon_opt.instance import FloatArray
from horizon_opt.solvers.assemble import Placement
from horizon_opt.solvers.cpsat.incumbent import Incumbent
from horizon_opt.solvers.cpsat.model import Subproblem
from horizon_opt.solvers.greedy import earliest_end
from horizon_opt.solvers.grid import CapacityGrid

NOISE = 0.3  # the order's keys are multiplied by a uniform factor in [1 - NOISE, 1 + NOISE]


def recreate(
    inc: Incumbent, sub: Subproblem, weights: FloatArray, rng: np.random.Generator
) -> float:
    """Free the subproblem's placed jobs, place its jobs again in order of `weights` (per GPU-
    slot, randomized), keep the result when it is no worse; returns the pwo gained."""
    inst = inc.instance
    S = inst.slots
    old = {j: p for j, p in sub.hint.items() if j in inc.placements}
    inc.replace(list(old), {})
    grid = CapacityGrid(inst, inc.free - inc.used)
    free = set(sub.jobs)
    jobs = list(sub.jobs)
    work = np.array([inst.jobs[j].gpus * min(inst.jobs[j].durations.values()) for j in jobs])
    noise = rng.uniform(1 - NOISE, 1 + NOISE, len(jobs))
    key = weights[jobs] / np.maximum(work, 1) * noise
    pending = [jobs[i] for i in np.argsort(-key, kind="stable")]
    new: dict[int, Placement] = {}
    failed: set[int] = set()
    ok = True
    while pending and ok:
        later: list[int] = []
        for j in pending:
            job = inst.jobs[j]
            if any(q in failed for q in job.after):
                fit = None
            elif any(q in free and q not in new for q in job.after):
                later.append(j)  # a predecessor among the free jobs goes first
                continue
            else:
                t0 = max([sub.earliest[j], *(new[q].end(inst) for q in job.after if q in new)])
                hi = sub.latest_end[j]
                fit = earliest_end(grid, job, t0, min(hi, job.latest_end(S)))
                if fit is None and j in sub.must_run:  # late, for a fixed successor
                    fit = earliest_end(grid, job, t0, hi)
            if fit is None:
                failed.add(j)
                if j in sub.must_run:
                    ok = False
                    break
                continue
            grid.occupy(fit, job.gpus, job.durations[fit.pool])
            new[j] = Placement(j, fit.pool, fit.start, fit.nodes)
        if len(later) == len(pending):
            break  # (cannot happen: dependencies are acyclic)
        pending = later
    ok = ok and all(j in new for j in sub.must_run)
    before = sum(p.earned(inst) for p in old.values())
    after = sum(p.earned(inst) for p in new.values())
    ends_before = sum(p.end(inst) for p in old.values())
    ends_after = sum(p.end(inst) for p in new.values())
    if ok and (after > before + 1e-9 or (after >= before - 1e-9 and ends_after <= ends_before)):
        inc.replace([], new)
        return max(0.0, after - before)
    inc.replace([], old)
    return 0.0
