"""The closed-loop replay (`horizon_opt.simulate`) and the `horizon-opt simulate` command.

The replays run on hand-sized instances in hand-made worlds (`World(...)` built directly), so that
every realized number can be worked out slot by slot in the comments; `draw_world` is tested on
its own, for determinism and for the shares of the model it documents.
"""

from __future__ import annotations

import copy
import csv
import io
import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from conftest import MIXED, QUEUE, TINY, Spec, build
from matplotlib.figure import Figure
from typer.testing import CliRunner

from horizon_opt import SOLVERS
from horizon_opt.cli import app
from horizon_opt.errors import InputError, InstanceError
from horizon_opt.model.instance import Instance
from horizon_opt.simulate import (
    Noise,
    Policy,
    Replay,
    World,
    draw_world,
    policy,
    replay,
    simulate,
)
from horizon_opt.simulate.report import format_table, plot_realized, rows, to_csv
from horizon_opt.simulate.window import Window
from horizon_opt.simulate.world import EARLY_AT, FAIL_AT
from horizon_opt.solvers import SolveOptions

FAST = SolveOptions(time_limit=1.0, workers=2, seed=0)
AUDIT = ("actual.yaml", "ran.json")  # the audit files simulate writes per policy
NONE = Noise.parse("none")
runner = CliRunner()

# TOY: 10 slots of 60 minutes (h = 1). Pool a: 2 nodes x 4 GPUs = 8 GPUs. Service chat on a,
# 2 GPUs per replica, headroom 0, forecast 1 replica every slot: 2 GPUs reserved, 6 free.
# Jobs (value = priority * gpus * duration * h):
#   train  priority 2, 4 GPUs, 3 slots, release 0             -> 24
#   ev     priority 1, 2 GPUs, 2 slots, after train           ->  4
#   quant  priority 3, 2 GPUs, 2 slots, release 2             -> 12
#   batch  priority 1, 2 GPUs, 4 slots, release 1             ->  8
# 6 free GPUs hold train + one 2-GPU job at a time, and the 10 slots leave plenty of room: every
# policy completes every job, well before slot 10, so pwo = 24 + 4 + 12 + 8 = 48.
# GPU-slots used: batch 4*3 + 2*2 + 2*2 + 2*4 = 28, inference 2 * 10 = 20, of 8 * 10 = 80.
TOY: Spec = {
    "name": "toy",
    "horizon": {"slots": 10, "slot_minutes": 60},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 2, "gpus_per_node": 4}],
    "services": [{"name": "chat", "pool": "a", "gpus_per_replica": 2, "demand": [1] * 10}],
    "jobs": [
        {"id": "train", "priority": 2, "gpus": 4, "duration": 3},
        {"id": "ev", "priority": 1, "gpus": 2, "duration": 2, "after": ["train"]},
        {"id": "quant", "priority": 3, "gpus": 2, "duration": 2, "release": 2},
        {"id": "batch", "priority": 1, "gpus": 2, "duration": 4, "release": 1},
    ],
}
TOY_PWO = 48.0
TOY_UTILIZATION = (28 + 20) / 80

# PREEMPT: 8 slots of 30 minutes (h = 0.5). Pool a: 1 node x 6 GPUs; pool b: 1 node x 4 GPUs.
# chat on a, 2 GPUs per replica, forecast 1 replica: 2 GPUs reserved on a-0, 4 free.
#   hi    priority 4, 2 GPUs, 6 slots, on a only -> 4 * 2 * 6 * 0.5 = 24
#   lo    priority 1, 2 GPUs, 6 slots, on a only -> 1 * 2 * 6 * 0.5 =  6
#   side  priority 1, 1 GPU,  6 slots, on b only -> 1 * 1 * 6 * 0.5 =  3 (the lowest value)
# Every policy starts all three at slot 0: a-0 is full (2 reserved + 2 + 2).
PREEMPT: Spec = {
    "name": "preempt",
    "horizon": {"slots": 8, "slot_minutes": 30},
    "pools": [
        {"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 6},
        {"name": "b", "gpu_type": "B", "nodes": 1, "gpus_per_node": 4},
    ],
    "services": [{"name": "chat", "pool": "a", "gpus_per_replica": 2, "demand": [1] * 8}],
    "jobs": [
        {"id": "hi", "priority": 4, "gpus": 2, "duration": 6, "pools": ["a"]},
        {"id": "lo", "priority": 1, "gpus": 2, "duration": 6, "pools": ["a"]},
        {"id": "side", "priority": 1, "gpus": 1, "duration": 6, "pools": ["b"]},
    ],
}

# EDGE: one job that fills the whole horizon (4 slots of 60 minutes): value 1 * 4 * 4 = 16.
EDGE: Spec = {
    "name": "edge",
    "horizon": {"slots": 4, "slot_minutes": 60},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4}],
    "jobs": [{"id": "whole", "priority": 1, "gpus": 4, "duration": 4}],
}


