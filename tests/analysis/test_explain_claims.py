"""Every kind of claim `explain` makes, checked by solving again rather than by reading the code:

- earliest start alone: the job with the jobs it runs after (nothing else) is solved by CP-SAT
  with the job held to start exactly there (a plan exists) and to end one slot earlier on each of
  its pools (proved impossible);
- the priority threshold: the job's priority set just above and just below the stated number,
  and solved again with the solver the sentence speaks of;
- "no priority is enough", and what a job waiting on its predecessors is told: solved again with
  a priority far above everything else;
- the work in its way: the stated total is the sum of the named jobs' values, and moving them
  gives a plan that the checker accepts.

Each instance is small enough to do by hand; the arithmetic is written above it. Values are
`priority x GPUs x fastest duration x h`, with h = 1 everywhere here.
"""

from __future__ import annotations

import copy
import re

import pytest
from conftest import Spec, build
from test_causes import NO_POOL, deadline_data, predecessor_data, reserved_data, room_data
from test_explain import TROUGH, assert_move_is_valid

import horizon_opt as ho
from horizon_opt.analysis.explain import JobExplanation, explain
from horizon_opt.export.explanations import what_it_takes
from horizon_opt.plans.check import check
from horizon_opt.solvers import SolveOptions

CPSAT = SolveOptions(time_limit=2.0, workers=1, seed=0)
HUGE = 1e6  # a priority far above every other job's


def solve(data: Spec, solver: str) -> ho.Plan:
    """A plan of `data` that the checker accepts (cpsat: short and repeatable)."""
    inst = build(data)
    plan = ho.solve(inst, solver, CPSAT if solver == "cpsat" else None)
    assert check(inst, plan) == []
    return plan


def planned(plan: ho.Plan) -> dict[str, tuple[str, int]]:
    return {a.job: (a.pool, a.start) for a in plan.assignments}


def record(data: Spec, solver: str, job: str) -> tuple[ho.Instance, ho.Plan, JobExplanation]:
    inst = build(data)
    plan = solve(data, solver)
    (found,) = explain(inst, plan, job=job)
    return inst, plan, found


def with_priority(data: Spec, job: str, priority: float) -> Spec:
    out = copy.deepcopy(data)
    next(j for j in out["jobs"] if j["id"] == job)["priority"] = priority
    return out


