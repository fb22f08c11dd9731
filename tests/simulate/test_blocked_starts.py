"""A planned start whose GPUs are taken may take the GPUs of another start that is blocked at
the same slot: a blocked start does not hold its GPUs idle (`_Replayer.start_jobs`).

One pool of three 4-GPU nodes, 4 hourly slots. `chat` (4 GPUs a replica) has no demand
forecast, but two replicas are really wanted at slot 0. The plan starts `one` (4 GPUs, 1 slot)
on node 0 and `two` (8 GPUs, 2 nodes, 1 slot) on nodes 1 and 2 at slot 0. Inference takes the
GPUs of nodes 0 and 1 (those of starts, in node order, since every GPU is planned): `two` is
blocked (one node is left, it needs two), and so is `one` on its own node. Node 2 is left
idle, given to `two`: `one` starts there at 0. `two` waits for slot 1.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import build
from test_loop_mechanisms import FAST, audit_holds

from horizon_opt.simulate import World, policy, replay

SPEC = {
    "name": "blocked",
    "horizon": {"slots": 4, "slot_minutes": 60},
    "pools": [{"name": "p", "gpu_type": "H100", "nodes": 3, "gpus_per_node": 4}],
    "services": [{"name": "chat", "pool": "p", "gpus_per_replica": 4, "demand": [0, 0, 0, 0]}],
    "jobs": [
        {"id": "one", "priority": 1, "gpus": 4, "duration": 1},
        {"id": "two", "priority": 1, "gpus": 8, "duration": 1},
    ],
}


@pytest.mark.parametrize("name", ["fifo", "backfill", "cpsat@event"])
def test_a_blocked_start_takes_the_gpus_of_another_blocked_start(name: str) -> None:
    inst = build(SPEC)
    world = World({"one": 1.0, "two": 1.0}, frozenset(), (np.array([2.0, 0.0, 0.0, 0.0]),))
    r = replay(inst, world, policy(name, 1, 0), FAST)
    assert r.audit is not None
    runs = {run.job: (run.start, sorted(run.gpus)) for run in r.audit.runs}
    assert runs["one"] == (0, ["p-2"])
    assert runs["two"][0] == 1
    assert r.starved == 0
    audit_holds(inst, r)
