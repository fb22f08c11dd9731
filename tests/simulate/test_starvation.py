"""Starved jobs (`simulate.starvation`): by hand on a logged replay, and no replay starves one."""

from __future__ import annotations

import numpy as np
import pytest
from test_solvers import LONG, build

from horizon_opt.simulate import policy, simulate
from horizon_opt.simulate.audit import Audit, Run
from horizon_opt.simulate.starvation import Starved, idle_gpus, starved_jobs
from horizon_opt.simulate.worlds import world_for
from horizon_opt.solvers import SolveOptions

FAST = SolveOptions(time_limit=1.0, workers=1, seed=0)

# One 8-GPU node, 10 slots: "big" (8 GPUs, 3 slots) and "small" (4 GPUs, 2 slots), both
# released at 0; "next" (4 GPUs, 1 slot) after "small".
TEN = {
    "name": "ten",
    "horizon": {"slots": 10},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 8}],
    "jobs": [
        {"id": "big", "priority": 1, "gpus": 8, "duration": 3},
        {"id": "small", "priority": 1, "gpus": 4, "duration": 2},
        {"id": "next", "priority": 1, "gpus": 4, "duration": 1, "after": ["small"]},
    ],
}


def run(job: str, start: int, end: int, gpus: int, outcome: str = "completed") -> Run:
    return Run(job, "p", start, end, {"p-0": tuple(range(gpus))}, outcome)


def test_idle_gpus_subtract_runs_and_replicas() -> None:
    inst = build(TEN)
    idle = idle_gpus(inst, Audit([run("big", 0, 3, 8), run("small", 5, 7, 4)], [], []))
    assert idle[0].tolist() == [0, 0, 0, 8, 8, 4, 4, 8, 8, 8]


def test_a_job_that_waits_beside_idle_gpus_no_longer_than_its_limit_is_not_starved() -> None:
    """Big runs 0-3; "small" (2 slots) waits beside the idle node 3-4 and starts at 5; "next"
    (1 slot) waits beside it at 7 and runs 8-9: each waited its run, not longer. Run at 9,
    "next" waits 2 slots beside room for its 1-slot run."""
    inst = build(TEN)
    on_time = [run("big", 0, 3, 8), run("small", 5, 7, 4), run("next", 8, 9, 4)]
    assert starved_jobs(inst, Audit(on_time, [], [])) == []
    late = [*on_time[:2], run("next", 9, 10, 4)]
    assert starved_jobs(inst, Audit(late, [], [])) == [Starved("next", 2, 1)]


def test_gpus_the_inference_reservation_holds_are_not_idle() -> None:
    """Big runs 0-3; the reservation holds 4 GPUs over 3-10 that no replica needed: the other
    4 stay idle, room enough for "small" (3-5) and "next" (8-9), both starved as without it.
    With all 8 GPUs reserved nobody had room."""
    inst = build(TEN)
    reserved = np.zeros((1, 10), dtype=np.int64)
    reserved[0, 3:] = 4
    audit = Audit([run("big", 0, 3, 8), run("small", 6, 8, 4)], [], [], reserved)
    assert idle_gpus(inst, audit)[0].tolist() == [0, 0, 0, 4, 4, 4, 0, 0, 4, 4]
    assert starved_jobs(inst, audit) == [Starved("small", 6, 2), Starved("next", 2, 1)]
    reserved[0, 3:] = 8
    assert starved_jobs(inst, audit) == []


def test_a_job_that_waits_beside_idle_gpus_longer_than_its_limit_is_starved() -> None:
    """Big runs 0-3, then the node sits idle until "small" starts at 6: "small" waited 0-5 (6
    slots), and its whole 2-slot run fitted in 3-5. "next" waited 8-9 after "small" ended at 8
    and never ran: 2 slots, its 1-slot run fitted."""
    inst = build(TEN)
    audit = Audit([run("big", 0, 3, 8), run("small", 6, 8, 4)], [], [])
    assert starved_jobs(inst, audit) == [Starved("small", 6, 2), Starved("next", 2, 1)]
    assert starved_jobs(inst, audit, known_to_fail={"small", "next"}) == []


