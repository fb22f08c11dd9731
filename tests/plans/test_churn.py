"""Churn of hand-built re-plans, with every figure derived by hand next to its assertion.

The instance: 12 slots of 30 minutes (h = 0.5 hours per slot), re-planned from now = 5.
Pool a: 2 nodes x 4 GPUs, pool b: 1 node x 4 GPUs. Jobs (durations in slots, on any pool):
  ran    2 GPUs, 4 slots             (started at 2, before now: running, never compared)
  stay   2 GPUs, 2 slots
  slip   4 GPUs, 2 slots
  due    2 GPUs, 2 slots, deadline 8
  drop   2 GPUs, 1 slot
  fresh  1 GPU,  1 slot              (unscheduled in the previous plan)
The previous plan also assigns `gone`, a job no longer in the instance (finished).
"""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import ValidationError

from horizon_opt import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.model.spec import InstanceSpec
from horizon_opt.plans.churn import Move, churn, moved_jobs
from horizon_opt.plans.plan import Assignment, Churn, Plan, Unscheduled

NODES = {"a": "a-0", "b": "b-0"}


def instance(now: int = 5) -> Instance:
    spec = InstanceSpec.model_validate(
        {
            "name": "churn",
            "horizon": {"slots": 12, "slot_minutes": 30},
            "pools": [
                {"name": "a", "gpu_type": "A", "nodes": 2, "gpus_per_node": 4},
                {"name": "b", "gpu_type": "B", "nodes": 1, "gpus_per_node": 4},
            ],
            "jobs": [
                {"id": "ran", "priority": 1, "gpus": 2, "duration": 4},
                {"id": "stay", "priority": 1, "gpus": 2, "duration": 2},
                {"id": "slip", "priority": 1, "gpus": 4, "duration": 2},
                {"id": "due", "priority": 1, "gpus": 2, "duration": 2, "deadline": 8},
                {"id": "drop", "priority": 1, "gpus": 2, "duration": 1},
                {"id": "fresh", "priority": 1, "gpus": 1, "duration": 1},
            ],
        }
    )
    return dataclasses.replace(compile_instance(spec), now=now)


def at(job: str, pool: str, start: int, end: int) -> Assignment:
    """An assignment on the first node of `pool` (GPUs do not matter to churn)."""
    return Assignment(job=job, pool=pool, start=start, end=end, gpus={NODES[pool]: [0]})


def plan(assignments: list[Assignment], unscheduled: tuple[str, ...] = ()) -> Plan:
    return Plan(
        instance="churn",
        solver="hand",
        status="heuristic",
        objective=0.0,
        assignments=assignments,
        unscheduled=[Unscheduled(job=j, reason="no room") for j in unscheduled],
    )


# The previous plan: ran and gone before now, four promises at or after now (compared = 4:
# stay, slip, due, drop); fresh unscheduled. due ends at 7 <= deadline 8: on time.
PREVIOUS = plan(
    [
        at("gone", "a", 0, 2),
        at("ran", "a", 2, 6),
        at("stay", "a", 5, 7),
        at("slip", "b", 5, 7),
        at("due", "a", 5, 7),
        at("drop", "b", 7, 8),
    ],
    unscheduled=("fresh",),
)


def same_as_previous(**changes: Assignment | None) -> Plan:
    """PREVIOUS without gone, with the named jobs re-assigned (None: unscheduled)."""
    kept: list[Assignment] = []
    dropped = ["fresh"]
    for a in PREVIOUS.assignments:
        if a.job == "gone":
            continue
        if a.job not in changes:
            kept.append(a)
        elif (new := changes[a.job]) is None:
            dropped.append(a.job)
        else:
            kept.append(new)
    return plan(kept, unscheduled=tuple(dropped))


def expected(compared: int, **figures: float) -> Churn:
    """Churn of `compared` jobs: the figures given, every other one zero."""
    zero = dict.fromkeys(Churn.model_fields, 0)
    return Churn.model_validate({**zero, "compared": compared, **figures})


def test_identical_plans_have_no_churn() -> None:
    # compared: stay, slip, due, drop (ran starts at 2 < now, gone is not in the instance)
    got = churn(instance(), PREVIOUS, PREVIOUS)
    assert got == expected(4)
    assert moved_jobs(instance(), PREVIOUS, PREVIOUS) == []


def test_moved_later_by_two_slots() -> None:
    # slip: b@5 -> b@7, 2 slots later = 2 * 0.5 = 1.0 h; gpu hours in the new plan:
    # 4 GPUs * 2 slots * 0.5 = 4.0. No deadline: still on time, nothing broken.
    new = same_as_previous(slip=at("slip", "b", 7, 9))
    got = churn(instance(), PREVIOUS, new)
    assert got == expected(
        4, moved=1, moved_gpu_hours=4.0, mean_shift_hours=1.0, max_shift_hours=1.0, later=1
    )
    assert moved_jobs(instance(), PREVIOUS, new) == [Move("slip", "b", 5, 7, "b", 7, 9)]