# ---------------------------------------------------------------------------------------------
# Earliest start alone, with predecessors.
#
# RELAY: pools a and b, one 4-GPU node each, 12 slots; a-0 is down over [0, 3).
#   pre   4 GPUs, a: 2 / b: 4 slots. Starts at 0 on b (a is down); ends at 4 at the earliest (on
#         b; on a it runs 3-5).
#   post  after pre, 4 GPUs, 2 slots on a: starts at 4, when pre ends at the earliest (not at 2,
#         pre's shortest run: no window holds pre over [0, 2)).
#   A, B  4 GPUs, 2 slots on a: each alone starts at 3, when a-0 is back.
#   J     after A and B, 2 GPUs, 1 slot on a: A and B each alone end at 5, but both need all of
#         a-0: one runs 3-5, the other 5-7, so J starts at 7.
RELAY: Spec = {
    "name": "relay",
    "horizon": {"slots": 12},
    "pools": [
        {"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4},
        {"name": "b", "gpu_type": "B", "nodes": 1, "gpus_per_node": 4},
    ],
    "outages": [{"node": "a-0", "start": 0, "end": 3}],
    "jobs": [
        {"id": "pre", "priority": 1, "gpus": 4, "duration": {"a": 2, "b": 4}},
        {"id": "post", "priority": 1, "gpus": 4, "duration": {"a": 2}, "after": ["pre"]},
        {"id": "A", "priority": 1, "gpus": 4, "duration": {"a": 2}},
        {"id": "B", "priority": 1, "gpus": 4, "duration": {"a": 2}},
        {"id": "J", "priority": 1, "gpus": 2, "duration": {"a": 1}, "after": ["A", "B"]},
    ],
}
RELAY_ALONE = {"pre": (0, "b"), "post": (4, "a"), "A": (3, "a"), "B": (3, "a"), "J": (7, "a")}


def with_ancestors(data: Spec, job: str, pool: str, d: int, release: int, deadline: int) -> Spec:
    """`data` with only `job` (on `pool` for `d` slots, released at `release`, ending by
    `deadline`) and the jobs it runs after, transitively (as written, without deadlines: alone
    they need none)."""
    jobs = {j["id"]: copy.deepcopy(j) for j in data["jobs"]}
    keep: set[str] = set()
    stack = [job]
    while stack:
        q = stack.pop()
        if q not in keep:
            keep.add(q)
            stack.extend(jobs[q].get("after", []))
    for q in keep - {job}:
        jobs[q].pop("deadline", None)
    jobs[job].pop("pools", None)
    jobs[job] |= {"duration": {pool: d}, "release": release, "deadline": deadline}
    out = {k: copy.deepcopy(v) for k, v in data.items() if k != "jobs"}
    out["jobs"] = [jobs[j["id"]] for j in data["jobs"] if j["id"] in keep]
    return out


def assert_earliest_alone(data: Spec, r: JobExplanation) -> None:
    """A plan of the job and its ancestors alone starts it at `earliest_alone`; none starts it
    sooner on any of its pools."""
    inst = build(data)
    job = inst.jobs[inst.job_index[r.job]]
    durations = {inst.pools[p].name: d for p, d in job.durations.items()}
    ea, pool = r.earliest_alone, r.earliest_alone_pool
    assert ea is not None and pool is not None
    at = with_ancestors(data, r.job, pool, durations[pool], ea, ea + durations[pool])
    assert planned(solve(at, "cpsat"))[r.job] == (pool, ea)
    if ea == job.release:
        return
    for p, d in durations.items():
        # Every job's value is positive, so an optimal plan runs the job whenever it can.
        sooner = solve(with_ancestors(data, r.job, p, d, job.release, ea - 1 + d), "cpsat")
        assert sooner.status == "optimal", (r.job, p)
        assert r.job not in planned(sooner), (r.job, p)


ALONE_CASES = [(RELAY, job, where) for job, where in RELAY_ALONE.items()] + [
    (TROUGH, "after", (3, "a")),  # test_explain: after small, beside inference
]


@pytest.mark.parametrize(("data", "job", "where"), ALONE_CASES)
def test_earliest_start_alone_is_reached_and_is_the_earliest(
    data: Spec, job: str, where: tuple[int, str]
) -> None:
    _, _, r = record(data, "greedy", job)
    assert (r.earliest_alone, r.earliest_alone_pool) == where
    assert_earliest_alone(data, r)


# ---------------------------------------------------------------------------------------------
# The priority threshold.
#
# ONE_IN_THE_WAY: one 4-GPU node, 6 slots. H: priority 3, 4 GPUs, 4 slots, deadline 4 (48); j:
# priority 1, 4 GPUs, 4 slots, deadline 5 (16). Only one of them ends in time. Only H is in j's
# way: above 48 / 16 = 3 it is worth more, one by one and in total (both solvers agree: greedy
# ranks by priority, and j's work equals H's).
def one_in_the_way(j_priority: float) -> Spec:
    return {
        "name": "one-in-the-way",
        "horizon": {"slots": 6},
        "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4}],
        "jobs": [
            {"id": "H", "priority": 3, "gpus": 4, "duration": 4, "deadline": 4},
            {"id": "j", "priority": j_priority, "gpus": 4, "duration": 4, "deadline": 5},
        ],
    }


@pytest.mark.parametrize("solver", ["greedy", "cpsat"])
def test_a_threshold_over_one_job_holds_for_cpsat_and_greedy(solver: str) -> None:
    inst, plan, r = record(one_in_the_way(1), solver, "j")
    assert (r.status, r.code, r.window_moves) == ("not-planned", "higher-value-work", ("H",))
    assert r.priority_needed == pytest.approx(3.0)
    text = "\n".join(what_it_takes(inst, r))
    assert "with priority above 3 (now 1)" in text and "only above priority" not in text
    assert_move_is_valid(inst, plan, r, window=True)
    above = solve(one_in_the_way(3 * 1.001), solver)
    assert "j" in planned(above)
    below = solve(one_in_the_way(3 * 0.999), solver)
    assert "j" not in planned(below)
    if solver == "cpsat":
        assert above.status == below.status == "optimal"


# TWO_IN_THE_WAY: one 4-GPU node, 4 slots. X and Y (2 GPUs each, 4 slots, priority 1: 8 each)
# fill it; j (4 GPUs, 4 slots: 16 GPU-slots) needs all of it. One by one j outranks each above
# 8 / 16 = 0.5; in total above 16 / 16 = 1, and only then does a plan that maximizes pwo (cpsat)
# trade both for it (here, where the work has nowhere else to go; explain states no such total
# threshold, since elsewhere the work may move rather than go).
def two_in_the_way(j_priority: float) -> Spec:
    return {
        "name": "two-in-the-way",
        "horizon": {"slots": 4},
        "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4}],
        "jobs": [
            {"id": "X", "priority": 1, "gpus": 2, "duration": 4},
            {"id": "Y", "priority": 1, "gpus": 2, "duration": 4},
            {"id": "j", "priority": j_priority, "gpus": 4, "duration": 4},
        ],
    }


@pytest.mark.parametrize("priority", [0.4, 0.75])
def test_a_threshold_over_two_jobs_is_one_by_one(priority: float) -> None:
    # 0.4: below the one-by-one threshold; 0.75: above it ("already outranks each job"), yet
    # below the total. Either way cpsat's optimal plan leaves j out, and plans it only above 1.
    inst, plan, r = record(two_in_the_way(priority), "cpsat", "j")
    assert plan.status == "optimal" and set(planned(plan)) == {"X", "Y"}
    assert r.priority_needed == pytest.approx(0.5)
    assert set(r.window_moves) == {"X", "Y"}
    text = "\n".join(what_it_takes(inst, r))
    assert "one by one" in text
    assert "together that work is worth 16, more than its" in text
    assert "only above priority" not in text  # (true here, but no solve proves it in general)
    assert_move_is_valid(inst, plan, r, window=True)
    for p, runs in ((0.5 * 1.001, False), (0.999, False), (1.001, True)):
        again = solve(two_in_the_way(p), "cpsat")
        assert again.status == "optimal"
        assert ("j" in planned(again)) == runs, p


def test_greedy_may_leave_out_a_job_above_the_threshold_as_explain_says() -> None:
    # greedy orders by priority: j (0.5005) goes after X and Y (1), though it outranks each by
    # value: "greedy and fifo order by their own rules and may still leave it out". Above X's
    # and Y's priority, and the total (1), it goes first.
    inst, _, r = record(two_in_the_way(0.4), "greedy", "j")
    assert "greedy and fifo order by their own rules" in "\n".join(what_it_takes(inst, r))
    assert "j" not in planned(solve(two_in_the_way(0.5 * 1.001), "greedy"))
    assert "j" in planned(solve(two_in_the_way(1.001), "greedy"))


# BEHIND: one 4-GPU node, 4 slots. fifo runs X (priority 0.5, 4 GPUs, 4 slots: 8) first, in file
# order; j (priority 0.75: 12) is left out. It outranks X alone and in total (8 < 12): a plan
# that maximizes pwo runs j instead.
BEHIND: Spec = {
    "name": "behind",
    "horizon": {"slots": 4},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4}],
    "jobs": [
        {"id": "X", "priority": 0.5, "gpus": 4, "duration": 4},
        {"id": "j", "priority": 0.75, "gpus": 4, "duration": 4},
    ],
}


