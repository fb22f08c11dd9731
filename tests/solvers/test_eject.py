"""Ejection moves (solvers/cpsat/eject.py), on hand-solved instances from FIFO's plans."""

from __future__ import annotations

import time

import numpy as np
import pytest
from test_solvers import FRAGMENT, PRIORITY, build

import horizon_opt as ho
from horizon_opt.params import SearchParams
from horizon_opt.plans.inference import elastic_layout
from horizon_opt.solvers.assemble import build_plan
from horizon_opt.solvers.cpsat.eject import Ejector
from horizon_opt.solvers.cpsat.incumbent import Incumbent, placements_from_plan
from horizon_opt.solvers.diagnosis import unscheduled_causes
from horizon_opt.solvers.listsched import inherited_ranks, priority_large_first


def from_fifo(inst: ho.Instance) -> tuple[Incumbent, Ejector]:
    free = elastic_layout(inst).free
    inc = Incumbent(inst, free, placements_from_plan(inst, ho.solve(inst, "fifo"), free))
    ranks = inherited_ranks(inst, priority_large_first)
    params = SearchParams()
    return inc, Ejector(inc, ranks, params.eject_candidates, params.eject_max_cost_ratio)


def values(inst: ho.Instance) -> np.ndarray:
    return np.array([j.value for j in inst.jobs])


def as_plan(inst: ho.Instance, inc: Incumbent) -> ho.Plan:
    placements, layout = list(inc.placements.values()), elastic_layout(inst)
    reasons = unscheduled_causes(inst, placements, layout)
    return build_plan(inst, "eject", placements, layout, reasons, started=time.perf_counter())


@pytest.mark.parametrize(
    ("spec", "before", "after"),
    [
        # FIFO: a (2 GPUs, 0-2) and b (2, 0-4) on node 0, c (2, 0-4) on node 1; gang g (4 GPUs,
        # value 80) waits. Evicting c (8) or b (8) makes room for g, and the evicted job finds
        # no other place: 4 + 8 + 80 = 92.
        (FRAGMENT, 20.0, 92.0),
        # FIFO: L (value 48) runs 0-6 and H (value 320, deadline 6) waits. Evicting L runs H;
        # L cannot end in the horizon after it: 320.
        (PRIORITY, 48.0, 320.0),
    ],
)
def test_ejection_runs_the_blocked_job(
    spec: dict[str, object], before: float, after: float
) -> None:
    inst = build(spec)
    inc, ejector = from_fifo(inst)
    assert inc.value() == pytest.approx(before)
    result = ejector.run_pass(values(inst), stop=lambda: False)
    assert result.hits == 1 and result.gained == pytest.approx(after - before)
    assert inc.value() == pytest.approx(after)
    assert ho.check(inst, as_plan(inst, inc)) == []


def test_a_losing_move_is_undone() -> None:
    # One 8-GPU node for 4 slots. "big" (value 10 * 8 * 4 = 320) fills it; "small" (value
    # 1 * 8 * 2 = 16) waits. Evicting big for small would lose, so the plan must not change.
    inst = build(
        {
            "name": "losing",
            "horizon": {"slots": 4},
            "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 8}],
            "jobs": [
                {"id": "big", "priority": 10, "gpus": 8, "duration": 4},
                {"id": "small", "priority": 1, "gpus": 8, "duration": 2},
            ],
        }
    )
    inc, ejector = from_fifo(inst)
    placements, used = dict(inc.placements), inc.used.copy()
    window = ejector.windows(1)[0]
    assert ejector.try_window(1, window) == 0.0
    assert inc.placements == placements
    assert (inc.used == used).all()