def many_jobs(n: int = 2000) -> Instance:
    """n one-slot, one-GPU jobs (draw_world only looks at the job list)."""
    return build(
        {
            "name": "many",
            "horizon": {"slots": 4},
            "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 1}],
            "jobs": [{"id": f"j{i}", "priority": 1, "gpus": 1, "duration": 1} for i in range(n)],
        }
    )


def world(
    instance: Instance,
    shares: dict[str, float] | None = None,
    fails: Iterable[str] = (),
    demand: dict[int, dict[int, float]] | None = None,
) -> World:
    """A hand-made world: every job runs its full estimate unless `shares` says otherwise, and
    demand is the forecast except where `demand` ({service: {slot: replicas}}) says otherwise."""
    run_share = {j.id: 1.0 for j in instance.jobs} | (shares or {})
    actual = []
    for s in instance.services:
        series = s.demand.astype(float).copy()
        for t, value in (demand or {}).get(s.index, {}).items():
            series[t] = value
        actual.append(series)
    return World(run_share, frozenset(fails), tuple(actual))


def assert_sane(r: Replay, instance: Instance) -> None:
    assert 0.0 <= r.realized_utilization <= 1.0 + 1e-9
    assert r.completed + r.failed + r.cancelled <= len(instance.jobs)
    assert min(r.completed, r.failed, r.cancelled, r.preemptions) >= 0
    assert r.lost_gpu_hours >= 0.0 and r.slo_short_replica_hours >= 0.0
    assert 0.0 <= r.slo_short_share <= 1.0
    assert 1 <= r.replans <= r.decisions
    assert r.solver_seconds >= r.max_solver_seconds >= 0.0
    by_slot = r.realized_by_slot
    assert all(a <= b for a, b in itertools.pairwise(by_slot))
    assert by_slot[-1] == pytest.approx(r.realized_pwo)


@pytest.fixture(scope="module")
def toy() -> Instance:
    return build(TOY)


@pytest.fixture(scope="module")
def preempt() -> Instance:
    return build(PREEMPT)


# -- Noise ---------------------------------------------------------------------------------------


def test_noise_defaults_and_str() -> None:
    n = Noise()
    assert (n.early, n.fail, n.demand) == (0.7, 0.1, 0.1)
    assert str(n) == "early=0.7,fail=0.1,demand=0.1"
    assert Noise.parse(str(n)) == n


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("fail=0.2", Noise(early=0.7, fail=0.2, demand=0.1)),
        ("demand=0.3, early=0.5", Noise(early=0.5, fail=0.1, demand=0.3)),
        ("early=1,fail=0", Noise(early=1.0, fail=0.0, demand=0.1)),
        ("", Noise()),
        ("none", Noise(early=0.0, fail=0.0, demand=0.0)),
        ("  none ", Noise(early=0.0, fail=0.0, demand=0.0)),
    ],
)
def test_noise_parse(text: str, expected: Noise) -> None:
    assert Noise.parse(text) == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("speed=0.1", "'speed=0.1' is not one of demand, early, fail"),
        ("early", "'early' is not one of"),
        ("None", "'None' is not one of"),
        ("early=lots", "early: not a number: 'lots'"),
        ("fail=", "fail: not a number: ''"),
        ("early=1.5", "early must be from 0 to 1, got 1.5"),
        ("demand=-0.1", "demand must be from 0 to 1"),
        ("fail=nan", "fail must be from 0 to 1"),
        ("early=0.6,fail=0.5", "early + fail must be at most 1"),
    ],
)
def test_noise_parse_errors_name_the_option(text: str, fragment: str) -> None:
    with pytest.raises(InputError) as caught:
        Noise.parse(text)
    [problem] = caught.value.problems
    assert problem.startswith("--noise: ")
    assert fragment in problem


def test_noise_constructor_checks_ranges() -> None:
    with pytest.raises(ValueError, match="fail must be from 0 to 1"):
        Noise(fail=2.0)
    with pytest.raises(ValueError, match="early \\+ fail"):
        Noise(early=0.95, fail=0.1)


@pytest.mark.parametrize(
    "noise",
    [Noise(), NONE, Noise(early=0.25, fail=0.125, demand=1.0), Noise(early=1 / 3, fail=0.2)],
)
def test_noise_str_round_trips(noise: Noise) -> None:
    assert str(Noise.parse(str(noise))) == str(noise)


# -- draw_world ----------------------------------------------------------------------------------


def test_draw_world_is_seeded(toy: Instance) -> None:
    big = many_jobs(200)
    a, b, c = (draw_world(big, Noise(), seed) for seed in (3, 3, 4))
    assert a.run_share == b.run_share and a.fails == b.fails
    assert a.run_share != c.run_share and a.fails != c.fails
    w1, w2, w3 = (draw_world(toy, Noise(demand=0.3), seed) for seed in (3, 3, 4))
    assert len(w1.demand) == len(toy.services) == 1
    assert np.array_equal(w1.demand[0], w2.demand[0])
    assert not np.array_equal(w1.demand[0], w3.demand[0])
    assert not w1.demand[0].flags.writeable