def test_a_job_that_outranks_the_total_is_what_cpsat_plans() -> None:
    inst, plan, r = record(BEHIND, "fifo", "j")
    assert (r.code, r.insert_at, r.insert_moves, r.window_moves) == (
        "lower-value-work",
        0,
        ("X",),
        ("X",),
    )
    text = "\n".join(what_it_takes(inst, r))
    assert "it already outranks each job" in text
    assert "together that work is worth 8, less than its 12" in text
    assert_move_is_valid(inst, plan, r)
    best = solve(BEHIND, "cpsat")
    assert best.status == "optimal" and set(planned(best)) == {"j"}


# ---------------------------------------------------------------------------------------------
# The work in its way: the stated total is the sum of the values of the jobs named.
#
# CROWD: one 8-GPU node, 4 slots. q1..q8 (1 GPU, 4 slots, priority k: 4k) fill it; j (8 GPUs, 4
# slots: 32 GPU-slots, priority 0.5: 16) needs all of it. All eight must move: the threshold is
# q8's 32 / 32 = 1; together they are worth 4 x 36 = 144, outweighed above 144 / 32 = 4.5.
CROWD: Spec = {
    "name": "crowd",
    "horizon": {"slots": 4},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 8}],
    "jobs": [
        *({"id": f"q{k}", "priority": k, "gpus": 1, "duration": 4} for k in range(1, 9)),
        {"id": "j", "priority": 0.5, "gpus": 8, "duration": 4},
    ],
}


def stated_total(lines: list[str]) -> float:
    (total,) = re.findall(r"together that work is worth ([\d,]+)", "\n".join(lines))
    return float(total.replace(",", ""))


