"""The team rules where FORMAT.md ("Teams", "Metrics by team") could be read two ways: each
reading the project implements, pinned on a hand plan of a tiny instance.

Two 8-GPU nodes, 4 slots. Blue's two jobs hold both nodes all day (blue borrows 8 above its
quota of 8 at every slot); red's job (8 GPUs, 2 slots, released at 1) is left out. With red's
quota of 8, blue's borrowing keeps it out at slots 1 and 2 (from 3 it cannot end by slot 4).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from conftest import BORROWED

import horizon_opt as ho
from horizon_opt.errors import InstanceError
from horizon_opt.model.load import parse_spec
from horizon_opt.plans.check import kept_out

EIGHT = list(range(8))


def spec(**change: Any) -> dict[str, Any]:
    data = copy.deepcopy(BORROWED)
    data.update(change)
    return data


def plan_of(assignments: list[tuple[str, str, int, int]]) -> ho.Plan:
    """A hand plan: (job, node, start, end) of 8 GPUs each; every other job unscheduled."""
    jobs = [j["id"] for j in BORROWED["jobs"]]
    placed = {a[0] for a in assignments}
    return ho.Plan.parse(
        {
            "format": "horizon-opt.plan/1",
            "instance": "borrowed",
            "solver": "hand",
            "status": "heuristic",
            "objective": 0.0,
            "assignments": [
                {"job": j, "pool": "p", "start": s, "end": e, "gpus": {n: EIGHT}}
                for j, n, s, e in assignments
            ],
            "unscheduled": [{"job": j, "reason": "by hand"} for j in jobs if j not in placed],
        }
    )


BLUE_ALL_DAY = plan_of([("b1", "p-0", 0, 4), ("b2", "p-1", 0, 4)])


def red_kept_out(data: dict[str, Any], plan: ho.Plan = BLUE_ALL_DAY) -> list[int]:
    inst = ho.compile_instance(parse_spec(data))
    return [int(t) for t in kept_out(inst, plan)[0, 0].nonzero()[0]]


def test_the_base_case_keeps_red_out_at_slots_1_and_2() -> None:
    assert red_kept_out(BORROWED) == [1, 2]


def test_a_pool_missing_from_the_quota_is_a_quota_of_0() -> None:
    data = spec()
    data["teams"][0] = {"name": "red"}  # no quota listed
    assert red_kept_out(data) == []
    inst = ho.compile_instance(parse_spec(data))
    m = ho.evaluate(inst, BLUE_ALL_DAY)
    assert m.teams["red"].quota_gpu_hours == 0.0 and m.teams["red"].lent_gpu_hours == 0.0


def test_rule_9_ignores_deadlines() -> None:
    data = spec()
    data["jobs"][2]["deadline"] = 1  # it can no longer earn anything, yet it is kept out
    assert red_kept_out(data) == [1, 2]


def test_a_job_waits_only_before_its_start() -> None:
    # Blue's b2 ends at 2 and red starts at 2: kept out at 1 only (start > t), not from 2 on.
    plan = plan_of([("b1", "p-0", 0, 4), ("b2", "p-1", 0, 2), ("r1", "p-1", 2, 4)])
    data = spec()
    data["jobs"][1]["duration"] = 2
    assert red_kept_out(data, plan) == [1]


def test_jobs_without_a_team_are_in_use_but_never_in_b_and_never_kept_out() -> None:
    data = spec()
    for job in data["jobs"][:2]:
        del job["team"]  # blue's GPUs are now teamless work: nothing to reclaim
    assert red_kept_out(data) == []
    data = spec()
    del data["jobs"][2]["team"]  # a teamless job waits, kept out of nothing
    inst = ho.compile_instance(parse_spec(data))
    assert not kept_out(inst, BLUE_ALL_DAY).any()


def test_b_counts_only_what_can_move_but_lent_counts_all_borrowing() -> None:
    data = spec(now=1)
    for job, node in zip(data["jobs"][:2], ("p-0", "p-1"), strict=True):
        job["placed"] = {"pool": "p", "start": 0, "gpus": {node: EIGHT}}
    inst = ho.compile_instance(parse_spec(data))
    assert not kept_out(inst, BLUE_ALL_DAY).any()  # placed jobs are never reclaimed
    red = ho.evaluate(inst, BLUE_ALL_DAY).teams["red"]
    assert red.lent_gpu_hours == 24.0  # 8 GPUs at slots 1, 2 and 3, placed or not


def test_fairness_is_null_where_it_would_be_0_over_0() -> None:
    teamless = spec()
    for job in teamless["jobs"]:
        del job["team"]
    zero = spec(teams=[{"name": "red", "quota": {"p": 0}}, {"name": "blue"}])
    for data in (teamless, zero):
        inst = ho.compile_instance(parse_spec(data))
        assert ho.evaluate(inst, BLUE_ALL_DAY).team_fairness is None


def test_a_team_with_no_job_on_time_waits_0_hours() -> None:
    inst = ho.compile_instance(parse_spec(BORROWED))
    red = ho.evaluate(inst, BLUE_ALL_DAY).teams["red"]
    assert (red.completed, red.mean_wait_hours) == (0, 0.0)


@pytest.mark.parametrize(
    ("team", "field"),
    [
        ({"name": "red", "quota": {"p": 102_400_001}}, "teams[0].quota.p"),
        ({"name": "red", "limit": {"p": -1}}, "teams[0].limit.p"),
        ({"name": "red", "weight": 0}, "teams[0].weight"),
        ({"name": "red", "weight": 1_000_001}, "teams[0].weight"),
        ({"name": "red", "quota": {"p": 8}, "limit": {"p": 4}}, "teams[0].limit.p"),
    ],
)
def test_the_ranges_table_rows_for_teams(team: dict[str, Any], field: str) -> None:
    data = spec(teams=[team, {"name": "blue"}])
    with pytest.raises(InstanceError) as err:
        ho.compile_instance(parse_spec(data))
    assert any(line.startswith(field) for line in err.value.problems), err.value.problems


def test_the_largest_quota_and_weight_are_taken() -> None:
    team = {"name": "red", "quota": {"p": 102_400_000}, "weight": 1_000_000}
    ho.compile_instance(parse_spec(spec(teams=[team, {"name": "blue"}])))
