"""The checker on instances with history: free jobs start at or after `now` (rule 2), placed jobs
keep their placement (rule 7), and node capacity counts every physical GPU (rule 5).

The instances are compiled from a plain spec and given `now` and `placed` by
`dataclasses.replace`, so these tests do not depend on how the file format spells them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from horizon_opt.model.instance import Instance, Job, Placed
from horizon_opt.plans.check import check
from horizon_opt.plans.plan import Plan

Data = dict[str, Any]

# HISTORY: 8 slots, now = 3. Pool a: 3 nodes x 4 GPUs (a-0, a-1, a-2), pool b: 1 node x 4 GPUs
# (b-0). Service chat on a, 2 GPUs per replica, 1 replica every slot.
# Jobs, 2 GPUs each (one node), allowed on both pools:
#   run   4 slots, placed on a-0 GPUs 0-1 in slots [1, 5): started before now, running
#   res   2 slots, placed on a-1 GPUs 0-1 in slots [4, 6): a reservation (4 >= now)
#   free  2 slots, not placed: compiled release max(0, now) = 3
HISTORY: Data = {
    "name": "history",
    "horizon": {"slots": 8},
    "pools": [
        {"name": "a", "gpu_type": "A", "nodes": 3, "gpus_per_node": 4},
        {"name": "b", "gpu_type": "B", "nodes": 1, "gpus_per_node": 4},
    ],
    "services": [{"name": "chat", "pool": "a", "gpus_per_replica": 2, "demand": [1] * 8}],
    "jobs": [
        {"id": "run", "priority": 1, "gpus": 2, "duration": 4},
        {"id": "res", "priority": 1, "gpus": 2, "duration": 2},
        {"id": "free", "priority": 1, "gpus": 2, "duration": 2},
    ],
}
NOW = 3

# Valid: run and res where they are placed, free on b-0 in slots [3, 5), chat on a-0 all day.
# a-0 in slots 1-4: run 2 + chat 2 = 4 of 4 GPUs; a-1 in slots 4-5: 2 of 4; b-0: 2 of 4.
HISTORY_PLAN: Data = {
    "instance": "history",
    "solver": "hand",
    "status": "heuristic",
    "objective": 0,
    "assignments": [
        {"job": "run", "pool": "a", "start": 1, "end": 5, "gpus": {"a-0": [0, 1]}},
        {"job": "res", "pool": "a", "start": 4, "end": 6, "gpus": {"a-1": [0, 1]}},
        {"job": "free", "pool": "b", "start": 3, "end": 5, "gpus": {"b-0": [0, 1]}},
    ],
    "inference": [{"service": "chat", "node": "a-0", "start": 0, "end": 8, "replicas": 1}],
}


def place(job: Job, placed: Placed) -> Job:
    """What the compiler makes of a `placed:` job: its pool only, released at its placed start."""
    p = placed.pool
    return replace(
        job,
        placed=placed,
        release=placed.start,
        durations={p: placed.end - placed.start},
        gangs={p: job.gangs[p]},
    )


def with_history(instance: Instance, free_release: int = NOW) -> Instance:
    run, res, free = instance.jobs
    jobs = (
        place(run, Placed(pool=0, start=1, end=5, gpus={0: (0, 1)})),
        place(res, Placed(pool=0, start=4, end=6, gpus={1: (0, 1)})),
        replace(free, release=free_release),
    )
    return replace(instance, now=NOW, jobs=jobs)  # a fresh Instance: no stale cached properties


@pytest.fixture
def history(compile_spec: Callable[[Data], Instance]) -> Instance:
    return with_history(compile_spec(HISTORY))


@pytest.fixture
def plan() -> Data:
    return copy.deepcopy(HISTORY_PLAN)


def verdict(instance: Instance, data: Data) -> list[str]:
    return [str(v) for v in check(instance, Plan.parse(data))]


def assignment(data: Data, job: str) -> Data:
    return next(a for a in data["assignments"] if a["job"] == job)


def unschedule(data: Data, job: str) -> None:
    data["assignments"].remove(assignment(data, job))
    data.setdefault("unscheduled", []).append({"job": job, "reason": "no room"})


def test_plan_honouring_placed_jobs_is_valid(history: Instance, plan: Data) -> None:
    assert verdict(history, plan) == []


# -- rule 7: placed jobs keep their placement --------------------------------------------------


@pytest.mark.parametrize(
    ("job", "message"),
    [
        ("run", "job 'run' is placed (running since slot 1) but the plan leaves it unscheduled"),
        ("res", "job 'res' holds a reserved start at slot 4 but the plan leaves it unscheduled"),
    ],
)
def test_rule7_placed_job_unscheduled(
    history: Instance, plan: Data, job: str, message: str
) -> None:
    unschedule(plan, job)
    assert verdict(history, plan) == [f"rule 7: {message}"]


def test_rule7_placed_job_missing_is_rule1_only(history: Instance, plan: Data) -> None:
    plan["assignments"].remove(assignment(plan, "run"))
    assert verdict(history, plan) == ["rule 1: job 'run' is neither assigned nor unscheduled"]


def test_rule7_other_pool(history: Instance, plan: Data) -> None:
    # run moves to b-0 GPUs 2-3 in its own slots (free holds GPUs 0-1 there): b-0 holds 4 of 4.
    # Rule 2 says nothing: the compiled run has no duration on b, and rule 7 says why.
    assignment(plan, "run").update(pool="b", gpus={"b-0": [2, 3]})
    assert verdict(history, plan) == [
        "rule 7: job 'run' is placed (running since slot 1) but the plan runs it on pool 'b', "
        "not its placed pool 'a'"
    ]


@pytest.mark.parametrize(
    ("job", "start", "message"),
    [
        # run 1 slot later, [2, 6): a-0 in slots 2-5 holds run 2 + chat 2 = 4.
        (
            "run",
            2,
            "job 'run' is placed (running since slot 1) but the plan runs it in slots [2, 6), "
            "not its placed slots [1, 5)",
        ),
        # res 1 slot later, [5, 7), on a-1 alone.
        (
            "res",
            5,
            "job 'res' holds a reserved start at slot 4 but the plan runs it in slots [5, 7), "
            "not its placed slots [4, 6)",
        ),
        # res before now, [2, 4): rule 7 only, no rule 2 (before now, before its release 4).
        (
            "res",
            2,
            "job 'res' holds a reserved start at slot 4 but the plan runs it in slots [2, 4), "
            "not its placed slots [4, 6)",
        ),
    ],
)
def test_rule7_other_start(
    history: Instance, plan: Data, job: str, start: int, message: str
) -> None:
    a = assignment(plan, job)
    a.update(start=start, end=start + a["end"] - a["start"])
    assert verdict(history, plan) == [f"rule 7: {message}"]


def test_rule7_other_end(history: Instance, plan: Data) -> None:
    # run ends at 6, not 1 + 4: rule 2 (duration) and rule 7 (slots) both say so.
    assignment(plan, "run")["end"] = 6
    assert verdict(history, plan) == [
        "rule 2: job 'run': end 6 != start 1 + duration 4 on a",
        "rule 7: job 'run' is placed (running since slot 1) but the plan runs it in slots [1, 6), "
        "not its placed slots [1, 5)",
    ]


@pytest.mark.parametrize(
    ("job", "message"),
    [
        (
            "run",
            "job 'run' is placed (running since slot 1) but the plan puts it on nodes a-2, "
            "not its placed nodes a-0",
        ),
        (
            "res",
            "job 'res' holds a reserved start at slot 4 but the plan puts it on nodes a-2, "
            "not its placed nodes a-1",
        ),
    ],
)
def test_rule7_other_nodes(history: Instance, plan: Data, job: str, message: str) -> None:
    # a-2 is empty all day: only the node differs.
    assignment(plan, job)["gpus"] = {"a-2": [0, 1]}
    assert verdict(history, plan) == [f"rule 7: {message}"]


def test_rule7_started_job_keeps_its_gpu_indices(history: Instance, plan: Data) -> None:
    # run on a-0 GPUs 2-3: no clash (chat is not bound to indices), but run already holds 0-1.
    assignment(plan, "run")["gpus"] = {"a-0": [2, 3]}
    assert verdict(history, plan) == [
        "rule 7: job 'run' is placed (running since slot 1) but the plan gives it GPUs [2, 3] "
        "of a-0, not the GPUs [0, 1] it runs on"
    ]


@pytest.mark.parametrize(
    ("job", "gpus"), [("res", [2, 3]), ("res", [3, 0]), ("res", [1, 0]), ("run", [1, 0])]
)
def test_rule7_other_gpu_indices_allowed(
    history: Instance, plan: Data, job: str, gpus: list[int]
) -> None:
    # A reservation holds no GPU yet: any indices of its node will do. A running job's indices
    # may be listed in any order.
    node = next(iter(assignment(plan, job)["gpus"]))
    assignment(plan, job)["gpus"] = {node: gpus}
    assert verdict(history, plan) == []


def test_rule7_several_differences_one_message_each(history: Instance, plan: Data) -> None:
    # run moves to a-2 GPUs 2-3 in slots [2, 6): the slots and the nodes differ; the GPU
    # indices are not compared on a node it was never placed on.
    assignment(plan, "run").update(start=2, end=6, gpus={"a-2": [2, 3]})
    assert verdict(history, plan) == [
        "rule 7: job 'run' is placed (running since slot 1) but the plan runs it in slots [2, 6), "
        "not its placed slots [1, 5)",
        "rule 7: job 'run' is placed (running since slot 1) but the plan puts it on nodes a-2, "
        "not its placed nodes a-0",
    ]


# -- rule 2: a free job starts at or after now -------------------------------------------------


@pytest.mark.parametrize("release", [NOW, 0])
def test_rule2_free_job_before_now(
    compile_spec: Callable[[Data], Instance], plan: Data, release: int
) -> None:
    # free at slot 2 < now 3. Checked from `now` itself: a compiled release of 0 (which the
    # compiler should never produce) hides nothing.
    instance = with_history(compile_spec(HISTORY), free_release=release)
    assignment(plan, "free").update(start=2, end=4)
    assert verdict(instance, plan) == ["rule 2: job 'free': starts at 2, before now (slot 3)"]


def test_rule2_free_job_at_now_is_valid(history: Instance, plan: Data) -> None:
    assert assignment(plan, "free")["start"] == NOW
    assert verdict(history, plan) == []


# -- rule 5: capacity counts the placed jobs' GPUs ----------------------------------------------


def test_rule5_free_job_beside_a_placed_job(history: Instance, plan: Data) -> None:
    # free on a-0 GPUs 2-3 in slots [3, 5): no GPU index clash with run (0-1), but a-0 holds
    # run 2 + free 2 + chat 2 = 6 of 4 GPUs in slots 3-4.
    assignment(plan, "free").update(pool="a", gpus={"a-0": [2, 3]})
    assert verdict(history, plan) == [
        "rule 5: a-0 uses more GPUs than it has at slots 3..4 (2 slots) "
        "(slot 3: 6 used, 4 available, node up)"
    ]


def test_rule5_free_job_on_a_placed_jobs_gpus(history: Instance, plan: Data) -> None:
    # free on run's GPUs 0-1 of a-0 in slots [3, 5): held twice (rule 4), 6 of 4 GPUs (rule 5).
    assignment(plan, "free").update(pool="a", gpus={"a-0": [0, 1]})
    assert verdict(history, plan) == [
        "rule 4: GPU 0 of a-0 is held by several jobs at slots 3..4 (2 slots): run, free",
        "rule 4: GPU 1 of a-0 is held by several jobs at slots 3..4 (2 slots): run, free",
        "rule 5: a-0 uses more GPUs than it has at slots 3..4 (2 slots) "
        "(slot 3: 6 used, 4 available, node up)",
    ]


def test_rule5_ignores_gpus_held_outside_the_instance(history: Instance, plan: Data) -> None:
    # `held` marks GPUs of placed jobs a residual instance leaves out, and `capacity` subtracts
    # them. Here the placed jobs are in the plan, so counting `held` too would find a-0 at
    # 4 + 2 of 4 GPUs in slots 1-4: the checker's capacity is the physical GPUs of nodes up.
    residual_like = replace(history, held=history.placed_gpus)
    assert int(residual_like.capacity[0, 1]) == 2
    assert verdict(residual_like, plan) == []