@pytest.mark.parametrize(
    ("data", "solver", "job"),
    [
        (CROWD, "greedy", "j"),
        (two_in_the_way(0.4), "greedy", "j"),
        (one_in_the_way(1), "cpsat", "j"),
        (BEHIND, "fifo", "j"),
    ],
)
def test_the_stated_total_is_the_sum_of_the_named_jobs(data: Spec, solver: str, job: str) -> None:
    inst, plan, r = record(data, solver, job)
    lines = what_it_takes(inst, r)
    values = {j.id: j.value for j in inst.jobs}
    assert stated_total(lines) == pytest.approx(sum(values[m] for m in r.window_moves))
    named = re.search(r"ahead of (.*?), one by one", "\n".join(lines))
    assert named is not None
    shown = r.window_moves[:4]  # the rest as "and N more"
    more = len(r.window_moves) - len(shown)
    assert named.group(1) == ", ".join(shown) + (f" and {more} more" if more else "")
    assert_move_is_valid(inst, plan, r, window=True)


def test_every_job_in_the_crowd_must_move_and_the_total_is_only_a_sum() -> None:
    # Here the crowd has nowhere else to go, so cpsat switches at the total (4.5); explain
    # states the total as a sum only, since elsewhere the work may move rather than go.
    inst, _, r = record(CROWD, "greedy", "j")
    assert sorted(r.window_moves) == sorted(f"q{k}" for k in range(1, 9))
    assert r.priority_needed == pytest.approx(1.0)
    assert stated_total(what_it_takes(inst, r)) == 144
    assert "only above priority" not in "\n".join(what_it_takes(inst, r))
    for p, runs in ((4.5 * 0.999, False), (4.5 * 1.001, True)):
        again = solve(with_priority(CROWD, "j", p), "cpsat")
        assert again.status == "optimal"
        assert ("j" in planned(again)) == runs, p


# ---------------------------------------------------------------------------------------------
# No priority is enough (test_causes has the arithmetic of each instance).
@pytest.mark.parametrize(
    ("data", "solvers", "job", "code"),
    [
        (NO_POOL, ("greedy", "cpsat"), "j", "no-fitting-pool"),
        (deadline_data(4), ("greedy", "cpsat"), "j", "deadline-impossible"),
        # The static peak reservation is fifo's: no priority gets j past it (the elastic
        # reservation of the other solvers plans it at any priority).
        (reserved_data(3), ("fifo",), "j", "inference-reserved"),
        # a and c never fit, so b, after them, never runs.
        (predecessor_data(["a"]), ("greedy", "cpsat"), "b", "predecessor-unplanned"),
    ],
)
def test_no_priority_is_enough_holds_when_solved_again(
    data: Spec, solvers: tuple[str, ...], job: str, code: str
) -> None:
    inst, _, r = record(data, solvers[0], job)
    assert (r.status, r.code) == ("not-planned", code)
    assert r.no_priority is not None and r.priority_needed is None
    assert any(line.startswith("no priority is enough: ") for line in what_it_takes(inst, r))
    for solver in solvers:
        again = solve(with_priority(data, job, HUGE), solver)
        assert job not in planned(again), solver


# LATE_RELAY: one 4-GPU node, 8 slots, down over [0, 3). pre (4 GPUs, 2 slots) ends at 5 at the
# earliest; post (after pre, 4 GPUs, 2 slots, deadline 6) would end at 7. pre is planned at 3-5,
# and post is told that pre ends too late, which no priority changes: pre cannot end sooner.
LATE_RELAY: Spec = {
    "name": "late-relay",
    "horizon": {"slots": 8},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4}],
    "outages": [{"node": "a-0", "start": 0, "end": 3}],
    "jobs": [
        {"id": "pre", "priority": 1, "gpus": 4, "duration": 2},
        {"id": "post", "priority": 1, "gpus": 4, "duration": 2, "after": ["pre"], "deadline": 6},
    ],
}


def test_a_predecessor_that_cannot_end_sooner_leaves_no_priority_enough() -> None:
    inst, plan, r = record(LATE_RELAY, "greedy", "post")
    assert planned(plan) == {"pre": ("a", 3)}
    assert (r.code, r.priority_needed) == ("predecessor-late", None)
    assert r.no_priority == (
        "no priority is enough: the jobs it runs after cannot all end before slot 5, even each "
        "alone on the cluster: too late for it to end by slot 6"
    )
    assert what_it_takes(inst, r) == [r.no_priority]
    for solver in ("greedy", "cpsat"):
        assert "post" not in planned(solve(with_priority(LATE_RELAY, "post", HUGE), solver))


