"""Run-time predictions in the loop (`simulate.runtimes`) and the `-predict` policies.

The learner is checked on hand-made ratios; the replays on hand-sized instances whose every
prediction and every decision is worked out in the comments.
"""

from __future__ import annotations

import pytest
from conftest import build

from horizon_opt.loop.snapshot import Running
from horizon_opt.model.instance import Instance
from horizon_opt.simulate import World, policy, replay
from horizon_opt.simulate.predictions import PredictionLog
from horizon_opt.simulate.runtimes import Predicted, RunTimes
from horizon_opt.solvers import SolveOptions

FAST = SolveOptions(time_limit=1.0, workers=2, seed=0)


def learned(*ratios: float, quantile: float = 0.5, min_runs: int = 1) -> RunTimes:
    rt = RunTimes(quantile, min_runs)
    for r in ratios:
        rt.observe(round(r * 100), 100)
    return rt


def test_before_enough_runs_a_prediction_is_the_limit() -> None:
    rt = learned(0.2, 0.2, min_runs=3)
    assert rt.ratio() == 1.0
    rt.observe(2, 10)
    assert rt.ratio() == pytest.approx(0.2)


def test_the_quantile_of_the_ratios() -> None:
    """Ratios 0.2, 0.4, 0.6, 0.8, 1.0: the median is 0.6, the 0.25 quantile 0.4 (linear
    interpolation, numpy's default)."""
    ratios = (0.2, 0.4, 0.6, 0.8, 1.0)
    assert learned(*ratios).ratio() == pytest.approx(0.6)
    assert learned(*ratios, quantile=0.25).ratio() == pytest.approx(0.4)


def test_ratios_are_capped_at_the_limit_and_the_quantile_checked() -> None:
    rt = learned(1.5)
    assert rt.ratios == [1.0]
    with pytest.raises(ValueError, match="quantile"):
        RunTimes(0.0)


# TRIM: one node of 4 GPUs, 4 slots; chat takes 2 GPUs per replica, forecast 1 replica at slots
# 0-1 and 2 replicas (the whole node) at slots 2-3. A 2-GPU job running from slot 0 and believed
# to end at slot 3 leaves room for one replica at slot 2: the forecast there is trimmed to what
# fits (req 1), and at slot 3, after the job, it stays 2.
TRIM = {
    "name": "trim",
    "horizon": {"slots": 4, "slot_minutes": 60},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4}],
    "services": [{"name": "chat", "pool": "a", "gpus_per_replica": 2, "demand": [1, 1, 2, 2]}],
    "jobs": [{"id": "long", "priority": 1, "gpus": 2, "duration": 4}],
}


def test_a_bet_is_planned_on_its_prediction_at_a_discount() -> None:
    """`long` (limit 4, priority 1) bet on with ratio 0.5 learned: 2 slots, priority 0.5 (it
    ends in time with probability 0.5); not bet on, it stays as it is."""
    inst = build(TRIM)
    told = Predicted(inst).told(learned(0.5), {}, predict={0})
    assert (told.jobs[0].durations, told.jobs[0].priority) == ({0: 2}, 0.5)
    told = Predicted(inst).told(learned(0.5), {}, predict=())
    assert (told.jobs[0].durations, told.jobs[0].priority) == ({0: 4}, 1.0)


def test_a_deadline_counts_as_met_when_the_due_quantile_of_the_run_times_meets_it() -> None:
    """`long` (limit 4) with a deadline at slot 4, ratios 0.2, 0.4, 0.6, 0.8, 1.0 learned: its
    median (0.6) plans it on 3 slots; the 0.9 quantile (0.92, 4 slots) is one slot more, so its
    deadline moves one slot earlier, to 3; without a due quantile it stays at 4."""
    due = {"id": "long", "priority": 1, "gpus": 2, "duration": 4, "deadline": 4}
    inst = build({**TRIM, "jobs": [due]})
    rt = learned(0.2, 0.4, 0.6, 0.8, 1.0)
    told = Predicted(inst).told(rt, {}, predict={0}, discount=False, due_quantile=0.9)
    assert (told.jobs[0].durations, told.jobs[0].deadline) == ({0: 3}, 3)
    told = Predicted(inst).told(rt, {}, predict={0}, discount=False)
    assert (told.jobs[0].durations, told.jobs[0].deadline) == ({0: 3}, 4)


def test_the_forecast_is_trimmed_where_a_job_on_borrowed_time_holds_gpus() -> None:
    inst = build(TRIM)
    predicted = Predicted(inst)
    told = predicted.told(learned(0.5), {0: Running(0, 0, {0: (0, 1)}, end=3)}, predict=())
    assert told.services[0].req.tolist() == [1, 1, 1, 2]
    # the trim lasts: a later state (the job gone) keeps the reservation its plans ran with
    assert predicted.told(learned(0.5), {}, predict=()).services[0].req.tolist() == [1, 1, 1, 2]


