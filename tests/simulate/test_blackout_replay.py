"""The replay keeps blackouts: a job that a shorter-than-planned predecessor lets start early
still starts only where its window allows, and what ran passes `check`."""

from __future__ import annotations

import pytest
from conftest import build
from test_loop_mechanisms import FAST, audit_holds

from horizon_opt.simulate import World, policy, replay

# One node of 8 GPUs, 8 hourly slots. "a" (2 slots) runs first; "b" runs after it for 2 slots
# and may not run in slot 2 ([2, 3)): its starts are 0 and 3..6. Planned on limits, a runs over
# [0, 2) and b from 3. In the world a ends after 1 slot, but b may not start at 1 ([1, 3) runs
# through slot 2) nor at 2: every policy starts it at 3.
SPEC = {
    "name": "blackout-replay",
    "horizon": {"slots": 8, "slot_minutes": 60},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 8}],
    "jobs": [
        {"id": "a", "priority": 1, "gpus": 8, "duration": 2},
        {
            "id": "b",
            "priority": 1,
            "gpus": 8,
            "duration": 2,
            "after": ["a"],
            "blackout": [{"start": 2, "end": 3}],
        },
    ],
}


@pytest.mark.parametrize("name", ["fifo", "backfill", "greedy", "cpsat"])
def test_replays_start_only_where_the_window_allows(name: str) -> None:
    inst = build(SPEC)
    world = World({"a": 0.5, "b": 1.0}, frozenset(), ())
    r = replay(inst, world, policy(name, 1, 0), FAST)
    assert r.audit is not None
    ran = {run.job: (run.start, run.end) for run in r.audit.runs}
    assert ran == {"a": (0, 1), "b": (3, 5)}
    audit_holds(inst, r)