def test_moved_earlier_and_to_another_pool() -> None:
    # slip: b@5 -> b@7 (later, shift 1.0 h, 4 * 2 * 0.5 = 4.0 GPU hours);
    # drop: b@7 -> a@6 (earlier by 1 slot = 0.5 h, another pool; 2 * 1 * 0.5 = 1.0 GPU hours);
    # stay: a@5 -> b@5 (same start, another pool: shift 0.0 h; 2 * 2 * 0.5 = 2.0 GPU hours).
    # moved 3, later 1 (slip), mean shift (1.0 + 0.5 + 0.0) / 3 = 0.5, max 1.0.
    new = same_as_previous(
        slip=at("slip", "b", 7, 9), drop=at("drop", "a", 6, 7), stay=at("stay", "b", 5, 7)
    )
    got = churn(instance(), PREVIOUS, new)
    assert (got.compared, got.moved, got.later, got.dropped, got.broken) == (4, 3, 1, 0, 0)
    assert got.moved_gpu_hours == pytest.approx(7.0)
    assert got.mean_shift_hours == pytest.approx(0.5)
    assert got.max_shift_hours == pytest.approx(1.0)
    # ordered by previous start (stay and slip at 5, in instance order), then drop at 7
    assert [m.job for m in moved_jobs(instance(), PREVIOUS, new)] == ["stay", "slip", "drop"]


def test_a_drop_breaks_its_promise() -> None:
    # drop: b@7 -> unscheduled. No deadline, so it was on time: dropped 1 and broken 1; a drop
    # is not a move, so no shift and no GPU hours.
    new = same_as_previous(drop=None)
    got = churn(instance(), PREVIOUS, new)
    assert got == expected(4, dropped=1, broken=1)
    [move] = moved_jobs(instance(), PREVIOUS, new)
    assert move == Move("drop", "b", 7, 8, None, None, None)
    assert move.dropped and move.shift is None


def test_a_job_missing_from_the_new_plan_counts_as_dropped() -> None:
    # drop is neither assigned nor listed as unscheduled: not assigned is what counts.
    new = plan([a for a in same_as_previous().assignments if a.job != "drop"], ("fresh",))
    got = churn(instance(), PREVIOUS, new)
    assert (got.dropped, got.broken, got.moved) == (1, 1, 0)


def test_lateness_breaks_a_promise() -> None:
    # due: a@5-7 (end 7 <= deadline 8, on time) -> a@7-9 (end 9 > 8, late): moved, later, broken;
    # shift 2 slots = 1.0 h; 2 GPUs * 2 slots * 0.5 = 2.0 GPU hours.
    new = same_as_previous(due=at("due", "a", 7, 9))
    got = churn(instance(), PREVIOUS, new)
    assert got == expected(
        4,
        moved=1,
        moved_gpu_hours=2.0,
        mean_shift_hours=1.0,
        max_shift_hours=1.0,
        later=1,
        broken=1,
    )


def test_a_promise_already_late_is_not_broken_again() -> None:
    # due was late in the previous plan (a@7-9, end 9 > 8); moving it to a@8-10 or dropping it
    # breaks nothing: moved 1 / dropped 1, broken 0.
    previous = plan(
        [*(a for a in PREVIOUS.assignments if a.job != "due"), at("due", "a", 7, 9)], ("fresh",)
    )
    got = churn(instance(), previous, same_as_previous(due=at("due", "a", 8, 10)))
    assert (got.moved, got.later, got.broken) == (1, 1, 0)
    got = churn(instance(), previous, same_as_previous(due=None))
    assert (got.dropped, got.broken) == (1, 0)


def test_a_new_job() -> None:
    # fresh: unscheduled before, now assigned at b@9-10: new 1; it was promised nothing, so it
    # is neither compared nor moved.
    new = plan([*same_as_previous().assignments, at("fresh", "b", 9, 10)])
    got = churn(instance(), PREVIOUS, new)
    assert got == expected(4, new=1)


def test_a_job_started_before_now_is_ignored() -> None:
    # ran started at 2 < now = 5: running. Even shown at another start, or dropped, it is not
    # compared, moved, dropped, broken nor new.
    for ran in (at("ran", "b", 5, 9), None):
        got = churn(instance(), PREVIOUS, same_as_previous(ran=ran))
        assert got == expected(4)
        assert moved_jobs(instance(), PREVIOUS, same_as_previous(ran=ran)) == []
    # with now = 2 its promise is still in the future: compared 5, and the move counts
    # (a@2 -> b@5: 3 slots = 1.5 h, 2 GPUs * 4 slots * 0.5 = 4.0 GPU hours).
    got = churn(instance(now=2), PREVIOUS, same_as_previous(ran=at("ran", "b", 5, 9)))
    assert (got.compared, got.moved, got.later, got.max_shift_hours) == (5, 1, 1, 1.5)
    assert got.moved_gpu_hours == 4.0


def test_a_previous_job_missing_from_the_instance_is_ignored() -> None:
    # gone is in PREVIOUS (a@0-2) but not in the instance: even with now = 0 it is not compared
    # (compared = ran, stay, slip, due, drop = 5), and its absence from the new plan drops
    # nothing.
    got = churn(instance(now=0), PREVIOUS, same_as_previous())
    assert got == expected(5)


def test_churn_is_strict() -> None:
    # frozen and extra="forbid", like every model of the plan file
    got = churn(instance(), PREVIOUS, PREVIOUS)
    with pytest.raises(ValidationError):
        got.moved = 1  # type: ignore[misc]
    with pytest.raises(ValidationError):
        Churn.model_validate({**got.model_dump(), "extra": 1})
    assert Churn.model_validate(got.model_dump()) == got
