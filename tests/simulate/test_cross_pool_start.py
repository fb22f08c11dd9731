"""A planned start whose pool is taken starts on another of its pools (the replayer's
`seats_to_try`), so a job never waits beside a pool that sits idle.

Two pools of one 8-GPU node, 4 hourly slots. `chat` runs on `fast` with no demand forecast,
but one 8-GPU replica is really wanted at slots 0 and 1: it takes `fast`'s GPUs. Job `j`
(8 GPUs, 1 slot on `fast`, 2 on `slow`) is planned on `fast` at 0, where it ends first; blocked
there, it starts at 0 on `slow`, for its planned run scaled by the limits (1 slot x 2/1), which
ends at 2, before the 3 it would reach by waiting for `fast` (free again at 2).
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import build
from test_loop_mechanisms import FAST, audit_holds

from horizon_opt.simulate import World, policy, replay

SPEC = {
    "name": "cross-pool",
    "horizon": {"slots": 4, "slot_minutes": 60},
    "pools": [
        {"name": "fast", "gpu_type": "H100", "nodes": 1, "gpus_per_node": 8},
        {"name": "slow", "gpu_type": "L40S", "nodes": 1, "gpus_per_node": 8},
    ],
    "services": [{"name": "chat", "pool": "fast", "gpus_per_replica": 8, "demand": [0, 0, 0, 0]}],
    "jobs": [{"id": "j", "priority": 1, "gpus": 8, "duration": {"fast": 1, "slow": 2}}],
}


@pytest.mark.parametrize("name", ["fifo", "backfill", "greedy", "cpsat", "cpsat@event"])
def test_a_start_blocked_on_its_pool_starts_on_another(name: str) -> None:
    inst = build(SPEC)
    world = World({"j": 1.0}, frozenset(), (np.array([1.0, 1.0, 0.0, 0.0]),))
    r = replay(inst, world, policy(name, 1, 0), FAST)
    assert r.audit is not None
    assert [(run.job, run.pool, run.start, run.end) for run in r.audit.runs] == [
        ("j", "slow", 0, 2)
    ]
    audit_holds(inst, r)


def test_a_job_whose_team_has_a_quota_keeps_to_its_pool() -> None:
    # The same with `j` in a team with a quota on `fast`: a move would change what the team
    # holds on each pool, so it waits for `fast`, free again at 2.
    spec = {
        **SPEC,
        "teams": [{"name": "t", "quota": {"fast": 8}}],
        "jobs": [{**SPEC["jobs"][0], "team": "t"}],  # type: ignore[index]
    }
    inst = build(spec)
    world = World({"j": 1.0}, frozenset(), (np.array([1.0, 1.0, 0.0, 0.0]),))
    r = replay(inst, world, policy("backfill", 1, 0), FAST)
    assert r.audit is not None
    assert [(run.job, run.pool, run.start) for run in r.audit.runs] == [("j", "fast", 2)]
