"""Teams: the format, the hard limit in every solver and in the checker, the cause code, and
the per-team metrics, each on a tiny instance with its hand arithmetic."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import BORROWED
from typer.testing import CliRunner

import horizon_opt as ho
from horizon_opt.analysis.whatif import apply_changes, parse_change
from horizon_opt.cli import app
from horizon_opt.errors import InputError, InstanceError
from horizon_opt.model.load import parse_spec
from horizon_opt.plans.inference import elastic_layout
from horizon_opt.plans.plan import Assignment
from horizon_opt.relaxation import proven_bound
from horizon_opt.relaxation.pool_model import PoolLimits, pool_bound
from horizon_opt.solvers.assemble import Placement
from horizon_opt.solvers.backfill import fair_share
from horizon_opt.solvers.diagnosis import unscheduled_causes

SOLVERS = list(ho.SOLVERS)
FAST = {"time_limit": 5.0, "workers": 1, "seed": 0}

# Three 8-GPU nodes, 4 slots. Team red may hold 8 GPUs of pool p at a time, blue has no limit.
# Red's three jobs (8 GPUs, 2 slots, priority 3: value 3 * 8 * 2 = 48 each) can then only run
# one after the other: two of them in 4 slots (96). Blue's job (8 GPUs, 4 slots, priority 1:
# 32) runs beside them. Optimum 128; without the limit all four fit on the three nodes (176).
# The third red job finds a free node, but red's limit is held there: cause `team-limit`.
LIMITED: dict[str, Any] = {
    "name": "limited",
    "horizon": {"slots": 4},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 3, "gpus_per_node": 8}],
    "teams": [
        {"name": "red", "quota": {"p": 8}, "limit": {"p": 8}},
        {"name": "blue", "quota": {"p": 8}, "weight": 2},
    ],
    "jobs": [
        {"id": "r1", "priority": 3, "gpus": 8, "duration": 2, "team": "red"},
        {"id": "r2", "priority": 3, "gpus": 8, "duration": 2, "team": "red"},
        {"id": "r3", "priority": 3, "gpus": 8, "duration": 2, "team": "red"},
        {"id": "b1", "priority": 1, "gpus": 8, "duration": 4, "team": "blue"},
    ],
}


def build(data: dict[str, Any]) -> ho.Instance:
    return ho.compile_instance(parse_spec(data))


def without_limits(data: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(data)
    for team in out["teams"]:
        team.pop("limit", None)
    return out


@pytest.mark.parametrize("solver", SOLVERS)
def test_every_solver_keeps_the_limit(solver: str) -> None:
    inst = build(LIMITED)
    plan = ho.solve(inst, solver, **FAST)
    assert ho.check(inst, plan) == []
    red = [a for a in plan.assignments if a.job.startswith("r")]
    for t in range(4):
        assert sum(8 for a in red if a.start <= t < a.end) <= 8


def test_cpsat_proves_the_optimum_with_and_without_the_limit() -> None:
    # (without quotas: with them, cpsat searches within them first, see below)
    plan = ho.solve(build(without_quotas(LIMITED)), "cpsat", **FAST)
    assert (plan.objective, plan.status) == (128.0, "optimal")
    free = ho.solve(build(without_quotas(without_limits(LIMITED))), "cpsat", **FAST)
    assert (free.objective, free.status) == (176.0, "optimal")


def test_with_quotas_cpsat_searches_within_them_and_keeps_a_valid_bound() -> None:
    # Within the quotas (red 8, blue 8), the search finds 128; the pool-level model of the
    # instance as written (red's real limit 8, no quotas) proves it optimal.
    inst = build(LIMITED)
    plan = ho.solve(inst, "cpsat", **FAST)
    assert ho.check(inst, plan) == []
    assert (plan.objective, plan.status, plan.bound_source) == (128.0, "optimal", "pool-cpsat")
    assert plan.bound == pytest.approx(128.0)


def test_bounds_with_the_limits_reach_its_optimum() -> None:
    """The LP and the pool-level model keep team limits (red's 8 GPUs over 4 slots fit two of
    its 2-slot 8-GPU jobs, 96, beside blue's 32): 128, the optimum; without the limit, 176."""
    inst = build(LIMITED)
    assert proven_bound(inst, time_limit=5.0).value == pytest.approx(128.0)
    pool = pool_bound(inst, PoolLimits(seconds=5.0))
    assert pool.optimal and pool.value == pytest.approx(128.0)
    free = build(without_limits(LIMITED))
    assert proven_bound(free, time_limit=5.0).value == pytest.approx(176.0)


def test_the_job_kept_out_by_its_limit_says_so() -> None:
    inst = build(LIMITED)
    plan = ho.solve(inst, "cpsat", **FAST)
    (left,) = plan.unscheduled
    assert left.job.startswith("r") and left.code == "team-limit"
    assert "team red's jobs hold its limit of 8 GPUs" in left.reason


def test_the_checker_finds_a_limit_broken_at_one_slot() -> None:
    inst = build(LIMITED)
    plan = ho.solve(inst, "cpsat", **FAST)
    runs = {a.job: a for a in plan.assignments}
    first, second = sorted(
        (a for a in runs.values() if a.job.startswith("r")), key=lambda a: a.start
    )
    # Move the second red run one slot earlier, onto a node of its own: slot 1 holds 16.
    node = next(
        n
        for n in ("p-0", "p-1", "p-2")
        if n not in first.gpus
        and all(n not in a.gpus for a in runs.values() if a.job.startswith("b"))
    )
    moved = Assignment(job=second.job, pool="p", start=1, end=3, gpus={node: list(range(8))})
    broken = plan.model_copy(
        update={"assignments": [a if a.job != second.job else moved for a in plan.assignments]}
    )
    (violation,) = ho.check(inst, broken)
    assert violation.rule == 8
    assert "team 'red'" in violation.message and "slot 1: 16 held, limit 8" in violation.message


def test_placed_jobs_over_a_lowered_limit_are_not_a_violation_but_block_new_work() -> None:
    data = copy.deepcopy(LIMITED)
    data["now"] = 1
    data["jobs"][0]["placed"] = {"pool": "p", "start": 0, "gpus": {"p-0": list(range(8))}}
    data["jobs"][1]["placed"] = {"pool": "p", "start": 0, "gpus": {"p-1": list(range(8))}}
    inst = build(data)
    for solver in SOLVERS:
        plan = ho.solve(inst, solver, **FAST)
        assert ho.check(inst, plan) == [], solver
        runs = {a.job: a for a in plan.assignments}
        # r1 and r2 hold 16 > 8 until slot 2: r3 may start at 2 at the earliest.
        assert "r3" not in runs or runs["r3"].start >= 2, solver


def test_team_figures_by_hand() -> None:
    inst = build(LIMITED)
    plan = ho.solve(inst, "cpsat", **FAST)
    m = ho.evaluate(inst, plan)
    red, blue = m.teams["red"], m.teams["blue"]
    # Red: two runs of 8 GPUs x 2 h = 32 GPU-h, its quota 8 x 4 h = 32: nothing borrowed.
    assert (red.gpu_hours, red.quota_gpu_hours, red.borrowed_gpu_hours) == (32.0, 32.0, 0.0)
    assert (red.pwo, red.completed) == (96.0, 2)
    # Blue: 8 GPUs x 4 h = 32 within its quota of 8.
    assert (blue.gpu_hours, blue.borrowed_gpu_hours, blue.pwo) == (32.0, 0.0, 32.0)
    assert red.share == blue.share == red.quota_share == 0.5
    assert m.team_fairness == pytest.approx(1.0)


def test_borrowed_and_lent_by_hand() -> None:
    # Blue has no work; red's two jobs (no limit now) are due at slot 2, so both run at 0-2:
    # red holds 16 while its quota is 8, for 2 h, on blue's idle quota: red borrows 8 x 2 = 16
    # GPU-h, blue lends 16 of its 32.
    data = without_limits(LIMITED)
    data["jobs"] = [{**job, "deadline": 2} for job in data["jobs"][:2]]
    inst = build(data)
    plan = ho.solve(inst, "cpsat", **FAST)
    red, blue = ho.evaluate(inst, plan).teams.values()
    assert (red.borrowed_gpu_hours, red.lent_gpu_hours) == (16.0, 0.0)
    assert (blue.gpu_hours, blue.borrowed_gpu_hours, blue.lent_gpu_hours) == (0.0, 0.0, 16.0)
    # Shares 1 and 0 against quota shares 1/2 each: Jain's index (2 + 0)^2 / (2 * 4) = 1/2.
    assert ho.evaluate(inst, plan).team_fairness == pytest.approx(0.5)


def test_no_teams_no_team_figures() -> None:
    data = {k: v for k, v in LIMITED.items() if k != "teams"}
    data["jobs"] = [{k: v for k, v in j.items() if k != "team"} for j in LIMITED["jobs"]]
    inst = build(data)
    plan = ho.solve(inst, "greedy", **FAST)
    dumped = plan.model_dump(mode="json")["metrics"]
    assert "teams" not in dumped and "team_fairness" not in dumped


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["jobs"][0].update(team="green"), "jobs[0].team: unknown team 'green'"),
        (lambda d: d["teams"][0]["quota"].update(q=1), "teams[0].quota.q: unknown pool 'q'"),
        (lambda d: d["teams"][1].update(name="red"), "teams[1].name: duplicate team name 'red'"),
        (
            lambda d: d["teams"][0]["limit"].update(p=4),
            "teams[0].limit.p: limit 4 is below the quota 8",
        ),
    ],
)
def test_bad_teams_are_refused_naming_the_field(change: Any, message: str) -> None:
    data = copy.deepcopy(LIMITED)
    change(data)
    with pytest.raises(InstanceError) as err:
        build(data)
    assert any(message in line for line in err.value.problems)