# Two 4-GPU nodes, 6 slots: "wide" (4 GPUs, 3 slots) waits all along while "a", "b" and "c"
# (4 GPUs, 2 slots, released at 0, 2 and 4) take turns: a node is idle in every slot, but never
# one node for 3 slots in a row.
HOP = {
    "name": "hop",
    "horizon": {"slots": 6},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 2, "gpus_per_node": 4}],
    "jobs": [
        {"id": "wide", "priority": 1, "gpus": 4, "duration": 3},
        {"id": "a", "priority": 1, "gpus": 4, "duration": 2},
        {"id": "b", "priority": 1, "gpus": 4, "duration": 2, "release": 2},
        {"id": "c", "priority": 1, "gpus": 4, "duration": 2, "release": 4},
    ],
}


def test_idle_gpus_that_move_between_nodes_starve_nobody() -> None:
    """Node 0 busy 0-2 and 4-6, node 1 busy 2-4: each node is idle 2 slots in a row at most."""
    inst = build(HOP)
    on = {0: "p-0", 1: "p-1"}
    runs = [
        Run("a", "p", 0, 2, {on[0]: (0, 1, 2, 3)}, "completed"),
        Run("b", "p", 2, 4, {on[1]: (0, 1, 2, 3)}, "completed"),
        Run("c", "p", 4, 6, {on[0]: (0, 1, 2, 3)}, "completed"),
    ]
    assert starved_jobs(inst, Audit(runs, [], [])) == []


def test_no_room_or_no_chance_is_no_starvation() -> None:
    """Big holds the node 0-8, "small" runs 8-10: "small" never had room; "next" could
    never start (its predecessor ends with the horizon)."""
    inst = build(TEN)
    audit = Audit([run("big", 0, 8, 8), run("small", 8, 10, 4)], [], [])
    assert starved_jobs(inst, audit) == []


def test_a_failed_predecessor_starves_nobody() -> None:
    inst = build(TEN)
    audit = Audit([run("small", 0, 1, 4, "failed")], [], [])
    assert [s.job for s in starved_jobs(inst, audit)] == ["big"]  # it never ran, 10 > 3


def test_idle_gpus_beyond_the_teams_limit_starve_nobody() -> None:
    """TEN with one team limited to 4 GPUs of p, "big" and "small" its jobs: "small" runs 0-2
    beside 4 idle GPUs, then the node is idle, "big" (8 GPUs) never fits the limit; "next"
    (no team) runs 2-3. Without the limit "big" would have fitted from slot 3 on."""
    spec = {**TEN, "teams": [{"name": "red", "limit": {"p": 4}}]}
    spec["jobs"] = [
        {**TEN["jobs"][0], "team": "red"},
        {**TEN["jobs"][1], "team": "red"},
        TEN["jobs"][2],
    ]
    audit = Audit([run("small", 0, 2, 4), run("next", 2, 3, 4)], [], [])
    assert starved_jobs(build(spec), audit) == []
    assert [s.job for s in starved_jobs(build(TEN), audit)] == ["big"]


@pytest.mark.parametrize("name", ["backfill", "cpsat", "cpsat@event", "cpsat-expect@event"])
def test_a_job_longer_than_the_horizon_is_not_starved(name: str) -> None:
    """LONG: a 72-slot job on an idle cluster with a 48-slot horizon; every policy starts it."""
    inst = build(LONG)
    world = world_for(inst, "cluster", 0)
    replay = simulate(inst, [policy(name, 4, 2)], world, FAST)[0]
    assert replay.starved == 0, replay.starved_jobs
    assert replay.audit is not None and replay.audit.runs[0].start == 0
    assert np.all(idle_gpus(inst, replay.audit)[:, 1:2] == 0)
