"""Re-seating a planned start whose GPUs are taken (simulate/dispatch.py): one pool of two
8-GPU nodes, 8 slots; each case says by hand which GPUs the job gets and why."""

from __future__ import annotations

import numpy as np

from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Gang, Instance
from horizon_opt.model.load import parse_spec
from horizon_opt.simulate.dispatch import reseat


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
    got = reseat(inst, 0, Gang(1, 4, False), (2, 5), taken, {}, reserved, planned)
    assert got == {1: (2, 3, 4, 5)}
    # Six GPUs do not fit (room 4 at slot 4), nor four once a running job holds 2 more.
    assert reseat(inst, 0, Gang(1, 6, False), (2, 5), taken, {}, reserved, planned) is None
    held = {1: {2, 3}}
    assert (
        reseat(inst, 0, Gang(1, 4, False), (2, 5), np.array([6, 2]), held, reserved, planned)
        is None
    )


def test_a_planned_job_that_ends_before_the_run_starts_is_no_obstacle() -> None:
    inst = _instance()
    none = np.zeros_like(inst.capacity)
    planned = [(0, 2, {0: tuple(range(8))}), (5, 8, {1: tuple(range(8))})]
    got = reseat(inst, 0, Gang(2, 8, True), (2, 5), np.array([0, 0]), {}, none, planned)
    assert got == {0: tuple(range(8)), 1: tuple(range(8))}
