"""The `cluster` world's draws against the sources docs/simulate.md cites for them.

Many jobs are drawn on one instance and each claimed distribution is checked: run / limit of
completed jobs (median 0.4-0.5, published logs), failure shares by gang size (Alibaba 2023),
cancellations (Philly, AcmeTrace), failure times spread over the run, and demand errors that are
blocks of the packaged ServeGen series' seasonal-naive errors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from test_solvers import build

from horizon_opt.model.instance import Instance
from horizon_opt.simulate.cluster_world import (
    FAIL_GANG,
    FAIL_SINGLE,
    cluster_model,
    draw_cluster_world,
)
from horizon_opt.simulate.worlds import world_for

HOURS = (1, 2, 4, 8, 24)


@pytest.fixture(scope="module")
def many() -> Instance:
    """4,000 jobs of 1 and 8 GPUs, estimates of 1 to 24 hourly slots, one service."""
    jobs: list[dict[str, Any]] = [
        {"id": f"j{k}", "priority": 1, "gpus": 1 if k % 2 else 8, "duration": HOURS[k % 5]}
        for k in range(4000)
    ]
    return build(
        {
            "name": "many",
            "horizon": {"slots": 200},
            "pools": [{"name": "p", "gpu_type": "x", "nodes": 4, "gpus_per_node": 8}],
            "services": [{"name": "chat", "pool": "p", "gpus_per_replica": 1, "demand": [4] * 200}],
            "jobs": jobs,
        }
    )


def test_completed_jobs_use_about_half_their_limit(many: Instance) -> None:
    world = draw_cluster_world(many, 0)
    done = [world.run_share[j.id] for j in many.jobs if j.id not in world.fails]
    assert 0.4 <= float(np.median(done)) <= 0.5
    assert 0.4 <= float(np.mean(np.array(done) < 0.5)) <= 0.65  # about half under half
    assert max(done) <= 1.0


def test_failures_by_gang_size_and_cancellations(many: Instance) -> None:
    world = draw_cluster_world(many, 1)
    cancelled = cluster_model().cancelled
    assert cancelled == pytest.approx(0.09, abs=0.001)  # Philly: 0.09 of GPU jobs
    for gpus, share in ((1, FAIL_SINGLE), (8, FAIL_GANG)):
        mine = [j.id for j in many.jobs if j.gpus == gpus]
        failed = [j for j in mine if j in world.fails and j not in world.cancels]
        assert len(failed) / len(mine) == pytest.approx(share, abs=0.03)
    assert len(world.cancels) / len(many.jobs) == pytest.approx(cancelled, abs=0.015)


def test_failures_spread_over_the_run(many: Instance) -> None:
    """A failed or cancelled job ends at a uniform share of the run it would have had: few end
    at their limit, and their median share is about half the completed jobs'."""
    world = draw_cluster_world(many, 2)
    ended = np.array([world.run_share[j] for j in world.fails])
    assert np.mean(ended >= 0.999) < 0.02
    assert 0.15 <= float(np.median(ended)) <= 0.3


def test_demand_errors_are_blocks_of_the_servegen_errors(many: Instance) -> None:
    """log(actual / forecast), hour by hour, is a run of consecutive seasonal-naive errors of
    one ServeGen model; those errors spread as the model's do (0.22 and 0.57)."""
    errors = cluster_model().demand_errors
    assert [round(float(e.std()), 2) for e in errors] == [0.57, 0.22]
    for seed in range(5):
        world = draw_cluster_world(many, seed)
        drawn = np.log(world.demand[0] / 4.0)
        assert any(_is_block(drawn, e) for e in errors)


def _is_block(drawn: np.ndarray, series: np.ndarray) -> bool:
    n = len(series)
    return any(
        np.allclose(drawn, series[(first + np.arange(len(drawn))) % n]) for first in range(n)
    )


def test_seeded(many: Instance) -> None:
    a, b = draw_cluster_world(many, 3), world_for(many, "cluster", 3)
    assert a.run_share == b.run_share and a.fails == b.fails
    assert np.array_equal(a.demand[0], b.demand[0])
    assert draw_cluster_world(many, 4).run_share != a.run_share