def warmed(extra: dict[str, object]) -> dict[str, object]:
    """One node of 16 GPUs, 8 slots of 60 minutes, and ten warm-ups w0..w9 (1 GPU, limit 2
    slots, priority 1: value 2 each) that all start at slot 0 and, in `world_of`, end after one
    slot: at slot 1 the policy has seen ten runs of ratio 0.5, enough to predict (median 0.5)."""
    spec: dict[str, object] = {
        "name": "warmed",
        "horizon": {"slots": 8, "slot_minutes": 60},
        "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 16}],
        "jobs": [{"id": f"w{i}", "priority": 1, "gpus": 1, "duration": 2} for i in range(10)],
    }
    jobs = spec["jobs"]
    assert isinstance(jobs, list)
    return (
        spec
        | {k: v for k, v in extra.items() if k != "jobs"}
        | {
            "jobs": jobs + list(extra.get("jobs", []))  # type: ignore[call-overload]
        }
    )


def world_of(inst: Instance, shares: dict[str, float]) -> World:
    run_share = {j.id: 0.5 if j.id.startswith("w") else 1.0 for j in inst.jobs} | shares
    return World(run_share, frozenset(), tuple(s.demand.astype(float) for s in inst.services))


def test_a_prediction_starts_a_job_whose_limit_would_miss_its_deadline() -> None:
    """`dl`: 16 GPUs, limit 8, priority 5, released at slot 1, deadline 6: value 5*16*8 = 640.
    At slot 1 its limit ends at 9, past the deadline even alone: backfill never starts it (20
    realized, the warm-ups). backfill-predict bets on it: 4 slots (median 0.5) at priority 2.5,
    1 + 4 <= 6: it starts, runs 4 slots in the world and earns 640 on time: 660."""
    inst = build(
        warmed(
            {
                "jobs": [
                    {
                        "id": "dl",
                        "priority": 5,
                        "gpus": 16,
                        "duration": 8,
                        "release": 1,
                        "deadline": 6,
                    }
                ]
            }
        )
    )
    w = world_of(inst, {"dl": 0.5})
    assert replay(inst, w, policy("backfill", 4, 4), FAST).realized_pwo == 20
    for name in ("backfill-predict", "cpsat-predict"):
        assert replay(inst, w, policy(name, 4, 4), FAST).realized_pwo == 660, name


def test_a_bet_that_outlives_its_prediction_into_an_outage_is_stopped_there() -> None:
    """`big`: 16 GPUs, limit 4, released at slot 1; the node is down at slots 4-5, the horizon
    ends at 8: its limit fits no window (1-5 meets the outage, 6-10 the end), so backfill never
    starts it. backfill-predict bets on 2 slots: it starts at 1; in the world it runs its whole
    limit. From slot 3, its planned end, it runs on borrowed time; at slot 4 the node goes down
    and it stops, preempted, having held 16 GPUs for 3 hours: 48 GPU-hours lost."""
    spec = warmed(
        {
            "outages": [{"node": "a-0", "start": 4, "end": 6}],
            "jobs": [{"id": "big", "priority": 2, "gpus": 16, "duration": 4, "release": 1}],
        }
    )
    inst = build(spec)
    w = world_of(inst, {})
    r = replay(inst, w, policy("backfill-predict", 4, 4), FAST)
    assert (r.realized_pwo, r.preemptions, r.lost_gpu_hours) == (20, 1, 48)
    stopped = [run for run in r.audit.runs if run.job == "big"] if r.audit else []
    # bet on again after the outage, it is still running when the horizon ends
    runs = [(run.start, run.end, run.outcome) for run in stopped]
    assert runs == [(1, 4, "preempted"), (6, 8, "unfinished")]
    assert replay(inst, w, policy("backfill", 4, 4), FAST).preemptions == 0


def test_inference_takes_back_what_a_bet_on_borrowed_time_holds() -> None:
    """As above without the outage, and a service of one 8-GPU replica from slot 4 on: no
    window holds big's limit beside it. Bet on, big runs slots 1-3 as planned, then on borrowed
    time; the plan made at slot 3 reserves the replica at slot 4 on its GPUs, so at slot 4
    inference takes them back: big is preempted (48 GPU-hours lost) and no demand goes short.
    cpsat-predict replays the same world with every plan checked (its slot-0 plan may start the
    warm-ups later, so its numbers are not worked out here)."""
    spec = warmed(
        {
            "services": [
                {"name": "chat", "pool": "a", "gpus_per_replica": 8, "demand": [0] * 4 + [1] * 4}
            ],
            "jobs": [{"id": "big", "priority": 2, "gpus": 16, "duration": 4, "release": 1}],
        }
    )
    inst = build(spec)
    r = replay(inst, world_of(inst, {}), policy("backfill-predict", 4, 4), FAST)
    assert (r.realized_pwo, r.preemptions, r.lost_gpu_hours) == (20, 1, 48)
    assert r.slo_short_share == 0.0
    assert replay(inst, world_of(inst, {}), policy("cpsat-predict", 4, 4), FAST).decisions > 1


