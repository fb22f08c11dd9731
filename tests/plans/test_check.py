"""The independent checker: a valid hand-written plan passes, and each of FORMAT.md's validity
rules catches a plan that breaks it, with the rule number and a message that says what is wrong.

The valid plan for TINY is drawn slot by slot in conftest.py (`tiny_plan_data`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_solvers import INSTANCES as SOLVER_INSTANCES
from test_solvers import build

from horizon_opt import load_instance
from horizon_opt.model.instance import Instance
from horizon_opt.plans.check import MAX_PER_RULE, Violation, check, expected_holding
from horizon_opt.plans.plan import InferenceBlock, Plan

Data = dict[str, Any]


def verdict(instance: Instance, data: Data) -> list[str]:
    return [str(v) for v in check(instance, Plan.parse(data))]


def assignment(data: Data, job: str) -> Data:
    return next(a for a in data["assignments"] if a["job"] == job)


def has(lines: list[str], rule: int, *words: str) -> bool:
    return any(
        line.startswith(f"rule {rule}: ") and all(w in line for w in words) for line in lines
    )


def _gangs_agree(instance: Instance) -> None:
    for job in instance.jobs:
        assert set(job.gangs) == set(job.durations)
        for p, gang in job.gangs.items():
            G = instance.pools[p].gpus_per_node
            assert (gang.nodes, gang.gpus_per_node) == expected_holding(job.gpus, G), job.id
            assert gang.whole == (gang.gpus_per_node == G)


def test_checker_and_compiled_placement_rule_agree(any_instance: Instance) -> None:
    # The checker derives the placement rule on its own; the solvers read `Job.gangs`.
    _gangs_agree(any_instance)


@pytest.mark.parametrize("name", sorted(SOLVER_INSTANCES))
def test_checker_and_compiled_placement_rule_agree_on_solver_fixtures(name: str) -> None:
    _gangs_agree(build(SOLVER_INSTANCES[name]))


@pytest.mark.parametrize(
    "name", ["demo", "bench/hetero-small-s0", "bench/deadline-small-s1", "bench/trace-small-s2"]
)
def test_checker_and_compiled_placement_rule_agree_on_files(name: str) -> None:
    _gangs_agree(load_instance(Path(__file__).parents[2] / "instances" / f"{name}.yaml"))


def test_hand_plan_is_valid(tiny: Instance, tiny_plan: Plan) -> None:
    assert check(tiny, tiny_plan) == []


def test_violation_format() -> None:
    assert str(Violation(4, "GPU 0 of a-0 is held twice")) == "rule 4: GPU 0 of a-0 is held twice"


def test_unscheduled_job_is_valid(tiny: Instance, tiny_plan_dict: Data) -> None:
    # ev may be left out as long as it is listed with a reason (nothing runs after it).
    tiny_plan_dict["assignments"].remove(assignment(tiny_plan_dict, "ev"))
    tiny_plan_dict["unscheduled"] = [{"job": "ev", "reason": "not needed"}]
    assert verdict(tiny, tiny_plan_dict) == []


def test_blocks_of_a_service_node_pair_add_up(tiny: Instance, tiny_plan_dict: Data) -> None:
    # Split the a-0 block of slots 2-3 (2 replicas) into two overlapping blocks of 1 replica.
    blocks = tiny_plan_dict["inference"]
    blocks[2] = {"service": "chat", "node": "a-0", "start": 2, "end": 4, "replicas": 1}
    blocks.append({"service": "chat", "node": "a-0", "start": 2, "end": 4, "replicas": 1})
    assert verdict(tiny, tiny_plan_dict) == []


# -- rule 1: every job appears exactly once --------------------------------------------------------


def test_rule1_missing_job(tiny: Instance, tiny_plan_dict: Data) -> None:
    tiny_plan_dict["assignments"].remove(assignment(tiny_plan_dict, "ev"))
    assert verdict(tiny, tiny_plan_dict) == ["rule 1: job 'ev' is neither assigned nor unscheduled"]


def test_rule1_job_assigned_and_unscheduled(tiny: Instance, tiny_plan_dict: Data) -> None:
    tiny_plan_dict["unscheduled"] = [{"job": "ev", "reason": "oops"}]
    assert verdict(tiny, tiny_plan_dict) == ["rule 1: job 'ev' appears 2 times"]


def test_rule1_job_assigned_twice(tiny: Instance, tiny_plan_dict: Data) -> None:
    tiny_plan_dict["assignments"].append(copy.deepcopy(assignment(tiny_plan_dict, "quant")))
    lines = verdict(tiny, tiny_plan_dict)
    assert has(lines, 1, "job 'quant' appears 2 times")


def test_rule1_unknown_job(tiny: Instance, tiny_plan_dict: Data) -> None:
    tiny_plan_dict["unscheduled"] = [{"job": "ghost", "reason": "?"}]
    assert verdict(tiny, tiny_plan_dict) == ["rule 1: job 'ghost' is not in the instance"]


def test_rule1_unknown_assigned_job(tiny: Instance, tiny_plan_dict: Data) -> None:
    tiny_plan_dict["assignments"].append(
        {"job": "ghost", "pool": "b", "start": 2, "end": 3, "gpus": {"b-0": [0, 1]}}
    )
    assert verdict(tiny, tiny_plan_dict) == ["rule 1: job 'ghost' is not in the instance"]


def test_many_violations_are_capped(tiny: Instance, tiny_plan_dict: Data) -> None:
    extra = MAX_PER_RULE + 5
    tiny_plan_dict["unscheduled"] = [{"job": f"ghost{i}", "reason": "?"} for i in range(extra)]
    lines = verdict(tiny, tiny_plan_dict)
    assert len(lines) == MAX_PER_RULE + 1
    assert lines[-1] == "rule 1: ... and 5 more of this rule"


def test_check_counts_every_violation_not_only_those_listed(
    tiny: Instance, tiny_plan_dict: Data
) -> None:
    extra = MAX_PER_RULE + 5
    tiny_plan_dict["unscheduled"] = [{"job": f"ghost{i}", "reason": "?"} for i in range(extra)]
    tiny_plan_dict["inference"][0]["replicas"] = 1  # and one rule 6 violation
    violations = check(tiny, Plan.parse(tiny_plan_dict))
    assert len(violations) == MAX_PER_RULE + 2  # 20 listed, "... and 5 more", rule 6
    assert violations.total == extra + 1
    assert violations.other_instance is None


def test_a_valid_plan_has_no_violations_in_total(tiny: Instance, tiny_plan: Plan) -> None:
    violations = check(tiny, tiny_plan)
    assert violations == [] and violations.total == 0 and violations.other_instance is None


def test_check_says_when_the_plan_names_another_instance(
    tiny: Instance, tiny_plan_dict: Data
) -> None:
    tiny_plan_dict["instance"] = "elsewhere"
    tiny_plan_dict["assignments"][0]["job"] = "not-here"  # train is missing, not-here unknown
    violations = check(tiny, Plan.parse(tiny_plan_dict))
    assert violations.other_instance == (
        "the plan is for instance 'elsewhere', not 'tiny': 1 of its 3 jobs are not in this "
        "instance, 1 of this instance's 3 jobs are missing from it"
    )
    assert violations.total == len(violations) >= 2  # not capped: every one is listed


def test_a_renamed_but_valid_plan_stays_valid(tiny: Instance, tiny_plan_dict: Data) -> None:
    # The rules do not look at the name: the checker only says the name differs.
    tiny_plan_dict["instance"] = "tiny-v2"
    violations = check(tiny, Plan.parse(tiny_plan_dict))
    assert violations == [] and violations.total == 0
    assert violations.other_instance is not None
    assert "0 of its 3 jobs are not in this instance" in violations.other_instance


# -- rule 2: allowed pool, release, end, placement ---------------------------------------------


def test_rule2_wrong_end(tiny: Instance, tiny_plan_dict: Data) -> None:
    assignment(tiny_plan_dict, "quant")["end"] = 3  # duration on b is 2
    assert verdict(tiny, tiny_plan_dict) == [
        "rule 2: job 'quant': end 3 != start 0 + duration 2 on b"
    ]


def test_rule2_end_uses_the_duration_of_the_pool(tiny: Instance, tiny_plan_dict: Data) -> None:
    # quant takes 1 slot on a but 2 on b: an end of start + 1 on b is wrong.
    assignment(tiny_plan_dict, "quant")["end"] = 1
    assert has(verdict(tiny, tiny_plan_dict), 2, "end 1 != start 0 + duration 2 on b")


def test_rule2_ends_after_the_horizon(tiny: Instance, tiny_plan_dict: Data) -> None:
    assignment(tiny_plan_dict, "quant").update(start=3, end=5)
    assert verdict(tiny, tiny_plan_dict) == [
        "rule 2: job 'quant': ends at 5, after the horizon (4 slots)"
    ]


def test_rule2_pool_not_allowed(tiny: Instance, tiny_plan_dict: Data) -> None:
    assignment(tiny_plan_dict, "train")["pool"] = "b"  # train has a duration on a only
    assert verdict(tiny, tiny_plan_dict) == ["rule 2: job 'train': pool 'b' is not allowed for it"]


def test_rule2_unknown_pool(tiny: Instance, tiny_plan_dict: Data) -> None:
    assignment(tiny_plan_dict, "ev")["pool"] = "h100"
    assert verdict(tiny, tiny_plan_dict) == ["rule 2: job 'ev': pool 'h100' is not allowed for it"]


def test_rule2_before_release(tiny_spec: Data, tiny_plan_dict: Data, compile_spec: Any) -> None:
    tiny_spec["jobs"][2]["release"] = 1  # quant runs at 0 in the hand plan
    lines = verdict(compile_spec(tiny_spec), tiny_plan_dict)
    assert lines == ["rule 2: job 'quant': starts at 0, before its release 1"]


def test_rule2_negative_start(tiny: Instance, tiny_plan: Plan) -> None:
    # A plan file cannot hold a negative slot (Plan.read rejects it); a plan built in Python
    # without validation can, and the checker still catches it.
    quant = next(a for a in tiny_plan.assignments if a.job == "quant")
    bad = quant.model_copy(update={"start": -1, "end": 1})
    plan = tiny_plan.model_copy(
        update={"assignments": [bad if a is quant else a for a in tiny_plan.assignments]}
    )
    lines = [str(v) for v in check(tiny, plan)]
    assert has(lines, 2, "starts at negative slot -1")
    assert has(lines, 2, "before its release 0")


def test_rule2_too_few_gpus(tiny: Instance, tiny_plan_dict: Data) -> None:
    assignment(tiny_plan_dict, "ev")["gpus"] = {"a-1": [0]}
    assert verdict(tiny, tiny_plan_dict) == [
        "rule 2: job 'ev': a gang of 2 on pool a must hold exactly 2 GPUs of one node, "
        "holds {'a-1': [0]}"
    ]


def test_rule2_gang_split_over_two_nodes(tiny: Instance, tiny_plan_dict: Data) -> None:
    # ev (2 GPUs, at most one 4-GPU node) takes one GPU of a-1 and one of a-0. Slot 2 of a-0
    # holds 2 replicas (4 GPUs), so the extra GPU also overfills a-0 (rule 5).
    assignment(tiny_plan_dict, "ev")["gpus"] = {"a-0": [0], "a-1": [0]}
    lines = verdict(tiny, tiny_plan_dict)
    assert has(lines, 2, "job 'ev'", "must hold exactly 2 GPUs of one node")
    assert has(lines, 5, "a-0 uses more GPUs than it has at slot 2")


def test_rule2_gpu_index_out_of_range(tiny: Instance, tiny_plan_dict: Data) -> None:
    assignment(tiny_plan_dict, "ev")["gpus"] = {"a-1": [0, 4]}
    assert verdict(tiny, tiny_plan_dict) == [
        "rule 2: job 'ev': GPU indices [0, 4] on a-1 are not distinct indices in 0..3"
    ]


def test_rule2_repeated_gpu_index(tiny: Instance, tiny_plan_dict: Data) -> None:
    assignment(tiny_plan_dict, "ev")["gpus"] = {"a-1": [1, 1]}
    lines = verdict(tiny, tiny_plan_dict)
    assert has(lines, 2, "GPU indices [1, 1] on a-1 are not distinct")
    assert has(lines, 2, "must hold exactly 2 GPUs of one node")


def test_rule2_node_of_another_pool(tiny: Instance, tiny_plan_dict: Data) -> None:
    assignment(tiny_plan_dict, "ev")["gpus"] = {"b-0": [0, 1]}  # pool is a
    assert verdict(tiny, tiny_plan_dict) == [
        "rule 2: job 'ev': node 'b-0' is not a node of pool 'a'"
    ]


def test_rule2_unknown_node(tiny: Instance, tiny_plan_dict: Data) -> None:
    assignment(tiny_plan_dict, "ev")["gpus"] = {"a-7": [0, 1]}
    assert verdict(tiny, tiny_plan_dict) == [
        "rule 2: job 'ev': node 'a-7' is not a node of pool 'a'"
    ]


# -- rule 3: dependencies ------------------------------------------------------------------------


def test_rule3_starts_before_predecessor_ends(tiny: Instance, tiny_plan_dict: Data) -> None:
    # ev moves to slot 1 on a-0 (chat holds 1 replica = 2 GPUs there, so 2 are free); train
    # still runs 0-2.
    assignment(tiny_plan_dict, "ev").update(start=1, end=2, gpus={"a-0": [0, 1]})
    assert verdict(tiny, tiny_plan_dict) == [
        "rule 3: job 'ev' starts at 1, before 'train' ends at 2"
    ]


def test_rule3_predecessor_not_assigned(tiny: Instance, tiny_plan_dict: Data) -> None:
    tiny_plan_dict["assignments"].remove(assignment(tiny_plan_dict, "train"))
    tiny_plan_dict["unscheduled"] = [{"job": "train", "reason": "no room"}]
    assert verdict(tiny, tiny_plan_dict) == [
        "rule 3: job 'ev' runs after 'train', which is not assigned"
    ]


# -- rule 4: GPU indices -------------------------------------------------------------------------

# SMALL: 5 slots, pool a of two 4-GPU nodes, a-1 down in slot 3, no inference.
# Valid plan: x on a-0 GPUs 0-1 and y on a-0 GPUs 2-3 in slots 0-1; the 8-GPU gang g takes both
# whole nodes in slot 2.
SMALL: Data = {
    "name": "small",
    "horizon": {"slots": 5},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 2, "gpus_per_node": 4}],
    "outages": [{"node": "a-1", "start": 3, "end": 4}],
    "jobs": [
        {"id": "x", "priority": 1, "gpus": 2, "duration": 2},
        {"id": "y", "priority": 1, "gpus": 2, "duration": 2},
        {"id": "g", "priority": 1, "gpus": 8, "duration": 1},
    ],
}
SMALL_PLAN: Data = {
    "instance": "small",
    "solver": "hand",
    "status": "heuristic",
    "objective": 0,
    "assignments": [
        {"job": "x", "pool": "a", "start": 0, "end": 2, "gpus": {"a-0": [0, 1]}},
        {"job": "y", "pool": "a", "start": 0, "end": 2, "gpus": {"a-0": [2, 3]}},
        {
            "job": "g",
            "pool": "a",
            "start": 2,
            "end": 3,
            "gpus": {"a-0": [0, 1, 2, 3], "a-1": [3, 2, 1, 0]},
        },
    ],
}


@pytest.fixture
def small(compile_spec: Callable[[Data], Instance]) -> Instance:
    return compile_spec(SMALL)


@pytest.fixture
def small_plan() -> Data:
    return copy.deepcopy(SMALL_PLAN)


def test_small_plan_is_valid(small: Instance, small_plan: Data) -> None:
    assert verdict(small, small_plan) == []


def test_rule4_gpu_index_clash(small: Instance, small_plan: Data) -> None:
    # y takes GPUs 1-2 instead of 2-3: 4 GPUs in use on a-0 (no capacity problem), but GPU 1 is
    # held by x and y at slots 0 and 1.
    assignment(small_plan, "y")["gpus"] = {"a-0": [1, 2]}
    assert verdict(small, small_plan) == [
        "rule 4: GPU 1 of a-0 is held by several jobs at slots 0..1 (2 slots): x, y"
    ]


def test_rule4_partial_overlap_in_time(small: Instance, small_plan: Data) -> None:
    # y moves to slots 1-2 on x's GPUs 0-1: it meets x (slots 0-1) in slot 1 and the whole-node
    # gang g in slot 2. GPUs 2-3 are only g's. Slot 2 of a-0 holds 2 + 4 GPUs (rule 5).
    assignment(small_plan, "y").update(start=1, end=3, gpus={"a-0": [0, 1]})
    assert verdict(small, small_plan) == [
        "rule 4: GPU 0 of a-0 is held by several jobs at slots 1..2 (2 slots): x, y, g",
        "rule 4: GPU 1 of a-0 is held by several jobs at slots 1..2 (2 slots): x, y, g",
        "rule 5: a-0 uses more GPUs than it has at slot 2 (slot 2: 6 used, 4 available, node up)",
    ]


def test_rule4_gpu_held_while_node_down(small: Instance, small_plan: Data) -> None:
    # y runs in slots 3-4 on a-1, which is down in slot 3 (capacity 0: rule 5 too).
    assignment(small_plan, "y").update(start=3, end=5, gpus={"a-1": [0, 1]})
    lines = verdict(small, small_plan)
    assert has(lines, 4, "job 'y' holds GPUs of a-1 while it is down (slot 3)")
    assert has(lines, 5, "a-1 uses more GPUs than it has at slot 3", "node down")
    assert len(lines) == 2


def test_rule4_gang_over_an_outage(small: Instance, small_plan: Data) -> None:
    assignment(small_plan, "g").update(start=3, end=4)
    lines = verdict(small, small_plan)
    assert has(lines, 4, "job 'g' holds GPUs of a-1 while it is down (slot 3)")
    assert not has(lines, 4, "a-0")


def test_rule2_whole_nodes_for_a_large_gang(small: Instance, small_plan: Data) -> None:
    assignment(small_plan, "g")["gpus"] = {"a-0": [0, 1, 2, 3]}
    assert verdict(small, small_plan) == [
        "rule 2: job 'g': a gang of 8 on pool a must hold 2 whole nodes of 4 GPUs"
    ]


def test_rule2_large_gang_on_part_of_a_node(small: Instance, small_plan: Data) -> None:
    assignment(small_plan, "g")["gpus"] = {"a-0": [0, 1, 2, 3], "a-1": [0, 1, 2]}
    assert has(verdict(small, small_plan), 2, "must hold 2 whole nodes of 4 GPUs")


# -- rule 5: node capacity ----------------------------------------------------------------------


def test_rule5_replicas_over_capacity(tiny: Instance, tiny_plan_dict: Data) -> None:
    # One more chat replica (2 GPUs) on a-1 while train holds its 4 GPUs in slots 0-1.
    tiny_plan_dict["inference"].append(
        {"service": "chat", "node": "a-1", "start": 0, "end": 2, "replicas": 1}
    )
    assert verdict(tiny, tiny_plan_dict) == [
        "rule 5: a-1 uses more GPUs than it has at slots 0..1 (2 slots) "
        "(slot 0: 6 used, 4 available, node up)"
    ]


def test_rule5_replicas_alone_over_capacity(tiny: Instance, tiny_plan_dict: Data) -> None:
    # 3 replicas x 2 GPUs = 6 on the 4-GPU a-0 in slot 0 (more replicas than req is fine).
    tiny_plan_dict["inference"][0]["replicas"] = 3
    assert verdict(tiny, tiny_plan_dict) == [
        "rule 5: a-0 uses more GPUs than it has at slot 0 (slot 0: 6 used, 4 available, node up)"
    ]


def test_rule5_replicas_on_a_down_node(tiny: Instance, tiny_plan_dict: Data) -> None:
    tiny_plan_dict["inference"].append(
        {"service": "chat", "node": "a-1", "start": 3, "end": 4, "replicas": 1}
    )
    assert verdict(tiny, tiny_plan_dict) == [
        "rule 5: a-1 uses more GPUs than it has at slot 3 (slot 3: 2 used, 0 available, node down)"
    ]


# -- rule 6: inference --------------------------------------------------------------------------


def test_rule6_too_few_replicas(tiny: Instance, tiny_plan_dict: Data) -> None:
    # Slot 3 needs 2 replicas; keep only 1 there.
    tiny_plan_dict["inference"][2]["end"] = 3
    tiny_plan_dict["inference"].append(
        {"service": "chat", "node": "a-0", "start": 3, "end": 4, "replicas": 1}
    )
    assert verdict(tiny, tiny_plan_dict) == [
        "rule 6: service 'chat' has fewer replicas than required at slot 3 (slot 3: 1 < 2)"
    ]


def test_rule6_headroom_counts(tiny: Instance, tiny_plan_dict: Data) -> None:
    # Slot 1 forecasts 0.5 replicas, req = ceil(0.5 * 1.5) = 1; slot 0 forecasts 1, req 2.
    tiny_plan_dict["inference"][0]["replicas"] = 1
    assert verdict(tiny, tiny_plan_dict) == [
        "rule 6: service 'chat' has fewer replicas than required at slot 0 (slot 0: 1 < 2)"
    ]


def test_rule6_no_inference_at_all(tiny: Instance, tiny_plan_dict: Data) -> None:
    tiny_plan_dict["inference"] = []
    assert verdict(tiny, tiny_plan_dict) == [
        "rule 6: service 'chat' has fewer replicas than required at slots 0..3 (4 slots) "
        "(slot 0: 0 < 2)"
    ]


def test_rule6_replicas_outside_the_pool(tiny: Instance, tiny_plan_dict: Data) -> None:
    tiny_plan_dict["inference"][3]["node"] = "b-0"  # the replica of slot 2 moves off pool a
    lines = verdict(tiny, tiny_plan_dict)
    assert has(lines, 6, "service 'chat': node 'b-0' is not in its pool 'a'")
    assert has(lines, 6, "fewer replicas than required at slot 2 (slot 2: 2 < 3)")
    assert len(lines) == 2


def test_rule6_unknown_service(tiny: Instance, tiny_plan_dict: Data) -> None:
    tiny_plan_dict["inference"].append(
        {"service": "search", "node": "a-0", "start": 0, "end": 1, "replicas": 1}
    )
    assert verdict(tiny, tiny_plan_dict) == ["rule 6: inference block for unknown service 'search'"]


@pytest.mark.parametrize(
    ("start", "end", "replicas"), [(3, 2, 1), (2, 5, 1), (-1, 1, 1), (1, 2, -1)]
)
def test_rule6_bad_block(
    tiny: Instance, tiny_plan: Plan, start: int, end: int, replicas: int
) -> None:
    # Built without validation: a plan file cannot hold the negative values (Plan.read rejects
    # them), a plan built in Python can.
    block = InferenceBlock.model_construct(
        service="chat", node="a-0", start=start, end=end, replicas=replicas
    )
    plan = tiny_plan.model_copy(update={"inference": [*tiny_plan.inference, block]})
    assert [str(v) for v in check(tiny, plan)] == [
        f"rule 6: service 'chat' on a-0: bad block [{start}, {end}) x {replicas}"
    ]


def test_all_rules_at_once(tiny: Instance, tiny_plan_dict: Data) -> None:
    d = tiny_plan_dict
    d["unscheduled"] = [{"job": "ghost", "reason": "?"}]  # rule 1
    assignment(d, "quant")["end"] = 3  # rule 2
    # ev at slot 1 on train's GPUs of a-1: before train ends (3), GPUs 0-1 held twice (4), 6 of
    # 4 GPUs in use (5).
    assignment(d, "ev").update(start=1, end=2, gpus={"a-1": [0, 1]})
    d["inference"][0]["replicas"] = 1  # rule 6 (slot 0: 1 < 2)
    violations = check(tiny, Plan.parse(d))
    assert sorted({v.rule for v in violations}) == [1, 2, 3, 4, 5, 6]
    assert [v.rule for v in violations] == sorted(v.rule for v in violations)