def test_draw_world_without_noise_is_the_forecast(toy: Instance) -> None:
    for seed in range(3):
        w = draw_world(toy, NONE, seed)
        assert w.run_share == {j.id: 1.0 for j in toy.jobs}
        assert w.fails == frozenset()
        for s in toy.services:
            assert np.array_equal(w.demand[s.index], s.demand)
        for job in toy.jobs:
            for estimate in job.durations.values():
                assert w.run_slots(job.id, estimate) == estimate


def test_draw_world_shares_are_in_their_ranges() -> None:
    inst = many_jobs(2000)
    w = draw_world(inst, Noise(early=0.5, fail=0.3), 1)
    assert set(w.run_share) == {j.id for j in inst.jobs}
    assert w.fails <= set(w.run_share)
    for job_id, share in w.run_share.items():
        if job_id in w.fails:
            assert FAIL_AT[0] <= share <= FAIL_AT[1] == 0.9
        elif share < 1.0:
            assert EARLY_AT[0] <= share <= EARLY_AT[1] == 1.0
        else:
            assert share == 1.0
    assert FAIL_AT[0] == 0.05 and EARLY_AT[0] == 0.4
    # run_slots: never past the estimate, at least one slot.
    for job_id, share in list(w.run_share.items())[:300]:
        for estimate in (1, 2, 3, 7, 20):
            slots = w.run_slots(job_id, estimate)
            assert 1 <= slots <= estimate
            assert slots == max(1, math.ceil(share * estimate - 1e-9))


def test_run_slots_rounds_up_to_whole_slots() -> None:
    w = World({"x": 0.5, "y": 0.05, "z": 0.4}, frozenset({"y"}), ())
    assert [w.run_slots("x", e) for e in (1, 2, 3, 4)] == [1, 1, 2, 2]  # ceil(e / 2)
    assert w.run_slots("y", 10) == 1  # ceil(0.5) = 1
    assert w.run_slots("z", 5) == 2  # 0.4 * 5 = 2.0000000000000004: not 3


@pytest.mark.parametrize("noise", [Noise(), Noise(early=0.3, fail=0.4)])
def test_draw_world_shares_match_the_noise(noise: Noise) -> None:
    inst = many_jobs(2000)
    for seed in range(3):
        w = draw_world(inst, noise, seed)
        failing = len(w.fails) / 2000
        early = sum(s < 1.0 for j, s in w.run_share.items() if j not in w.fails) / 2000
        assert failing == pytest.approx(noise.fail, abs=0.03)
        assert early == pytest.approx(noise.early, abs=0.03)


def test_draw_world_demand_error_is_ar1_with_sigma() -> None:
    slots = 2000
    inst = build(
        {
            "name": "long",
            "horizon": {"slots": slots},
            "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 8}],
            "services": [
                {"name": "chat", "pool": "a", "gpus_per_replica": 1, "demand": [2.0] * slots}
            ],
            "jobs": [],
        }
    )
    w = draw_world(inst, Noise(demand=0.2), 0)
    e = np.log(w.demand[0] / 2.0)
    assert e.std() == pytest.approx(0.2, abs=0.02)
    assert np.corrcoef(e[:-1], e[1:])[0, 1] == pytest.approx(0.8, abs=0.05)


# -- policy --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["fifo", "fifo-elastic", "backfill", "backfill-static"])
def test_online_policies(name: str) -> None:
    p = policy(name, 4, 2)
    assert p == Policy(name, name, None)
    assert p.online and not p.open_loop
    assert not any(p.due(t) for t in range(10))  # they plan at events instead


@pytest.mark.parametrize("name", ["greedy", "cpsat"])
def test_periodic_policies(name: str) -> None:
    p = policy(name, 3, 2)
    assert p == Policy(name, name, 3, 2)
    assert not p.online and not p.open_loop
    assert p.fill == "backfill"
    assert [t for t in range(10) if p.due(t)] == [0, 3, 6, 9]


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_open_loop_policies(solver: str) -> None:
    p = policy(f"{solver}-open", 3, 2)
    assert (p.name, p.solver, p.every, p.open_loop) == (f"{solver}-open", solver, None, True)
    assert not p.online
    assert [t for t in range(10) if p.due(t)] == [0]


@pytest.mark.parametrize("name", ["nope", "nope-open", "cpsat-open-open", "FIFO", ""])
def test_unknown_policy_names_the_option(name: str) -> None:
    with pytest.raises(InputError) as caught:
        policy(name, 2, 0)
    [problem] = caught.value.problems
    assert problem.startswith("--policy: unknown policy")
    assert repr(name) in problem