def test_the_replay_keeps_the_limits_and_reports_each_team(tmp_path: Path) -> None:
    path = tmp_path / "limited.yaml"
    path.write_text(yaml.safe_dump(LIMITED))
    out = tmp_path / "out"
    args = ["simulate", str(path), "-o", str(out), "-t", "1", "--policy", "backfill,cpsat"]
    args += ["--no-charts"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    for policy in ("backfill", "cpsat"):
        actual = ho.load_instance(out / f"{policy}.actual.yaml")
        ran = ho.Plan.read(out / f"{policy}.ran.json")
        assert ho.check(actual, ran) == [], policy
    summary = (out / "summary.md").read_text()
    assert "by team, as it really ran:" in summary
    assert summary.count("| fairness |") == 2


def test_what_if_a_team_had_another_limit() -> None:
    # Red's limit raised to 16: two of its jobs run at once, all four jobs fit (176).
    change = parse_change("red:p=16", "limit")
    assert str(change) == "--limit red:p=16"
    changed = ho.compile_instance(apply_changes(parse_spec(LIMITED), [change]))
    assert ho.solve(changed, "cpsat", **FAST).objective == 176.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("red=16", "--limit red=16: expected TEAM:POOL=N"),
        ("red:p=x", "--limit red:p=x: N must be a whole number of GPUs"),
        ("green:p=16", "--limit green:p=16: unknown team 'green' (teams: red, blue)"),
        ("red:q=16", "--limit red:q=16: unknown pool 'q' (pools: p)"),
        ("red:p=4", "--limit red:p=4: below the quota of team 'red': 8 GPUs on p"),
    ],
)
def test_what_if_limit_errors_name_the_option(text: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        apply_changes(parse_spec(LIMITED), [parse_change(text, "limit")])
    assert any(message in line for line in err.value.problems)


def without_quotas(data: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(data)
    for team in out["teams"]:
        team.pop("quota", None)
    return out


def borrowing_plan() -> ho.Plan:
    """BORROWED's optimum without rule 9: blue's two jobs all day, red's job out."""
    plan = ho.solve(build(without_quotas(BORROWED)), "cpsat", **FAST)
    assert (plan.objective, [u.job for u in plan.unscheduled]) == (128.0, ["r1"])
    return plan


def test_a_borrower_keeping_an_owner_out_breaks_rule_9() -> None:
    inst = build(BORROWED)
    plan = borrowing_plan()
    (violation,) = ho.check(inst, plan)
    assert violation.rule == 9
    assert "team 'red' has a job waiting within its quota on pool 'p'" in violation.message
    assert violation.message.endswith("at slots 1..2 (2 slots)")
    teams = ho.evaluate(inst, plan).teams
    assert (teams["blue"].borrowed_gpu_hours, teams["red"].lent_gpu_hours) == (32.0, 32.0)
    assert (teams["red"].kept_out_slots, teams["blue"].kept_out_slots) == (2, 0)


@pytest.mark.parametrize("solver", SOLVERS)
def test_every_solver_gives_the_quota_back(solver: str) -> None:
    inst = build(BORROWED)
    plan = ho.solve(inst, solver, **FAST)
    assert ho.check(inst, plan) == []
    starts = {a.job: a.start for a in plan.assignments}
    assert starts["r1"] == 1 and len(starts) == 2 and plan.objective == 80.0
    assert all(f.kept_out_slots == 0 for f in ho.evaluate(inst, plan).teams.values())
    if plan.bound is not None:  # the bound leaves quotas out: 128 still holds, 80 is below it
        assert plan.status == "feasible" and plan.bound >= 128.0


def test_borrowing_from_an_idle_team_keeps_nobody_out() -> None:
    data = copy.deepcopy(BORROWED)
    data["jobs"] = data["jobs"][:2]  # red has no work
    inst = build(data)
    plan = ho.solve(inst, "cpsat", **FAST)
    teams = ho.evaluate(inst, plan).teams
    assert teams["blue"].borrowed_gpu_hours == 32.0
    assert (teams["red"].kept_out_slots, teams["blue"].kept_out_slots) == (0, 0)


def test_a_hint_over_the_limit_is_not_taken_as_it_is() -> None:
    # The plan without limits (all four jobs, 176) as cpsat's hint: its third red run breaks
    # red's limit, so cpsat starts from what fits and still ends valid at the optimum.
    inst = build(LIMITED)
    free = ho.solve(build(without_limits(LIMITED)), "cpsat", **FAST)
    assert free.objective == 176.0
    plan = ho.solve(inst, "cpsat", **FAST, hint=free)
    assert ho.check(inst, plan) == []
    assert plan.objective == 128.0


def test_the_owner_kept_out_is_told_who_borrowed_its_quota() -> None:
    inst = build(BORROWED)
    plan = borrowing_plan()
    placements = [
        Placement(inst.job_index[a.job], 0, a.start, tuple(inst.node_index[n] for n in a.gpus))
        for a in plan.assignments
    ]
    cause = unscheduled_causes(inst, placements, elastic_layout(inst))[inst.job_index["r1"]]
    assert cause.code == "quota-borrowed-by"
    # Blue holds 16 against a quota of 8: one of its jobs (the first, of two of equal value)
    # runs on borrowed GPUs; without it r1 fits at slot 1, within red's quota of 8.
    assert cause.sentence.startswith(
        "would fit from slot 1 on p within team red's quota if blue gave back GPUs held above "
        "their quotas: b"
    )


def test_validate_warns_of_a_limit_below_a_gang_and_overbooked_quotas() -> None:
    data = copy.deepcopy(LIMITED)
    data["teams"][0]["limit"] = {"p": 8}
    data["jobs"][0]["gpus"] = 16  # red's limit of 8 can never hold it
    data["teams"][1]["quota"] = {"p": 20}  # 8 + 20 > the pool's 24 GPUs
    warnings = ho.validate(build(data))
    assert (
        "jobs[0].team: the limit of team 'red' is below its 16 GPUs on every pool it may use: it "
        "can never run" in warnings
    )
    assert (
        "teams: quotas on pool 'p' add up to 28 GPUs, more than its 24: not every team can have "
        "its quota at once" in warnings
    )


# One 8-GPU node, 6 slots; red and blue are entitled to half each. Red's two jobs (priority 3)
# and blue's one (priority 1) all wait from slot 0, 2 slots each. At slot 0 no team has used
# anything (factor 1): red's r1 starts. At slot 2 red has used all the GPU-hours so far
# (U = 1 against S = 1/2: factor 2^-2 = 0.25, priority 3 -> 0.75), blue none (factor 1,
# priority 1): blue's b1 starts before r2. Without quotas, priority alone: r2 at 2, b1 at 4.
FAIR: dict[str, Any] = {
    "name": "fair",
    "horizon": {"slots": 6},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 8}],
    "teams": [{"name": "red", "quota": {"p": 4}}, {"name": "blue", "quota": {"p": 4}}],
    "jobs": [
        {"id": "r1", "priority": 3, "gpus": 8, "duration": 2, "team": "red"},
        {"id": "r2", "priority": 3, "gpus": 8, "duration": 2, "team": "red"},
        {"id": "b1", "priority": 1, "gpus": 8, "duration": 2, "team": "blue"},
    ],
}