# WAITING: one 4-GPU node, 4 slots. H (priority 2.5, 4 GPUs, 2 slots, deadline 2: 20) and a
# (priority 1, 4 GPUs, 2 slots, deadline 2: 8) both need [0, 2); b (priority 1, 4 GPUs, 2 slots,
# deadline 4: 8) runs after a. H outranks a and b together (20 > 16), so every solver leaves a,
# and with it b, out. b's own priority is the lever: greedy ranks a by b's priority, cpsat weighs
# a and b together (8 + 80 > 20 at priority 10).
WAITING: Spec = {
    "name": "waiting",
    "horizon": {"slots": 4},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4}],
    "jobs": [
        {"id": "H", "priority": 2.5, "gpus": 4, "duration": 2, "deadline": 2},
        {"id": "a", "priority": 1, "gpus": 4, "duration": 2, "deadline": 2},
        {"id": "b", "priority": 1, "gpus": 4, "duration": 2, "deadline": 4, "after": ["a"]},
    ],
}


@pytest.mark.parametrize("solver", ["greedy", "cpsat"])
def test_a_job_waiting_on_a_predecessor_is_told_where_its_priority_counts(solver: str) -> None:
    inst, plan, r = record(WAITING, solver, "b")
    assert "a" not in planned(plan)
    assert (r.code, r.priority_needed) == ("predecessor-unplanned", None)
    (line,) = what_it_takes(inst, r)
    assert not line.startswith("no priority is enough")
    assert line.startswith("it waits for a job that is not planned, which must be planned first")
    assert f"{'cpsat' if solver == 'cpsat' else 'greedy'} " in line
    again = solve(with_priority(WAITING, "b", 10), solver)
    assert planned(again) == {"a": ("a", 0), "b": ("a", 2)}


# PRE_LATE (test_causes): one 4-GPU node, 7 slots. greedy runs urgent (priority 10, 2 slots)
# at 0-2, then pre (3 slots) at 2-5: post (after pre, 2 slots, deadline 6) would end at 7. Alone
# pre ends at 3 and post at 5, in time: pre must end earlier, and post's priority is what greedy
# ranks pre by. At 20 (above urgent's 10) pre runs 0-3, post 3-5, urgent 5-7.
PRE_LATE: Spec = {
    "name": "pre-late",
    "horizon": {"slots": 7},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4}],
    "jobs": [
        {"id": "urgent", "priority": 10, "gpus": 4, "duration": 2},
        {"id": "pre", "priority": 1, "gpus": 4, "duration": 3},
        {"id": "post", "priority": 1, "gpus": 4, "duration": 2, "after": ["pre"], "deadline": 6},
    ],
}


def test_a_job_after_a_late_predecessor_is_told_its_priority_counts_with_greedy() -> None:
    inst, plan, r = record(PRE_LATE, "greedy", "post")
    assert planned(plan) == {"urgent": ("a", 0), "pre": ("a", 2)}
    assert (r.code, r.earliest_alone, r.priority_needed) == ("predecessor-late", 3, None)
    (line,) = what_it_takes(inst, r)
    assert line.startswith("a job it runs after ends too late, and must end earlier first")
    assert "greedy ranks a job's predecessors by it" in line
    again = solve(with_priority(PRE_LATE, "post", 20), "greedy")
    assert planned(again) == {"pre": ("a", 0), "post": ("a", 3), "urgent": ("a", 5)}


def test_room_unused_fits_where_it_says_with_nothing_moved() -> None:
    # test_causes.room_data: fifo leaves j2 out though half of a-1 is free over [1, 3).
    inst, plan, r = record(room_data(2), "fifo", "j2")
    assert (r.code, r.priority_needed, r.insert_at, r.insert_moves) == ("room-unused", 0, 1, ())
    assert what_it_takes(inst, r) == ["it fits at slot 1 on a as the plan stands"]
    assert_move_is_valid(inst, plan, r)


def test_one_job_at_a_time_agrees_with_every_job_at_once() -> None:
    # explain(job=...) searches only that job's ancestors; explaining all of RELAY's jobs shares
    # one explainer: the answers must not depend on which was asked first.
    inst = build(RELAY)
    plan = solve(RELAY, "greedy")
    every = {r.job: r for r in explain(inst, plan)}
    for job in RELAY_ALONE:
        assert explain(inst, plan, job=job) == [every[job]]
    # The predicted start of a planned job is the plan's.
    assert {j: (r.pool, r.start) for j, r in every.items() if r.start is not None} == planned(plan)