# -- replay --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["fifo", "fifo-elastic", "backfill", "backfill-static", "greedy", "cpsat"]
)
def test_every_policy_realizes_everything_without_noise(toy: Instance, name: str) -> None:
    r = replay(toy, draw_world(toy, NONE, 0), policy(name, 2, 1), FAST)
    assert_sane(r, toy)
    assert r.policy == name and r.planned_pwo is None
    assert r.realized_pwo == pytest.approx(TOY_PWO)
    assert (r.completed, r.failed, r.cancelled, r.preemptions) == (4, 0, 0, 0)
    assert r.realized_utilization == pytest.approx(TOY_UTILIZATION)
    assert (r.lost_gpu_hours, r.slo_short_replica_hours, r.slo_short_share) == (0.0, 0.0, 0.0)
    if name in ("greedy", "cpsat"):
        assert r.replans == 5  # slots 0, 2, 4, 6, 8: every 2 of 10
        assert r.mean_moved >= 0.0
    else:
        assert r.replans == r.decisions


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_open_loop_realizes_its_plan_without_noise(toy: Instance, solver: str) -> None:
    """Nothing strays (no noise, headroom 0 but demand = forecast, so no preemption): the one
    plan at slot 0 runs as planned, and its pwo is realized in full (48, as above)."""
    r = replay(toy, draw_world(toy, NONE, 0), policy(f"{solver}-open", 2, 1), FAST)
    assert_sane(r, toy)
    assert (r.decisions, r.replans) == (1, 1)
    assert r.planned_pwo == pytest.approx(TOY_PWO)
    assert r.realized_pwo == pytest.approx(r.planned_pwo)
    assert r.preemptions == 0 and r.slo_short_replica_hours == 0.0


@pytest.mark.parametrize("name", ["fifo", "greedy-open"])
def test_a_job_ending_at_the_horizon_end_is_realized(name: str) -> None:
    """EDGE: `whole` runs slots 0-3 and ends at slot 4 = S, which a plan counts (end <= S):
    planned pwo 16, and with no noise it must be realized too."""
    inst = build(EDGE)
    r = replay(inst, draw_world(inst, NONE, 0), policy(name, 2, 0), FAST)
    assert (r.completed, r.realized_pwo) == (1, 16.0)


@pytest.mark.parametrize("name", ["fifo", "backfill", "greedy", "cpsat", "cpsat-open"])
def test_a_failed_job_earns_nothing_and_cancels_its_successors(toy: Instance, name: str) -> None:
    """train fails after ceil(0.5 * 3) = 2 slots: its 24 and ev's 4 are lost (ev is cancelled),
    quant and batch still earn 12 + 8 = 20."""
    w = world(toy, {"train": 0.5}, fails={"train"})
    r = replay(toy, w, policy(name, 2, 1), FAST)
    assert_sane(r, toy)
    assert r.realized_pwo == pytest.approx(20.0)
    assert (r.completed, r.failed, r.cancelled) == (2, 1, 1)


@pytest.mark.parametrize("name", ["cpsat-oracle", "backfill-oracle"])
def test_the_top_rung_never_plans_a_job_that_fails(toy: Instance, name: str) -> None:
    """Told the outcomes, the top rung never starts train (it fails) nor ev (it would be
    cancelled): no run fails, quant and batch earn the same 12 + 8 = 20."""
    w = world(toy, {"train": 0.5}, fails={"train"})
    r = replay(toy, w, policy(name, 2, 1), FAST)
    assert_sane(r, toy)
    assert r.realized_pwo == pytest.approx(20.0)
    assert (r.completed, r.failed, r.cancelled) == (2, 0, 0)
    assert r.audit is not None and {run.job for run in r.audit.runs} == {"quant", "batch"}


def test_cancellation_runs_down_the_chain() -> None:
    """a <- b <- c, plus d on its own: a fails, b and c are cancelled, only d (value 1) earns."""
    spec: Spec = {
        "name": "chain",
        "horizon": {"slots": 6},
        "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 2}],
        "jobs": [
            {"id": "a", "priority": 1, "gpus": 1, "duration": 2},
            {"id": "b", "priority": 1, "gpus": 1, "duration": 1, "after": ["a"]},
            {"id": "c", "priority": 1, "gpus": 1, "duration": 1, "after": ["b"]},
            {"id": "d", "priority": 1, "gpus": 1, "duration": 2},
        ],
    }
    inst = build(spec)  # slot_minutes default 60: value = gpus * duration
    for name in ("backfill", "greedy"):
        r = replay(inst, world(inst, {"a": 0.5}, fails={"a"}), policy(name, 2, 0), FAST)
        assert_sane(r, inst)
        assert (r.completed, r.failed, r.cancelled, r.realized_pwo) == (1, 1, 2, 2.0)


