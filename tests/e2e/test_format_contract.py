"""FORMAT.md's answers to the points a second checker, written from FORMAT.md alone, found silent
or ambiguous: one test per point, pinning what the code does (each test names its point).

The instances are tiny dicts, written as a user would; plans are written by hand.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from horizon_opt.errors import InstanceError, PlanError
from horizon_opt.loop.replan import replan
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.model.load import parse_spec
from horizon_opt.plans.check import check
from horizon_opt.plans.metrics import evaluate
from horizon_opt.plans.plan import Plan

Data = dict[str, Any]

# One pool of two 4-GPU nodes, 6 slots of one hour from midnight.
BASE: Data = {
    "name": "t",
    "horizon": {"slots": 6, "slot_minutes": 60, "start": "2026-12-01T00:00:00Z"},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 2, "gpus_per_node": 4}],
    "jobs": [],
}
WHOLE = {"a-0": [0, 1, 2, 3]}


def spec(**fields: Any) -> Data:
    out = copy.deepcopy(BASE)
    out.update(copy.deepcopy(fields))
    return out


def build(data: Data) -> Instance:
    return compile_instance(parse_spec(copy.deepcopy(data)))


def problems(data: Data) -> list[str]:
    with pytest.raises(InstanceError) as exc:
        build(data)
    return exc.value.problems


def plan(
    assignments: list[Data] | None = None, inference: list[Data] | None = None, **more: Any
) -> Plan:
    return Plan.parse(
        {
            "instance": "t",
            "solver": "hand",
            "status": "heuristic",
            "objective": 0.0,
            "assignments": assignments or [],
            "inference": inference or [],
            **more,
        }
    )


def run(job: str, start: int, end: int, gpus: Data = WHOLE, pool: str = "a") -> Data:
    return {"job": job, "pool": pool, "start": start, "end": end, "gpus": gpus}


def block(start: int, end: int, replicas: int = 1, node: str = "a-0") -> Data:
    return {"service": "c", "node": node, "start": start, "end": end, "replicas": replicas}


def verdict(instance: Instance, p: Plan) -> list[str]:
    return [str(v) for v in check(instance, p)]


def test_1_a_placed_end_is_the_jobs_duration_in_rules_2_and_7() -> None:
    # duration 2, but placed [1, 4): its duration is 3 wherever a plan rule says duration(pool).
    data = spec(now=2)
    data["jobs"] = [
        {
            "id": "r",
            "priority": 1,
            "gpus": 4,
            "duration": 2,
            "placed": {"pool": "a", "start": 1, "end": 4, "gpus": WHOLE},
        }
    ]
    inst = build(data)
    assert inst.jobs[0].durations == {0: 3}
    assert inst.jobs[0].work_hours == 4 * 2  # work(j) still reads `duration`
    assert verdict(inst, plan([run("r", 1, 4)])) == []
    # Another end on its pool: rule 2 (end != start + duration 3) and rule 7 (its slots).
    other_end = verdict(inst, plan([run("r", 1, 3)]))
    assert [v[:7] for v in other_end] == ["rule 2:", "rule 7:"]
    assert "end 3 != start 1 + duration 3 on a" in other_end[0]
    # The same length from another start: rule 7 alone.
    moved = verdict(inst, plan([run("r", 2, 5)]))
    assert [v[:7] for v in moved] == ["rule 7:"]


def test_2_rules_5_and_6_cover_the_slots_before_now() -> None:
    data = spec(now=3)
    data["horizon"]["slots"] = 4
    data["services"] = [{"name": "c", "pool": "a", "gpus_per_replica": 4, "demand": [1, 1, 1, 1]}]
    inst = build(data)
    assert verdict(inst, plan([], [block(0, 4)])) == []
    # Replicas only from now on: slots 0..2 are short (rule 6).
    assert verdict(inst, plan([], [block(3, 4)])) == [
        "rule 6: service 'c' has fewer replicas than required at slots 0..2 (3 slots) "
        "(slot 0: 0 < 1)"
    ]
    # A node over its GPUs at slot 0, before now (rule 5).
    over = verdict(inst, plan([], [block(0, 4), block(0, 1)]))
    assert over == [
        "rule 5: a-0 uses more GPUs than it has at slot 0 (slot 0: 8 used, 4 available, node up)"
    ]


def test_3_times_are_rounded_to_slots_then_compared() -> None:
    # 1-hour slots; release 10:30 falls in slot 10 (and rounds UP to 11 as a release).
    data = spec(now="2026-12-01T11:00:00Z")
    data["horizon"]["slots"] = 24
    job: Data = {
        "id": "r",
        "priority": 1,
        "gpus": 4,
        "duration": 2,
        "release": "2026-12-01T10:30:00Z",
        "placed": {"pool": "a", "start": "2026-12-01T10:05:00Z", "gpus": WHOLE},
    }
    data["jobs"] = [job]
    inst = build(data)
    r = inst.jobs[0]
    assert inst.now == 11  # now rounds up
    assert r.placed is not None and r.placed.start == 10  # placed.start rounds down
    assert r.submitted == 10  # the release as written rounds up (11), but not past its start
    # Started at 10:05, before its release at 10:30 but in the same slot: accepted, and its wait
    # counts from its start: 0, never negative.
    p = plan([run("r", 10, 12)])
    assert verdict(inst, p) == []
    assert evaluate(inst, p).mean_wait_hours == 0.0
    # A start in the slot before the release's slot is refused (the message shows 11).
    job["placed"]["start"] = "2026-12-01T09:59:00Z"
    data["now"] = 10
    assert problems(data) == ["jobs[0].placed.start: slot 9 is before its release (slot 10)"]


def test_4_a_pool_with_too_few_nodes_for_the_gang_is_dropped() -> None:
    # 8 GPUs need 2 whole nodes: pool a has 1, pool b has 2.
    data: Data = {
        "name": "t",
        "horizon": {"slots": 4},
        "pools": [
            {"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4},
            {"name": "b", "gpu_type": "B", "nodes": 2, "gpus_per_node": 4},
        ],
        "jobs": [{"id": "g", "priority": 1, "gpus": 8, "duration": {"a": 1, "b": 2}}],
    }
    inst = build(data)
    assert dict(inst.jobs[0].durations) == {1: 2}  # only b, without a message
    assert inst.jobs[0].work_hours == 8 * 2  # work(j): the fastest REMAINING pool
    assert verdict(inst, plan([run("g", 0, 1, WHOLE)])) == [
        "rule 2: job 'g': pool 'a' is not allowed for it"
    ]
    placed = copy.deepcopy(data)
    placed["jobs"][0]["placed"] = {"pool": "a", "start": 0, "gpus": WHOLE}
    assert problems(placed) == ["jobs[0].placed.pool: job 'g' may not run on pool 'a'"]
    # With no pool left, the job is refused.
    data["jobs"][0]["duration"] = {"a": 1}
    assert problems(data)[0].startswith(
        "jobs[0].gpus: a gang of 8 GPUs cannot be placed on any allowed pool"
    )


def nested(levels: int, inner: Any) -> Any:
    for _ in range(levels):
        inner = [inner]
    return inner


def test_5_nesting_of_a_metric_the_format_does_not_define() -> None:
    # The figure's value is level 1; each element, key or value is one level below its holder.
    def load(value: Any) -> Plan:
        return plan(metrics={"x": value})

    load(nested(31, 1))  # the number at level 32
    load(nested(31, []))  # 32 lists, the innermost empty
    with pytest.raises(PlanError, match=r"metrics: x(\[0\]){32}: nested more than 32 levels deep"):
        load(nested(32, 1))
    deep: Any = {"k": 1}
    for _ in range(31):
        deep = {"k": deep}  # 32 objects: the innermost one's key is at level 33
    with pytest.raises(PlanError, match=r"\(a key\): nested more than 32 levels deep"):
        load(deep)


def test_6_inference_blocks_outside_the_horizon_break_rule_6() -> None:
    data = spec()
    data["horizon"]["slots"] = 4
    data["services"] = [{"name": "c", "pool": "a", "gpus_per_replica": 4, "demand": [1, 1, 1, 1]}]
    inst = build(data)
    # Past S: rule 6, and the block counts for nothing (so every slot is short too).
    assert verdict(inst, plan([], [block(0, 5)])) == [
        "rule 6: service 'c' on a-0: bad block [0, 5) x 1",
        "rule 6: service 'c' has fewer replicas than required at slots 0..3 (4 slots) "
        "(slot 0: 0 < 1)",
    ]
    # An empty block is a bad block too.
    assert verdict(inst, plan([], [block(0, 4), block(2, 2, 0, "a-1")])) == [
        "rule 6: service 'c' on a-1: bad block [2, 2) x 0"
    ]
    # Before slot 0: the plan is not read at all.
    with pytest.raises(PlanError, match=r"inference\[0\]\.start"):
        plan([], [block(-1, 4)])


def test_7_scheduled_late_and_held() -> None:
    data = spec()
    data["jobs"] = [
        {"id": "on", "priority": 1, "gpus": 4, "duration": 1, "deadline": 1},
        {"id": "late", "priority": 1, "gpus": 4, "duration": 1, "deadline": 1},
        {"id": "left", "priority": 1, "gpus": 4, "duration": 1},
    ]
    inst = build(data)
    p = plan(
        [run("on", 0, 1), run("late", 1, 2)],
        unscheduled=[{"job": "left", "reason": "by hand"}],
    )
    assert verdict(inst, p) == []
    m = evaluate(inst, p)
    assert (m.scheduled, m.completed, m.late) == (2, 1, 1)

    # held: a previous start in the freeze window [now, now + 2) is held there, not moved; one
    # beyond it is compared but free (fifo moves it to now).
    state = spec(now=1)
    state["jobs"] = [
        {"id": "near", "priority": 1, "gpus": 4, "duration": 1},
        {"id": "far", "priority": 1, "gpus": 4, "duration": 1},
    ]
    inst = build(state)
    previous = plan([run("near", 2, 3), run("far", 4, 5, {"a-1": [0, 1, 2, 3]})])
    result = replan(inst, previous, "fifo", freeze_slots=2)
    churn = result.plan.churn
    assert churn is not None
    assert result.held == ("near",)
    assert (churn.compared, churn.held, churn.moved) == (2, 1, 1)
    starts = {a.job: a.start for a in result.plan.assignments}
    assert starts == {"near": 2, "far": 1}


def test_8_times_before_horizon_start() -> None:
    # now rounds UP: less than one slot before horizon.start is slot 0.
    assert build(spec(now="2026-11-30T23:50:00Z")).now == 0
    assert problems(spec(now="2026-11-30T23:00:00Z")) == [
        "now: slot -1 is outside the horizon [0, 6)"
    ]
    # placed.start rounds DOWN: any time before horizon.start is a negative slot.
    data = spec()
    data["jobs"] = [
        {
            "id": "r",
            "priority": 1,
            "gpus": 4,
            "duration": 2,
            "placed": {"pool": "a", "start": "2026-11-30T23:50:00Z", "gpus": WHOLE},
        }
    ]
    assert problems(data) == ["jobs[0].placed.start: slot -1 is outside the horizon [0, 6)"]


def test_9_inference_beside_placed_jobs_is_packed_first_fit_decreasing() -> None:
    # Two 6-GPU nodes; a placed job holds 3 GPUs of a-1. x (3 per replica) goes first, on a-0,
    # leaving 3 + 3 GPUs: room for 2 of y's 3 replicas of 2. Refused, although x on a-1 and y on
    # a-0 would fit.
    data: Data = {
        "name": "t",
        "horizon": {"slots": 1},
        "pools": [{"name": "a", "gpu_type": "A", "nodes": 2, "gpus_per_node": 6}],
        "services": [
            {"name": "y", "pool": "a", "gpus_per_replica": 2, "demand": [3]},
            {"name": "x", "pool": "a", "gpus_per_replica": 3, "demand": [1]},
        ],
        "jobs": [
            {
                "id": "p",
                "priority": 1,
                "gpus": 3,
                "duration": 1,
                "placed": {"pool": "a", "start": 0, "gpus": {"a-1": [0, 1, 2]}},
            }
        ],
    }
    assert problems(data) == [
        "services[0].demand: service 'y' needs more replicas than pool 'a' can hold beside the "
        "placed jobs, at slots 0"
    ]
    # The same GPUs held on a-0 instead: x fits on a-1, y on a-0 and a-1.
    data["jobs"][0]["placed"]["gpus"] = {"a-0": [0, 1, 2]}
    build(data)