def test_a_planned_start_takes_back_what_a_bet_on_borrowed_time_holds() -> None:
    """Horizon 6 slots. `big` (16 GPUs, limit 6, released at 1, deadline 6): 1 + 6 > 6, bet on
    for 3 slots (1-4), runs its whole limit in the world. `next` (16 GPUs, limit 1, priority 1, released at
    4) fits its limit: at slot 4 big is on borrowed time, planners see it ending at 5, so next
    is planned at 5 on big's GPUs, and at 5 big is preempted (16 GPUs x 4 h = 64 GPU-hours lost)
    and next runs 5-6: 20 + 16 = 36 realized. backfill never starts big: next runs 4-5, 36."""
    spec = warmed(
        {
            "horizon": {"slots": 6, "slot_minutes": 60},
            "jobs": [
                {
                    "id": "big",
                    "priority": 2,
                    "gpus": 16,
                    "duration": 6,
                    "release": 1,
                    "deadline": 6,
                },
                {"id": "next", "priority": 1, "gpus": 16, "duration": 1, "release": 4},
            ],
        }
    )
    inst = build(spec)
    w = world_of(inst, {})
    r = replay(inst, w, policy("backfill-predict", 4, 4), FAST)
    assert (r.realized_pwo, r.preemptions, r.lost_gpu_hours) == (36, 1, 64)
    runs = {run.job: (run.start, run.end, run.outcome) for run in (r.audit.runs if r.audit else [])}
    assert (runs["big"], runs["next"]) == ((1, 5, "preempted"), (5, 6, "completed"))
    base = replay(inst, w, policy("backfill", 4, 4), FAST)
    assert (base.realized_pwo, base.preemptions) == (36, 0)


def test_each_gang_class_learns_from_its_own_runs_once_it_has_enough() -> None:
    """Singles ran 0.2 of their limits and all completed; gangs ran 0.8 and one of two failed.
    With 2 runs needed, a class with fewer takes all runs (median 0.5) and counts as sure."""
    rt = RunTimes(0.5, 2)
    rt.observe(2, 10, "single", completed=True)
    rt.observe(8, 10, "gang", completed=False)
    assert (rt.ratio("single"), rt.ratio("gang"), rt.success("gang")) == (0.5, 0.5, 1.0)
    rt.observe(2, 10, "single", completed=True)
    rt.observe(8, 10, "gang", completed=True)
    assert (rt.ratio("single"), rt.ratio("gang")) == (pytest.approx(0.2), pytest.approx(0.8))
    assert (rt.success("single"), rt.success("gang"), rt.ratio()) == (1.0, 0.5, 0.5)
    assert rt.ratio_after(0.5, "gang") == pytest.approx(0.8)  # both gang runs ran past half
    lost = RunTimes(0.5, 2)
    for _ in range(2):
        lost.observe(8, 10, "gang", completed=False)
    assert lost.success("gang") == 0.25  # none completed: counted as half a run of two


# A 1-GPU job and a 2-GPU gang (limits 4, priority 1) on one 4-GPU node.
KINDS = {
    "name": "kinds",
    "horizon": {"slots": 8, "slot_minutes": 60},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4}],
    "jobs": [
        {"id": "one", "priority": 1, "gpus": 1, "duration": 4},
        {"id": "pair", "priority": 1, "gpus": 2, "duration": 4},
    ],
}


def test_risk_plans_each_class_on_its_run_times_and_its_completed_share() -> None:
    """Learned as above: `one` on 0.2 of its limit (1 slot), worth all of its priority; `pair`
    on 0.8 (3.2 slots, rounded up to 4) worth half (half the gangs completed)."""
    rt = RunTimes(0.5, 2)
    for klass, ran, ok in (("single", 2, True), ("single", 2, True)):
        rt.observe(ran, 10, klass, ok)
    for ok in (True, False):
        rt.observe(8, 10, "gang", ok)
    told = Predicted(build(KINDS)).told(rt, {}, predict={0, 1}, discount=False, by_class=True)
    assert [(j.durations, j.priority) for j in told.jobs] == [({0: 1}, 1.0), ({0: 4}, 0.5)]


def test_the_prediction_log_judges_planned_against_ran() -> None:
    """Planned 4, 4, 2 slots; ran 2, 4, 3 (a fourth run preempted, left out): errors 2, 0, 1
    slots, median 1 slot = 0.5 h at 30-minute slots; one of three ran longer than planned."""
    log = PredictionLog()
    for job, planned in enumerate((4, 4, 2, 6)):
        log.started(job, planned)
    log.stopped(3)
    for job, ran in enumerate((2, 4, 3)):
        log.ended(job, ran)
    assert log.figures(0.5) == (0.5, pytest.approx(1 / 3))
    assert PredictionLog().figures(1.0) == (0.0, 0.0)


def test_a_risk_policy_is_an_expect_policy_learned_by_class() -> None:
    p = policy("cpsat-risk@event", 4, 2)
    assert (p.risk, p.expect, p.at_events) == (True, 0.5, True)
    assert not policy("cpsat-expect", 4, 2).risk