@pytest.mark.parametrize("name", ["fifo", "backfill", "greedy", "cpsat", "cpsat-open"])
def test_demand_above_the_reservation_preempts_the_lowest_value_job(
    preempt: Instance, name: str
) -> None:
    """PREEMPT with actual demand 2 at slot 2 (forecast 1, so 1 replica reserved) and 4.5 at
    slot 7:
    - slot 2: 1 replica missing, a-0 has no free GPU; lo (value 6) is the lowest-value job on
      chat's pool (side, value 3, is on b and stays): lo is preempted, its 2 GPUs serve the
      replica. It lost 2 GPUs * 2 slots * 0.5 h = 2 GPU-hours. The closed-loop policies plan
      with an open end, so they start it again at slot 3 (to end at 9, past the replay's 8);
      the open-loop one never plans again. hi (24) and side (3) complete: realized 27.
    - slot 7: hi has ended; need ceil(4.5) = 5, 1 reserved + 2 free GPUs / 2 = 1 extra, and lo,
      where it runs again, is preempted for 1 more (4 slots * 2 GPUs * 0.5 h = 4 GPU-hours
      lost): 3 served either way, 4.5 - 3 = 1.5 replicas short for a slot of 0.5 h = 0.75
      replica-hours.
    SLO short share 1.5 / (6 * 1 + 2 + 4.5). Utilization: batch 2 * 2 (lo) + 2 * 6 + 1 * 6 = 22,
    and 2 * 4 more where lo runs again; inference GPUs 2 * 6 + 4 + 6 = 22; of 6 * 8 + 4 * 8 = 80
    GPU-slots."""
    w = world(preempt, demand={0: {2: 2.0, 7: 4.5}})
    r = replay(preempt, w, policy(name, 2, 1), FAST)
    assert_sane(r, preempt)
    again = name != "cpsat-open"
    assert r.preemptions == (2 if again else 1)
    assert r.lost_gpu_hours == pytest.approx(6.0 if again else 2.0)
    assert r.realized_pwo == pytest.approx(27.0)
    assert (r.completed, r.failed, r.cancelled) == (2, 0, 0)
    assert r.slo_short_replica_hours == pytest.approx(0.75)
    assert r.slo_short_share == pytest.approx(1.5 / 12.5)
    assert r.realized_utilization == pytest.approx((52 if again else 44) / 80)


def test_preemption_goes_on_while_demand_is_short(preempt: Instance) -> None:
    """Actual demand 4.5 at slot 2: need 5, 1 reserved, 4 missing, a-0 full. lo goes first (1
    replica), then hi (1 more), then chat's pool has no job left: 3 replicas serve 4.5, 1.5 are
    short (0.75 replica-hours). Lost: (2 + 2) GPUs * 2 slots * 0.5 h = 4 GPU-hours; only side
    (3) completes."""
    r = replay(preempt, world(preempt, demand={0: {2: 4.5}}), policy("backfill", 2, 1), FAST)
    assert_sane(r, preempt)
    assert (r.preemptions, r.completed) == (2, 1)
    assert r.lost_gpu_hours == pytest.approx(4.0)
    assert r.realized_pwo == pytest.approx(3.0)
    assert r.slo_short_replica_hours == pytest.approx(0.75)


# NODES: two nodes of 4 GPUs, a service of whole-node replicas with no demand forecast. Backfill
# (priority order) puts dear (value 5 * 2 GPUs * 6 slots * 0.5 h = 30) on node a-0, mid (2 * 4 *
# 6 * 0.5 = 24) on a-1, and cheap (1 * 2 * 6 * 0.5 = 6) beside dear.
NODES: Spec = {
    "name": "nodes",
    "horizon": {"slots": 8, "slot_minutes": 30},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 2, "gpus_per_node": 4}],
    "services": [{"name": "chat", "pool": "a", "gpus_per_replica": 4, "demand": [0] * 8}],
    "jobs": [
        {"id": "dear", "priority": 5, "gpus": 2, "duration": 6},
        {"id": "mid", "priority": 2, "gpus": 4, "duration": 6},
        {"id": "cheap", "priority": 1, "gpus": 2, "duration": 6},
    ],
}


def test_preemption_frees_a_replica_on_the_node_where_it_stops_least_value() -> None:
    """NODES with actual demand 1 at slot 2: a whole node must be freed. Stopping cheap alone
    frees 2 GPUs of a-0, not a replica's 4; on a-0 it takes cheap and dear (most valuable
    victim 30), on a-1 mid alone (24): mid is stopped, cheap and dear complete (36), as a
    Kubernetes scheduler preempts for a pod. Pool-wide, lowest value first, would have stopped
    cheap for nothing and then mid."""
    inst = build(NODES)
    r = replay(inst, world(inst, demand={0: {2: 1.0}}), policy("backfill", 2, 0), FAST)
    assert_sane(r, inst)
    assert r.audit is not None
    stopped = [(run.job, sorted(run.gpus)) for run in r.audit.runs if run.outcome == "preempted"]
    assert stopped == [("mid", ["a-1"])]
    assert r.realized_pwo == pytest.approx(36.0)


