"""Why a job is not planned: the same sentences for every solver, naming the job that binds."""

from __future__ import annotations

from typing import Any

import pytest
from test_solvers import build

import horizon_opt as ho

# One node of 4 GPUs, 7 slots. `urgent` (priority 10) takes slots 0-2. Greedy then runs `pre`
# over 2-5, and `post`, which runs after it and is due at 6, cannot fit its 2 slots: its
# predecessor ends too late (alone, post could start at 3). The optimum runs pre 0-3, post 3-5,
# urgent 5-7. `early` is released at slot 5 and needs 3 slots: no plan can end it in time.
LATE = {
    "name": "late",
    "horizon": {"slots": 7},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4}],
    "jobs": [
        {"id": "urgent", "priority": 10, "gpus": 4, "duration": 2},
        {"id": "pre", "priority": 1, "gpus": 4, "duration": 3},
        {"id": "post", "priority": 1, "gpus": 4, "duration": 2, "after": ["pre"], "deadline": 6},
        {"id": "early", "priority": 1, "gpus": 4, "duration": 3, "release": 5},
    ],
}


def reasons(plan: ho.Plan) -> dict[str, str]:
    return {u.job: u.reason for u in plan.unscheduled}


def test_greedy_names_the_predecessor_that_ends_too_late() -> None:
    why = reasons(ho.solve(build(LATE), "greedy"))
    assert why["post"] == (
        "runs after pre, which ends at slot 5: too late to end by its deadline (slot 6)"
    )


@pytest.mark.parametrize("solver", ["fifo", "greedy", "cpsat"])
def test_a_job_that_cannot_end_in_time_alone_says_so(solver: str) -> None:
    # `early` is released at 5 and needs 3 of the 7 slots.
    opts: dict[str, Any] = {"time_limit": 2.0, "workers": 1} if solver == "cpsat" else {}
    why = reasons(ho.solve(build(LATE), solver, **opts))
    assert why["early"] == (
        "cannot end within the horizon (7 slots) even alone on the cluster, beside inference and "
        "outages: released at slot 5, it needs 3 slots on its fastest pool, and no window ends by "
        "slot 7"
    )


def test_an_unscheduled_predecessor_is_named() -> None:
    # After pre (3 slots) and post (2), `early` (now 2 slots) could end at 7 alone: its unplanned
    # predecessor binds.
    early = {**LATE["jobs"][3], "after": ["post"], "release": 4, "duration": 2}
    data = {**LATE, "jobs": [*LATE["jobs"][:3], early]}
    why = reasons(ho.solve(build(data), "greedy"))
    assert why["early"] == "runs after post, which is not planned"
