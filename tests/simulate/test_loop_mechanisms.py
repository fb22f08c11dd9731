"""The loop's mechanisms, each on a hand-sized case where it must change a decision:
re-planning at every event (`@event`) and planning on learned run times (`-expect`, and
`-pack` without bets).

Every replay's plans are checked by the engine itself (it raises on an invalid plan or a state
that does not compile); each case's decisions are worked out in its docstring.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest
from conftest import QUEUE, build

from horizon_opt.errors import InputError
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.plans.check import check
from horizon_opt.simulate import Noise, World, draw_world, policy, replay
from horizon_opt.simulate.audit import actual_spec, ran_plan
from horizon_opt.simulate.replay_figures import Replay
from horizon_opt.simulate.runtimes import RunTimes
from horizon_opt.solvers import SolveOptions

FAST = SolveOptions(time_limit=1.0, workers=1, seed=0)


def world_of(inst: Instance, shares: dict[str, float]) -> World:
    """Warm-ups (`w*`) end after half their limit, every other job runs its limit unless
    `shares` says otherwise; demand is the forecast."""
    run_share = {j.id: 0.5 if j.id.startswith("w") else 1.0 for j in inst.jobs} | shares
    return World(run_share, frozenset(), tuple(s.demand.astype(float) for s in inst.services))


def starts(r: Replay) -> dict[str, int]:
    assert r.audit is not None
    return {run.job: run.start for run in r.audit.runs}


def audit_holds(instance: Instance, r: Replay) -> None:
    """What really ran passes `check` and recomputes the realized pwo and utilization."""
    assert r.audit is not None
    actual = compile_instance(actual_spec(instance, r.audit, r.policy))
    plan = ran_plan(actual, instance, r.audit, r.policy)
    assert check(actual, plan) == []
    assert plan.metrics.pwo == pytest.approx(r.realized_pwo, rel=1e-12)
    assert plan.metrics.utilization == pytest.approx(r.realized_utilization, rel=1e-12)


def warmed(
    jobs: list[dict[str, object]], slots: int = 8, services: Sequence[dict[str, object]] = ()
) -> Instance:
    """One node of 16 GPUs, `slots` slots of 60 minutes, and ten warm-ups w0..w9 (1 GPU, limit
    2) that start at slot 0 and, in `world_of`, end after one slot: at slot 1 ten runs of ratio
    0.5 have ended, enough to predict (median 0.5)."""
    warm = [{"id": f"w{i}", "priority": 1, "gpus": 1, "duration": 2} for i in range(10)]
    return build(
        {
            "name": "warmed",
            "horizon": {"slots": slots, "slot_minutes": 60},
            "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 16}],
            "services": list(services),
            "jobs": warm + jobs,
        }
    )


# -- @event ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "freeze"), [("cpsat@event", 0), ("cpsat@event/1h", 2), ("greedy@event/0", 0)]
)
def test_an_event_cadence_re_plans_at_events_only(name: str, freeze: int) -> None:
    p = policy(name, 4, 4, slot_minutes=30)
    assert (p.at_events, p.every, p.freeze, p.online) == (True, None, freeze, False)
    assert not any(p.due(t) for t in range(10))


@pytest.mark.parametrize("name", ["backfill@event", "cpsat-open@event", "cpsat@events"])
def test_an_event_cadence_only_for_a_re_planning_policy(name: str) -> None:
    with pytest.raises(InputError, match="--policy"):
        policy(name, 4, 4, slot_minutes=30)


def test_re_planning_at_an_event_starts_what_an_early_end_frees() -> None:
    """QUEUE (conftest): `first` (limit 4) then `second` (limit 2) on one 4-GPU node; `first`
    ends at slot 2 (half its limit). cpsat re-planning every 4 slots holds second's promised
    start at 4 between re-plans (the fill keeps every promise): second runs 4-6; starting early
    it runs 2-4, on the node nothing else is planned on then. cpsat@event re-plans at slot 2,
    the event, holding nothing: second runs 2-4."""
    inst = build(QUEUE)
    w = world_of(inst, {"first": 0.5})
    periodic = policy("cpsat", 4, 4)
    early = replay(inst, w, replace(periodic, start_early=True), FAST)
    at_events = replay(inst, w, policy("cpsat@event", 4, 4, slot_minutes=60), FAST)
    assert starts(replay(inst, w, periodic, FAST))["second"] == 4
    assert starts(early)["second"] == 2
    assert starts(at_events)["second"] == 2
    assert at_events.replans == at_events.decisions == 3  # slot 0, the ends at 2 and 4


# -- -expect --------------------------------------------------------------------------------------


def test_a_running_job_is_predicted_on_the_runs_that_lasted_as_long() -> None:
    """Ratios 0.2, 0.4, 0.6, 0.8, 1.0: a job that has run half its limit is predicted on 0.6,
    0.8 and 1.0 (median 0.8); past every ratio, on its limit; too few such runs, the limit."""
    rt = RunTimes(0.5, min_runs=1)
    for r in (2, 4, 6, 8, 10):
        rt.observe(r, 10)
    assert rt.ratio_after(0.5) == pytest.approx(0.8)
    assert rt.ratio_after(1.0) == 1.0
    assert RunTimes(0.5, min_runs=4).ratio_after(0.5) == 1.0


def test_expected_ends_hold_a_reservation_that_limits_would_backfill() -> None:
    """`first` (6 GPUs, limit 4) runs from slot 0 beside the warm-ups and really ends at 2.
    At slot 1 `gang` (16 GPUs, limit 2, priority 5) and `small` (8 GPUs, limit 3) arrive.
    backfill on limits reserves gang at 4, first's limit, and small (1 + 3 <= 4) backfills at
    1, so when first ends at 2 gang waits for small: gang 4-6. backfill-expect predicts first's
    end at 2 (half its limit, as the warm-ups ran): small would delay gang and waits; gang
    starts at 2 when first ends, and small after it (planned at 3, its predicted end, it waits for
    gang's real end at 4)."""
    inst = warmed(
        [
            {"id": "first", "priority": 1, "gpus": 6, "duration": 4},
            {"id": "gang", "priority": 5, "gpus": 16, "duration": 2, "release": 1},
            {"id": "small", "priority": 1, "gpus": 8, "duration": 3, "release": 1},
        ]
    )
    w = world_of(inst, {"first": 0.5})
    limits = starts(replay(inst, w, policy("backfill", 4, 4), FAST))
    expect = starts(replay(inst, w, policy("backfill-expect", 4, 4), FAST))
    assert (limits["small"], limits["gang"]) == (1, 4)
    assert (expect["gang"], expect["small"]) == (2, 4)


def test_a_job_that_outlives_its_prediction_keeps_running() -> None:
    """Horizon 6. `big` (16 GPUs, limit 6, released at 1) is planned on 3 slots and starts at
    1; it really runs its whole limit, past the horizon. `next` (16 GPUs, limit 1, released at
    4) is planned after big's predicted end, and when big outlives it big is predicted again
    (no ended run lasted that long: its limit), so next waits: no preemption, unlike a bet of
    `-predict`, which a planned start takes back. Realized: the warm-ups' 20."""
    inst = warmed(
        [
            {"id": "big", "priority": 2, "gpus": 16, "duration": 6, "release": 1},
            {"id": "next", "priority": 1, "gpus": 16, "duration": 1, "release": 4},
        ],
        slots=6,
    )
    r = replay(inst, world_of(inst, {}), policy("backfill-expect", 4, 4), FAST)
    assert (r.realized_pwo, r.preemptions) == (20, 0)
    assert r.audit is not None
    big = [(run.start, run.end, run.outcome) for run in r.audit.runs if run.job == "big"]
    assert big == [(1, 6, "unfinished")]  # held to the horizon's end, earning nothing
    audit_holds(inst, r)


@pytest.mark.parametrize("name", ["backfill-expect", "cpsat-expect@event"])
def test_a_job_that_outlives_its_prediction_into_inference_gives_way(name: str) -> None:
    """`long` (16 GPUs, limit 4, released at 1) is expected to run 2 slots: planned 1-3, beside
    a service of one 8-GPU replica from slot 3 on; on its limit it would meet the replica and
    never start. It really runs its limit. At slot 3 it outlives its prediction: a decision
    there predicts it again (to its limit, 5) and reserves only what it leaves (nothing), and
    inference, needing its replica, preempts it: 16 GPUs x 2 h lost, no demand short, no node
    ever over capacity (the engine raises if one is)."""
    chat = {"name": "chat", "pool": "a", "gpus_per_replica": 8, "demand": [0] * 3 + [1] * 5}
    inst = warmed(
        [{"id": "long", "priority": 2, "gpus": 16, "duration": 4, "release": 1}],
        services=[chat],
    )
    r = replay(inst, world_of(inst, {}), policy(name, 4, 4, slot_minutes=60), FAST)
    assert r.audit is not None
    runs = [(run.start, run.end, run.outcome) for run in r.audit.runs if run.job == "long"]
    assert runs == [(1, 3, "preempted")]
    assert (r.preemptions, r.lost_gpu_hours, r.slo_short_share) == (1, 32.0, 0.0)
    audit_holds(inst, r)


def test_packing_on_learned_run_times_bets_on_nothing() -> None:
    """Horizon 8; at slot 1 the warm-ups say jobs run half their limit. `long` (16 GPUs,
    limit 8, value 256, deadline 8) can end in time only on its prediction (1 + 4 <= 8, but
    1 + 8 > 8); `other` (16 GPUs, limit 3, value 48) either way. cpsat-expect@event bets: long 1-5, other
    after it; long really runs its limit and is still running when the horizon ends, other never
    starts: the warm-ups' 20. cpsat-pack@event counts long on time only if its limit is (its due
    slot moves from 8 to 4): other runs 1-4, long never starts: 20 + 48."""
    inst = warmed(
        [
            {"id": "long", "priority": 2, "gpus": 16, "duration": 8, "release": 1, "deadline": 8},
            {"id": "other", "priority": 1, "gpus": 16, "duration": 3, "release": 1},
        ]
    )
    w = world_of(inst, {})
    expect = replay(inst, w, policy("cpsat-expect@event", 4, 4, slot_minutes=60), FAST)
    pack = replay(inst, w, policy("cpsat-pack@event", 4, 4, slot_minutes=60), FAST)
    assert (starts(expect)["long"], "other" in starts(expect)) == (1, False)
    assert (starts(pack)["other"], "long" in starts(pack)) == (1, False)
    assert (expect.realized_pwo, pack.realized_pwo) == (20, 68)
    audit_holds(inst, pack)


@pytest.mark.parametrize(
    "name", ["backfill-expect", "cpsat-expect@event", "greedy-expect", "cpsat-pack@event"]
)
def test_expect_replays_noisy_worlds(name: str) -> None:
    """Jobs fail, end early and demand strays: the engine checks every plan and state."""
    inst = warmed(
        [
            {"id": f"j{i}", "priority": 1 + i % 3, "gpus": 4 * (1 + i % 4), "duration": 2 + i % 4}
            for i in range(8)
        ]
    )
    for seed in range(2):
        w = draw_world(inst, Noise(early=0.5, fail=0.3, demand=0.5), seed)
        r = replay(inst, w, policy(name, 2, 1, slot_minutes=60), FAST)
        assert r.replans >= 1
        audit_holds(inst, r)