def test_early_ends_let_an_online_policy_start_the_next_job_sooner() -> None:
    """QUEUE: with no noise `first` runs 0-4 and `second` 4-6, so by slot 4 only first's 16 is
    realized. When first ends early (share 0.5: 2 slots) backfill re-plans at slot 2 and second
    runs 2-4: 16 + 8 = 24 by slot 4. The open-loop plan keeps second at slot 4."""
    inst = build(QUEUE)
    planned = replay(inst, world(inst), policy("backfill", 2, 0), FAST)
    early = replay(inst, world(inst, {"first": 0.5}), policy("backfill", 2, 0), FAST)
    open_loop = replay(inst, world(inst, {"first": 0.5}), policy("backfill-open", 2, 0), FAST)
    assert planned.realized_by_slot[:7] == [0, 0, 0, 0, 16, 16, 24]
    assert early.realized_by_slot[:5] == [0, 0, 16, 16, 24]
    assert open_loop.realized_by_slot[:7] == [0, 0, 16, 16, 16, 16, 24]
    for r in (planned, early, open_loop):
        assert r.realized_pwo == 24.0


def test_a_start_predicted_two_hours_ahead_is_a_promise_and_its_error_is_reported() -> None:
    """QUEUE (slots of 60 minutes): backfill's first plan starts `second` at slot 4, 4 hours
    ahead: a promise. When `first` ends at slot 2, second starts then: 2 hours early. `first`
    starts now, no promise. Without noise the promise holds: error 0."""
    inst = build(QUEUE)
    whole = Window(0, inst.slots)  # the promise is made at 0: count every one
    early = replay(inst, world(inst, {"first": 0.5}), policy("backfill", 2, 0), FAST, window=whole)
    assert (early.promised, early.promise_error_hours) == (1, 2.0)
    exact = replay(inst, world(inst), policy("backfill", 2, 0), FAST, window=whole)
    assert (exact.promised, exact.promise_error_hours) == (1, 0.0)
    # in the default window (the middle half) it was made in the warm-up: no promise counts
    assert replay(inst, world(inst), policy("backfill", 2, 0), FAST).promised == 0


@pytest.mark.parametrize("solver", sorted(SOLVERS))
@pytest.mark.parametrize("mode", ["online", "periodic", "every-slot", "open"])
def test_every_solver_replays_in_every_mode(toy: Instance, solver: str, mode: str) -> None:
    """Every solver as an online, periodic (every 2 or every slot) or open-loop policy, in noisy
    worlds (jobs fail and end early, demand strays far): the engine raises RuntimeError if it
    ever overfills a node or builds a state that does not compile."""
    p = {
        "online": Policy(f"{solver}-online", solver, None),
        "periodic": Policy(f"{solver}-periodic", solver, 2, 1),
        "every-slot": Policy(f"{solver}-every", solver, 1, 0),
        "open": Policy(f"{solver}-open", solver, None, open_loop=True),
    }[mode]
    instances = [toy, build(TINY), build(PREEMPT)]
    if solver != "cpsat":
        instances.append(build(MIXED))
    for inst in instances:
        for seed in range(2):
            w = draw_world(inst, Noise(early=0.5, fail=0.3, demand=0.5), seed)
            assert_sane(replay(inst, w, p, FAST), inst)


def test_replay_refuses_a_state(toy: Instance) -> None:
    spec = copy.deepcopy(TOY)
    spec["now"] = 1
    inst = build(spec)
    with pytest.raises(InstanceError, match="empty cluster"):
        replay(inst, draw_world(inst, NONE, 0), policy("fifo", 2, 0))


# -- simulate and the report ---------------------------------------------------------------------


def test_simulate_replays_every_policy_in_the_same_world(toy: Instance) -> None:
    w = draw_world(toy, Noise(), 5)
    chosen = [policy(n, 2, 1) for n in ("fifo", "backfill", "greedy", "greedy-open")]
    lines: list[tuple[str, str]] = []
    out = simulate(toy, chosen, w, FAST, on_decision=lambda p, line: lines.append((p, line)))
    assert [r.policy for r in out] == ["fifo", "backfill", "greedy", "greedy-open"]
    for p, r in zip(chosen, out, strict=True):
        alone = replay(toy, w, p, FAST)
        assert (alone.realized_pwo, alone.completed, alone.decisions) == (
            r.realized_pwo,
            r.completed,
            r.decisions,
        )
        mine = [line for name, line in lines if name == p.name]
        assert len(mine) == r.decisions
        assert all(line.startswith("slot ") and " pwo " in line for line in mine)


@pytest.fixture(scope="module")
def replays(toy: Instance) -> list[Replay]:
    names = ("fifo", "backfill", "greedy", "greedy-open")
    return simulate(toy, [policy(n, 2, 1) for n in names], draw_world(toy, NONE, 0), FAST)


