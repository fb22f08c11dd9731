"""Re-seating a planned start whose GPUs are taken (simulate/dispatch.py): one pool of two
8-GPU nodes, 8 slots; each case says by hand which GPUs the job gets and why."""

from __future__ import annotations

import numpy as np

from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Gang, Instance
from horizon_opt.model.load import parse_spec
from horizon_opt.plans.inference import elastic_layout
from horizon_opt.simulate.dispatch import reseat
from horizon_opt.simulate.serving import Serving
from horizon_opt.simulate.world import World


def _instance() -> Instance:
    pools = [{"name": "p", "gpu_type": "H100", "nodes": 2, "gpus_per_node": 8}]
    jobs = [{"id": "a", "priority": 1, "gpus": 4, "duration": 3}]
    spec = {"name": "seats", "horizon": {"slots": 8}, "pools": pools, "jobs": jobs}
    return compile_instance(parse_spec(spec))


def test_a_start_moves_to_gpus_the_plan_leaves_free_for_its_whole_run() -> None:
    # The run is [2, 5). Node 0: inference beyond the forecast takes 6 GPUs now: no room for 4.
    # Node 1: 2 GPUs reserved for inference at slots 3-4, and a planned job on GPUs 0-1 over
    # [4, 7): room 8, 6, 4 over the run, enough for 4, on GPUs 2-5 (0 and 1 are promised).
    inst = _instance()
    reserved = np.zeros_like(inst.capacity)
    reserved[1, 3:5] = 2
    taken = np.array([6, 0])
    planned = [(4, 7, {1: (0, 1)})]
    room = inst.capacity - reserved
    got = reseat(inst, 0, Gang(1, 4, False), (2, 5), taken, {}, room, planned)
    assert got == {1: (2, 3, 4, 5)}
    # Six GPUs do not fit (room 4 at slot 4), nor four once a running job holds 2 more.
    assert reseat(inst, 0, Gang(1, 6, False), (2, 5), taken, {}, room, planned) is None
    held = {1: {2, 3}}
    assert reseat(inst, 0, Gang(1, 4, False), (2, 5), np.array([6, 2]), held, room, planned) is None


def test_a_planned_job_that_ends_before_the_run_starts_is_no_obstacle() -> None:
    inst = _instance()
    room = inst.capacity.copy()
    planned = [(0, 2, {0: tuple(range(8))}), (5, 8, {1: tuple(range(8))})]
    got = reseat(inst, 0, Gang(2, 8, True), (2, 5), np.array([0, 0]), {}, room, planned)
    assert got == {0: tuple(range(8)), 1: tuple(range(8))}


def test_a_run_past_the_horizon_fits_only_where_the_plan_leaves_room_there() -> None:
    # The plan reaches 4 slots past the 8 replayed: its inference takes 6 GPUs of node 0 at
    # slot 9 and all of node 1 at slot 10. A 4-GPU run over [6, 10) fits on node 1 only; over
    # [6, 11) nowhere; over [6, 13), past the plan's horizon, nowhere however free.
    inst = _instance()
    room = np.full((2, 12), 8)
    room[0, 9] = 2
    room[1, 10] = 0
    assert reseat(inst, 0, Gang(1, 4, False), (6, 10), np.array([0, 0]), {}, room, []) == {
        1: (0, 1, 2, 3)
    }
    assert reseat(inst, 0, Gang(1, 4, False), (6, 11), np.array([0, 0]), {}, room, []) is None
    free = np.full((2, 12), 8)
    assert reseat(inst, 0, Gang(1, 4, False), (6, 13), np.array([0, 0]), {}, free, []) is None


def test_replicas_above_the_forecast_leave_a_starting_gang_its_gpus() -> None:
    # One pool of two 8-GPU nodes, a 4-GPU replica with demand 0 forecast (nothing reserved),
    # and 1.5 replicas really wanted at slot 0: two extra replicas, 8 GPUs. A gang the plan
    # starts now takes node 0 whole, so they go to node 1; with no start planned, first fit
    # puts them on node 0.
    pools = [{"name": "p", "gpu_type": "H100", "nodes": 2, "gpus_per_node": 8}]
    services = [{"name": "chat", "pool": "p", "gpus_per_replica": 4, "demand": [0, 0]}]
    spec = {"name": "serve", "horizon": {"slots": 2}, "pools": pools, "services": services}
    inst = compile_instance(parse_spec(spec))
    world = World(run_share={}, fails=frozenset(), demand=(np.array([1.5, 0.0]),))
    idle = np.zeros(2, dtype=np.int64)
    for starting, extra in ((np.array([8, 0]), [0, 8]), (None, [8, 0])):
        serving = Serving(inst, world)
        serving.adopt(elastic_layout(inst))
        _, wanted, short, preempted = serving.serve(0, lambda: idle, lambda p, t: False, starting)
        assert (wanted, short, preempted) == (1.5, 0.0, False)
        assert serving.extra.tolist() == extra


def test_a_replica_its_service_does_not_need_serves_another_service_of_the_pool() -> None:
    # One 8-GPU node. "embed" (4 GPUs a replica) is forecast at 1 replica and "chat" (1 GPU) at
    # 4: the layout reserves all 8 GPUs. At slot 0 embed wants nothing and chat 6 replicas:
    # chat's 4 reserved plus 2 on embed's idle replica, whose 4 GPUs no batch job could take
    # anyway. Embed runs no replica; without the pooling chat would be 2 replicas short.
    pools = [{"name": "p", "gpu_type": "H100", "nodes": 1, "gpus_per_node": 8}]
    services = [
        {"name": "embed", "pool": "p", "gpus_per_replica": 4, "demand": [1]},
        {"name": "chat", "pool": "p", "gpus_per_replica": 1, "demand": [4]},
    ]
    spec = {"name": "pooled", "horizon": {"slots": 1}, "pools": pools, "services": services}
    inst = compile_instance(parse_spec(spec))
    world = World(run_share={}, fails=frozenset(), demand=(np.array([0.0]), np.array([6.0])))
    serving = Serving(inst, world)
    serving.adopt(elastic_layout(inst))
    idle = np.zeros(1, dtype=np.int64)
    _, wanted, short, preempted = serving.serve(0, lambda: idle, lambda p, t: False, None)
    assert (wanted, short, preempted) == (6.0, 0.0, False)
    assert serving.extra.tolist() == [0]  # within the reservation: no free GPU taken
    assert [r[:, 0].tolist() for r in serving.ran_replicas] == [[0], [6]]