def test_backfill_orders_by_fair_share_when_teams_have_quotas() -> None:
    starts = {a.job: a.start for a in ho.solve(build(FAIR), "backfill").assignments}
    assert starts == {"r1": 0, "b1": 2, "r2": 4}
    data = copy.deepcopy(FAIR)
    for team in data["teams"]:
        team.pop("quota")
    starts = {a.job: a.start for a in ho.solve(build(data), "backfill").assignments}
    assert starts == {"r1": 0, "r2": 2, "b1": 4}


def test_fair_share_factors_by_hand() -> None:
    inst = build(FAIR)
    r1 = Placement(0, 0, 0, (0,))
    assert fair_share(inst, {0: r1}, 0) == {0: 1.0, 1: 1.0}  # nothing has run yet
    assert fair_share(inst, {0: r1}, 2) == {0: 0.25, 1: 1.0}


def test_solve_prints_each_team(tmp_path: Path) -> None:
    path = tmp_path / "limited.yaml"
    path.write_text(yaml.safe_dump(LIMITED))
    args = ["solve", str(path), "--solver", "greedy", "-o", str(tmp_path / "plan.json")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    # red: two runs of 8 GPUs x 2 h = 32 of its 8 x 4 h = 32 quota GPU-h, pwo 96
    line = "  team " + "red".ljust(27) + "32 of 32 quota GPU-h (0 borrowed), pwo 96.00"
    assert line in result.output.splitlines()


@pytest.mark.parametrize("solver", SOLVERS)
def test_the_borrower_left_out_for_a_quota_says_so(solver: str) -> None:
    # In BORROWED's plan with quotas kept, one of blue's jobs (64) is left out: it would fit by
    # moving red's r1 (16), but r1 runs within red's quota and blue would hold 16 > 8.
    inst = build(BORROWED)
    plan = ho.solve(inst, solver, **FAST)
    (left,) = plan.unscheduled
    assert left.job in ("b1", "b2") and left.code == "others-quota"
    assert "runs within its own team's quota (red) and team blue would hold more" in left.reason