def test_rows_and_csv(replays: list[Replay]) -> None:
    table = rows(replays)
    assert [row["policy"] for row in table] == ["fifo", "backfill", "greedy", "greedy-open"]
    for row in table:
        assert "realized_by_slot" not in row
        assert row["vs_fifo"] == pytest.approx(0.0)  # everyone realizes 48
        assert row["vs_backfill"] == pytest.approx(0.0)
    assert table[3]["planned_pwo"] == pytest.approx(TOY_PWO)
    parsed = list(csv.DictReader(io.StringIO(to_csv(replays))))
    assert [p["policy"] for p in parsed] == [row["policy"] for row in table]
    assert {"realized_pwo", "vs_fifo", "vs_backfill", "slo_short_share"} <= set(parsed[0])
    assert float(parsed[0]["realized_pwo"]) == TOY_PWO


def test_rows_without_a_baseline(replays: list[Replay]) -> None:
    table = rows([r for r in replays if r.policy != "fifo"])
    assert all("vs_fifo" not in row and "vs_backfill" in row for row in table)
    assert all("vs_" not in k for k in rows(replays[2:])[0])


def test_rows_relative_to_the_baselines(replays: list[Replay]) -> None:
    halved = [replace(replays[0], realized_pwo=24.0), *replays[1:]]
    table = rows(halved)
    assert table[1]["vs_fifo"] == pytest.approx(1.0)  # 48 / 24 - 1
    assert table[0]["vs_backfill"] == pytest.approx(-0.5)  # 24 / 48 - 1
    assert "| fifo | - | 24 | +0.0% | -50.0% |" in format_table(halved)


def test_format_table(replays: list[Replay]) -> None:
    lines = format_table(replays).splitlines()
    assert lines[0].startswith("| policy | planned pwo | realized pwo | vs fifo | vs backfill |")
    assert set(lines[1].replace("|", "").split()) == {"---"}
    assert len(lines) == 2 + len(replays)
    assert [line.split("|")[1].strip() for line in lines[2:]] == [r.policy for r in replays]
    assert lines[-1].startswith("| greedy-open | 48 | 48 | +0.0% | +0.0% | - | 60.0% |")
    # a policy that made no promise in the window has no promise figures, not a 0% coverage
    none = replace(replays[0], promised=0, promise_p90_coverage=0.0)
    assert "| - / - (-, 0) |" in format_table([none])


def test_plot_realized(toy: Instance, replays: list[Replay]) -> None:
    fig = plot_realized(toy, replays)
    assert isinstance(fig, Figure)
    [ax] = fig.axes
    assert len(ax.get_lines()) == len(replays) + 1  # one realized line each, one planned level
    own = Figure()
    left, right = own.add_subplot(1, 2, 1), own.add_subplot(1, 2, 2)
    assert plot_realized(toy, replays, ax=right) is own
    assert right.get_lines() and not left.get_lines()


def test_plot_realized_steps_when_jobs_end() -> None:
    """QUEUE without noise: first ends at slot 4 = 4 h (16), second at slot 6 = 6 h (+8)."""
    inst = build(QUEUE)
    r = replay(inst, world(inst), policy("backfill", 2, 0), FAST)
    line = plot_realized(inst, [r]).axes[0].get_lines()[0]
    at = dict(zip(line.get_xdata(), line.get_ydata(), strict=True))
    assert (at[4.0], at[6.0]) == (16.0, 24.0)


# -- the command ---------------------------------------------------------------------------------


def write_instance(tmp_path: Path, data: Spec, name: str = "toy.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def simulate_args(instance: Path, out: Path, *extra: str) -> list[str]:
    return ["simulate", str(instance), "-o", str(out), "-t", "1", "--workers", "2", *extra]


def test_cli_simulate_writes_the_results(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = simulate_args(write_instance(tmp_path, TOY), out, "--policy", "fifo,backfill,greedy")
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    audits = [f"{p}.{kind}" for p in ("fifo", "backfill", "greedy") for kind in AUDIT]
    expected = ["realized.png", "results.csv", "summary.md", "world.yaml", *audits]
    assert sorted(p.name for p in out.iterdir()) == sorted(expected)
    parsed = list(csv.DictReader(io.StringIO((out / "results.csv").read_text())))
    assert [p["policy"] for p in parsed] == ["fifo", "backfill", "greedy"]
    summary = (out / "summary.md").read_text()
    assert summary.startswith("# toy: closed-loop replay")
    assert "world: cluster, seed 0;" in summary
    assert "cpsat 1 s per plan, seed 0;" in summary
    assert summary.count("\n| ") == 2 + 3  # header, separator, one row per policy
    assert (out / "realized.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "# toy: closed-loop replay" in result.stdout


def test_cli_simulate_no_charts_and_no_noise(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = simulate_args(
        write_instance(tmp_path, TOY),
        out,
        "--policy",
        "fifo, greedy-open",
        "--world",
        "synthetic",
        "--noise",
        "none",
        "--no-charts",
        "--replan-every",
        "3",
    )
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    audits = [f"{p}.{kind}" for p in ("fifo", "greedy-open") for kind in AUDIT]
    expected = ["results.csv", "summary.md", "world.yaml", *audits]
    assert sorted(p.name for p in out.iterdir()) == sorted(expected)
    parsed = list(csv.DictReader(io.StringIO((out / "results.csv").read_text())))
    assert [(p["policy"], float(p["realized_pwo"])) for p in parsed] == [
        ("fifo", TOY_PWO),
        ("greedy-open", TOY_PWO),
    ]
    assert "world: synthetic (early=0,fail=0,demand=0)" in (out / "summary.md").read_text()


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--world", "synthetic", "--noise", "early=2"], "--noise: early must be from 0 to 1"),
        (["--world", "trace", "--noise", "loud=1"], "--noise: 'loud=1' is not one of"),
        (["--noise", "none"], "--noise: the cluster world draws its own noise"),
        (["--world", "cluster", "--noise", "none"], "--noise: the cluster world draws its own"),
        (["--policy", "fifo,nope"], "--policy: unknown policy 'nope'"),
        (["--policy", " , "], "--policy: name at least one policy"),
        (["--replan-every", "2x"], "--replan-every: not a duration: '2x'"),
        (["--replan-every", "0h"], "--replan-every: must be more than 0, got '0h'"),
        (["--freeze", "soon"], "--freeze: not a duration: 'soon'"),
        (["--world", "mars"], "--world: unknown world 'mars'"),
        (["--world", "trace", "--actual", "w.yaml"], "--actual: a world file replaces"),
        (["--world", "cluster", "--actual", "w.yaml"], "--actual: a world file replaces"),
        (["--noise", "none", "--actual", "w.yaml"], "--noise: a world file replaces"),
    ],
)
def test_cli_simulate_bad_options(tmp_path: Path, extra: list[str], fragment: str) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, simulate_args(write_instance(tmp_path, TOY), out, *extra))
    assert result.exit_code == 2, result.output
    assert fragment in result.output
    assert "Traceback" not in result.output
    assert not out.exists()


StateEdit = Callable[[dict[str, Any]], None]


def _with_now(data: dict[str, Any]) -> None:
    data["now"] = 1


def _with_placed(data: dict[str, Any]) -> None:
    data["jobs"][0]["placed"] = {"pool": "a", "start": 0, "gpus": {"a-0": [0, 1, 2, 3]}}


@pytest.mark.parametrize("edit", [_with_now, _with_placed], ids=["now", "placed"])
def test_cli_simulate_refuses_a_state(tmp_path: Path, edit: StateEdit) -> None:
    data = copy.deepcopy(TOY)
    edit(data)
    out = tmp_path / "out"
    result = runner.invoke(app, simulate_args(write_instance(tmp_path, data), out))
    assert result.exit_code == 2, result.output
    assert "simulate replays a horizon from an empty cluster" in result.output
    assert "leave out `now` and `placed`" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert not out.exists()


@pytest.mark.parametrize(
    ("name", "every", "freeze", "predict"),
    [
        ("cpsat@30m/0", 1, 0, None),  # 30-minute slots
        ("cpsat@2h/1h", 4, 2, None),
        ("greedy@45m/10m", 2, 1, None),  # rounded up to slots
        ("cpsat-predict@30m/0m", 1, 0, 0.5),
        ("cpsat", 4, 4, None),  # the command's own cadence
    ],
)
def test_a_policy_may_carry_its_own_cadence(
    name: str, every: int, freeze: int, predict: float | None
) -> None:
    p = policy(name, 4, 4, slot_minutes=30)
    assert (p.every, p.freeze, p.predict, p.name) == (every, freeze, predict, name)


@pytest.mark.parametrize("name", ["backfill@30m/0", "cpsat@30m", "cpsat@soon/0", "cpsat-open@1h/0"])
def test_a_cadence_only_for_a_re_planning_policy_with_two_durations(name: str) -> None:
    with pytest.raises(InputError, match="--policy"):
        policy(name, 4, 4, slot_minutes=30)


def test_cli_simulate_seeds_the_world_and_the_solver_apart(tmp_path: Path) -> None:
    """`--seed` draws the world, `--solver-seed` seeds cpsat: the same world for two solver
    seeds, another world for another seed (the benchmarks' rule)."""
    path = write_instance(tmp_path, TOY)
    worlds = []
    for seed, solver in (("3", "0"), ("3", "1"), ("4", "0")):
        out = tmp_path / f"out-{seed}-{solver}"
        extra = ("--policy", "fifo", "--no-charts", "--seed", seed, "--solver-seed", solver)
        result = runner.invoke(app, simulate_args(path, out, *extra))
        assert result.exit_code == 0, result.output
        assert f"seed {seed};" in result.stdout and f"per plan, seed {solver};" in result.stdout
        worlds.append((out / "world.yaml").read_text())
    assert worlds[0] == worlds[1] != worlds[2]
