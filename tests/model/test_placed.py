"""Instances with history: `now` and `placed:` jobs, from the file to every solver's plan.

Part 1 feeds bad `now` and `placed:` input and expects one message naming the field path and
the problem; part 2 reads the compiled values; part 3 runs every solver on a hand-built state
and on the demo's state at slot 20, and checks that placed jobs stay exactly where they are;
part 4 computes the GPU-hour metrics from `now` on by hand; part 5 covers `placed_value` and a
placed job that ends after its deadline.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_validation import assert_problem, problems_of

import horizon_opt as ho
from horizon_opt.loop.state import state_at
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.model.load import parse_spec
from horizon_opt.plans.plan import Plan
from horizon_opt.solvers.residual import placed_value, residual_instance

Spec = dict[str, Any]
ROOT = Path(__file__).resolve().parents[2]
SOLVERS = list(ho.SOLVERS)
CPSAT = {"workers": 2, "seed": 0}  # with time_limit: 5 s on tiny instances (proved in <1 s)

# STATE: 8 slots of one hour (h = 1), now = 2. Pool a: 2 nodes x 4 GPUs (a-0, a-1), pool b:
# 1 node x 2 GPUs (b-0). Service chat on a, 2 GPUs per replica, 1 replica every slot (2 GPUs).
# Jobs (value = priority x GPUs x fastest duration x h):
#   run    2 GPUs, 4 slots, any pool; placed on a-0 GPUs 0-1 at slot 0: [0, 4), running at now
#   res    4 GPUs, 2 slots, pool a; placed on a-1 (whole) at slot 3: [3, 5), a reservation
#   next   2 GPUs, 2 slots, after res, deadline 7: free, but not before res ends (slot 5)
#   free   2 GPUs, 3 slots, any pool: free, compiled release max(0, now) = 2
#   whole  4 GPUs, 2 slots, pool a, deadline 4: a whole node in slots 2-3, which the placed jobs
#          deny it (a-0 holds run until 4, a-1 holds res from 3): it can never be on time
STATE: Spec = {
    "name": "state",
    "horizon": {"slots": 8, "slot_minutes": 60},
    "now": 2,
    "pools": [
        {"name": "a", "gpu_type": "A", "nodes": 2, "gpus_per_node": 4},
        {"name": "b", "gpu_type": "B", "nodes": 1, "gpus_per_node": 2},
    ],
    "services": [{"name": "chat", "pool": "a", "gpus_per_replica": 2, "demand": [1] * 8}],
    "jobs": [
        {
            "id": "run",
            "priority": 1,
            "gpus": 2,
            "duration": 4,
            "placed": {"pool": "a", "start": 0, "gpus": {"a-0": [0, 1]}},
        },
        {
            "id": "res",
            "priority": 2,
            "gpus": 4,
            "duration": 2,
            "pools": ["a"],
            "placed": {"pool": "a", "start": 3, "gpus": {"a-1": [0, 1, 2, 3]}},
        },
        {"id": "next", "priority": 3, "gpus": 2, "duration": 2, "after": ["res"], "deadline": 7},
        {"id": "free", "priority": 1, "gpus": 2, "duration": 3},
        {"id": "whole", "priority": 5, "gpus": 4, "duration": 2, "pools": ["a"], "deadline": 4},
    ],
}
# run 1*2*4 = 8, res 2*4*2 = 16, next 3*2*2 = 12, free 1*2*3 = 6, whole 5*4*2 = 40 (never on time).
# Everything but whole fits: free on b-0 in [2, 5), next in [5, 7) beside chat. pwo 8 + 16 + 12
# + 6 = 42 for greedy and cpsat (the optimum, since whole cannot earn), of which 24 is placed.
PLACED_VALUE = 24.0
STATE_PWO = 42.0
SOLVED_PWO = {"greedy": STATE_PWO, "cpsat": STATE_PWO}

START = "2026-12-01T00:00:00Z"


def state() -> Spec:
    return copy.deepcopy(STATE)


def compiled(data: Spec) -> Instance:
    return compile_instance(parse_spec(copy.deepcopy(data)))


def job(data: Spec, job_id: str) -> Spec:
    return next(j for j in data["jobs"] if j["id"] == job_id)


def placed(data: Spec, job_id: str) -> Spec:
    out: Spec = job(data, job_id)["placed"]
    return out


def solve(instance: Instance, solver: str, time_limit: float = 5.0) -> Plan:
    return ho.solve(instance, solver, time_limit=time_limit, **CPSAT)


def assert_honours_placed(instance: Instance, plan: Plan, solver: str) -> None:
    """The plan is valid, reports its pwo, keeps every placed job exactly at its placement
    (pool, slots, nodes; GPU indices too once it has started) and starts no free job before now."""
    assert [str(v) for v in ho.check(instance, plan)] == []
    assert plan.objective == pytest.approx(ho.evaluate(instance, plan).pwo)
    by_job = {a.job: a for a in plan.assignments}
    for j in instance.placed:
        p = j.placed
        assert p is not None
        a = by_job[j.id]
        assert (a.pool, a.start, a.end) == (instance.pools[p.pool].name, p.start, p.end), j.id
        want = {instance.node_names[n]: list(idx) for n, idx in p.gpus.items()}
        assert set(a.gpus) == set(want), j.id
        if p.start < instance.now:
            assert {n: sorted(g) for n, g in a.gpus.items()} == want, j.id
    for a in plan.assignments:
        if instance.jobs[instance.job_index[a.job]].placed is None:
            assert a.start >= instance.now, a.job
    if ho.SOLVERS[solver].reports_bound:
        assert plan.bound is not None
        assert plan.bound >= plan.objective - 1e-9


# -- 1. compile errors -----------------------------------------------------------------------------


def _multi(data: Spec, gpus: dict[str, list[int]]) -> None:
    """res as an 8-GPU gang (2 whole nodes of a), placed on `gpus`."""
    job(data, "res")["gpus"] = 8
    placed(data, "res")["gpus"] = gpus


def _share(data: Spec) -> None:
    # free started at 1 on a-0 GPUs 1-2, beside run (GPUs 0-1 from 0): GPU 1 held twice at 1.
    job(data, "free")["placed"] = {"pool": "a", "start": 1, "gpus": {"a-0": [1, 2]}}


def _over(data: Spec) -> None:
    # whole reserved on a-1 at 4, [4, 6): a-1 holds res 4 + whole 4 = 8 of 4 GPUs at slot 4.
    job(data, "whole")["placed"] = {"pool": "a", "start": 4, "gpus": {"a-1": [0, 1, 2, 3]}}


def _after_free(data: Spec) -> None:
    # next placed, but res (its predecessor) free.
    del job(data, "res")["placed"]
    job(data, "next")["placed"] = {"pool": "a", "start": 5, "gpus": {"a-1": [0, 1]}}


# (id, how to break STATE, field path, words the message must contain, number of problems)
ERRORS: list[tuple[str, Callable[[Spec], object], str, tuple[str, ...], int]] = [
    ("now at S", lambda d: d.update(now=8), "now", ("slot 8", "outside the horizon [0, 8)"), 1),
    ("now negative", lambda d: d.update(now=-1), "now", ("slot -1", "outside the horizon"), 1),
    (
        "now as a timestamp without horizon.start",
        lambda d: d.update(now="2026-12-01T02:00:00Z"),
        "now",
        ("timestamp", "needs horizon.start"),
        1,
    ),
    (
        "now as a timestamp after the horizon",
        lambda d: d["horizon"].update(start=START) or d.update(now="2026-12-01T07:01:00Z"),
        "now",
        ("slot 8", "outside the horizon"),
        1,
    ),
    (
        "unknown pool",
        lambda d: placed(d, "run").update(pool="z"),
        "jobs[0].placed.pool",
        ("unknown pool 'z'",),
        1,
    ),
    (
        "pool not allowed for the job",
        lambda d: placed(d, "res").update(pool="b", gpus={"b-0": [0, 1]}),
        "jobs[1].placed.pool",
        ("'res'", "may not run on pool 'b'"),
        1,
    ),
    (
        "pool where the gang does not fit",  # 4 GPUs, b has one node of 2
        lambda d: job(d, "res").pop("pools") and placed(d, "res").update(pool="b"),
        "jobs[1].placed.pool",
        ("'res'", "may not run on pool 'b'"),
        1,
    ),
    (
        "start before the job's release",
        lambda d: job(d, "run").update(release=1),
        "jobs[0].placed.start",
        ("slot 0", "before its release (slot 1)"),
        1,
    ),
    (
        "start before the horizon",
        lambda d: placed(d, "run").update(start=-1),
        "jobs[0].placed.start",
        ("slot -1", "outside the horizon [0, 8)"),
        1,
    ),
    (
        "start at the horizon's end",  # and so it runs past it: [8, 10)
        lambda d: placed(d, "res").update(start=8),
        "jobs[1].placed.start",
        ("slot 8", "outside the horizon [0, 8)"),
        2,
    ),
    (
        "end not after start",
        lambda d: placed(d, "run").update(end=0),
        "jobs[0].placed.end",
        ("slot 0 is not after start 0",),
        1,
    ),
    (
        "runs past the horizon",  # res at 7 runs [7, 9)
        lambda d: placed(d, "res").update(start=7),
        "jobs[1].placed.start",
        ("'res' runs until slot 9", "past the horizon (8 slots)"),
        1,
    ),
    (
        "ended at now",  # run [0, 2), now 2
        lambda d: job(d, "run").update(duration=2),
        "jobs[0].placed.start",
        ("'run' ended at slot 2", "now (2)", "leave finished jobs out"),
        1,
    ),
    (
        "ended before now",  # run [0, 1), now 2
        lambda d: job(d, "run").update(duration=1),
        "jobs[0].placed.start",
        ("'run' ended at slot 1", "now (2)", "leave finished jobs out"),
        1,
    ),
    (
        "node of another pool",
        lambda d: placed(d, "run").update(gpus={"b-0": [0, 1]}),
        "jobs[0].placed.gpus",
        ("'b-0' is not a node of pool 'a'",),
        1,
    ),
    (
        "unknown node name",
        lambda d: placed(d, "run").update(gpus={"x-0": [0, 1]}),
        "jobs[0].placed.gpus",
        ("'x-0' is not a node of pool 'a'",),
        1,
    ),
    (
        "node number with a leading zero",
        lambda d: placed(d, "run").update(gpus={"a-01": [0, 1]}),
        "jobs[0].placed.gpus",
        ("'a-01' is not a node of pool 'a'",),
        1,
    ),
    (
        "node number past the pool",
        lambda d: placed(d, "run").update(gpus={"a-2": [0, 1]}),
        "jobs[0].placed.gpus",
        ("'a-2' is not a node of pool 'a'",),
        1,
    ),
    (
        "duplicate GPU index",
        lambda d: placed(d, "run").update(gpus={"a-0": [1, 1]}),
        "jobs[0].placed.gpus.a-0",
        ("[1, 1]", "not distinct indices in 0..3"),
        1,
    ),
    (
        "GPU index out of range",
        lambda d: placed(d, "run").update(gpus={"a-0": [0, 4]}),
        "jobs[0].placed.gpus.a-0",
        ("[0, 4]", "not distinct indices in 0..3"),
        1,
    ),
    (
        "negative GPU index",  # refused by the schema, with its own path
        lambda d: placed(d, "run").update(gpus={"a-0": [0, -1]}),
        "jobs[0].placed.gpus.a-0[1]",
        ("greater than or equal to 0",),
        1,
    ),
    (
        "too few GPUs",
        lambda d: placed(d, "run").update(gpus={"a-0": [0]}),
        "jobs[0].placed.gpus",
        ("a gang of 2 GPUs on pool a holds 2 GPUs on each of one node", "{'a-0': [0]}"),
        1,
    ),
    (
        "two nodes for a one-node gang",
        lambda d: placed(d, "run").update(gpus={"a-0": [0], "a-1": [0]}),
        "jobs[0].placed.gpus",
        ("holds 2 GPUs on each of one node", "{'a-0': [0], 'a-1': [0]}"),
        1,
    ),
    (
        "multi-node gang not on whole nodes",
        lambda d: _multi(d, {"a-0": [0, 1, 2, 3], "a-1": [0, 1]}),
        "jobs[1].placed.gpus",
        ("a gang of 8 GPUs on pool a holds 4 GPUs on each of 2 whole nodes",),
        1,
    ),
    (
        "multi-node gang on one node",
        lambda d: _multi(d, {"a-1": [0, 1, 2, 3]}),
        "jobs[1].placed.gpus",
        ("a gang of 8 GPUs on pool a holds 4 GPUs on each of 2 whole nodes",),
        1,
    ),
    (
        "node down during the run",
        lambda d: d.update(outages=[{"node": "a-0", "start": 1, "end": 2}]),
        "jobs[0].placed.gpus",
        ("'run' runs on a-0 while that node is down (slots 1)",),
        1,
    ),
    (
        "two started jobs share a GPU",
        _share,
        "jobs",
        ("placed jobs 'run' and 'free' both hold GPU 1 of a-0 at slot 1",),
        1,
    ),
    (
        "more placed GPUs on a node than it has",
        _over,
        "jobs",
        ("placed jobs 'res', 'whole'", "more than the 4 GPUs of a-1 (slots 4)"),
        1,
    ),
    (
        "placed job after a free job",
        _after_free,
        "jobs[2].placed",
        ("'next' runs after 'res', which is not placed",),
        1,
    ),
    (
        "placed job before its placed predecessor ends",  # next at 4, res ends at 5
        lambda d: job(d, "next").update(placed={"pool": "a", "start": 4, "gpus": {"a-0": [2, 3]}}),
        "jobs[2].placed.start",
        ("slot 4 is before 'res' ends (slot 5)",),
        1,
    ),
    (
        # Slot 3: 3 replicas = 6 GPUs; a has 8, but run holds 2 of a-0 and res all of a-1.
        "inference no longer fits beside the placed jobs",
        lambda d: d["services"][0].update(demand=[1, 1, 1, 3, 1, 1, 1, 1]),
        "services[0].demand",
        ("'chat' needs more replicas than pool 'a' can hold beside the placed jobs", "slots 3"),
        1,
    ),
    (
        # Slot 7: 5 replicas = 10 GPUs, more than a's 8 with no job at all.
        "inference that never fits",
        lambda d: d["services"][0].update(demand=[1, 1, 1, 1, 1, 1, 1, 5]),
        "services[0].demand",
        ("even with no batch work", "slots 7"),
        1,
    ),
]


@pytest.mark.parametrize(
    ("change", "path", "words", "count"),
    [pytest.param(*case[1:], id=case[0]) for case in ERRORS],
)
def test_bad_now_or_placed_is_refused(
    change: Callable[[Spec], object], path: str, words: tuple[str, ...], count: int
) -> None:
    data = state()
    change(data)
    problems = problems_of(data)
    assert_problem(problems, path, *words)
    assert len(problems) == count, problems


@pytest.mark.parametrize(
    ("now", "slot"),
    [("2026-12-01T02:00:00Z", 2), ("2026-12-01T02:30:00Z", 3), ("2026-12-01T02:00:01Z", 3)],
)
def test_now_as_a_timestamp_rounds_up(now: str, slot: int) -> None:
    data = state()
    data["horizon"]["start"] = START
    data["now"] = now
    assert compiled(data).now == slot


def test_now_defaults_to_zero() -> None:
    # Without `now` every placed job is a reservation (start >= 0) and nothing is history.
    data = state()
    del data["now"]
    inst = compiled(data)
    assert inst.now == 0
    assert [j.release for j in inst.jobs] == [0, 3, 0, 0, 0]


def test_end_equal_to_start_plus_duration_is_accepted() -> None:
    data = state()
    placed(data, "run")["end"] = 4
    placed(data, "res")["end"] = 5
    inst = compiled(data)
    assert [(j.placed.start, j.placed.end) for j in inst.placed if j.placed] == [(0, 4), (3, 5)]


def test_placed_job_after_a_placed_predecessor_is_accepted() -> None:
    # next reserved at 5 on a-0 GPUs 2-3, right when res ends: a free job may not start
    # before its predecessor, and a placed one may follow a placed one.
    data = state()
    job(data, "next")["placed"] = {"pool": "a", "start": 5, "gpus": {"a-0": [2, 3]}}
    inst = compiled(data)
    nxt = inst.jobs[inst.job_index["next"]]
    assert nxt.placed is not None
    assert (nxt.placed.start, nxt.placed.end, nxt.release) == (5, 7, 5)
    assert nxt.after == (inst.job_index["res"],)
    assert residual_instance(inst).jobs[0].id == "free"  # next left out with run and res


# OVERLAP: what the compiler checks of GPU indices. 6 slots, now = 1, pool a: 1 node x 4 GPUs, no
# services. `run` started at 0 on GPUs 0-1, [0, 3). Three reservations list the same GPUs 0-1:
#   r1 at 1, [1, 3): beside run, a-0 holds 2 + 2 = 4 GPUs in slots 1-2
#   r2, r3 at 3, [3, 5): a-0 holds 2 + 2 = 4 in slots 3-4
# Only a started job holds its very indices: a reservation holds none yet, so its indices may
# overlap those of a running job or of another reservation, as long as the count per node and
# slot fits. The solvers then hand the reservations free indices around the running jobs.
OVERLAP: Spec = {
    "name": "overlap",
    "horizon": {"slots": 6},
    "now": 1,
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4}],
    "jobs": [
        {
            "id": "run",
            "priority": 1,
            "gpus": 2,
            "duration": 3,
            "placed": {"pool": "a", "start": 0, "gpus": {"a-0": [0, 1]}},
        },
        *(
            {
                "id": name,
                "priority": 1,
                "gpus": 2,
                "duration": 2,
                "placed": {"pool": "a", "start": start, "gpus": {"a-0": [0, 1]}},
            }
            for name, start in (("r1", 1), ("r2", 3), ("r3", 3))
        ),
        {"id": "free", "priority": 1, "gpus": 4, "duration": 1},
    ],
}


@pytest.mark.parametrize("solver", SOLVERS)
def test_reservation_indices_may_overlap(solver: str) -> None:
    inst = compiled(OVERLAP)
    plan = solve(inst, solver)
    assert_honours_placed(inst, plan, solver)
    gpus = {a.job: a.gpus["a-0"] for a in plan.assignments}
    assert sorted(gpus["run"]) == [0, 1]
    assert sorted(gpus["r1"]) == [2, 3]  # beside run, which keeps 0-1
    assert sorted(gpus["r2"] + gpus["r3"]) == [0, 1, 2, 3]
    # free (4 GPUs, the whole node) fits only in slot 5: [5, 6). pwo (priority 1, h = 1):
    # run 2 x 3 = 6, r1..r3 2 x 2 = 4 each, free 4 x 1 = 4: 6 + 12 + 4 = 22.
    assert (plan.assignments[-1].job, plan.assignments[-1].start) == ("free", 5)
    assert plan.objective == pytest.approx(22.0)


def test_reservation_sharing_a_started_jobs_gpus_beyond_the_node_is_refused() -> None:
    # A third 2-GPU reservation in [1, 3) would put 6 GPUs on the 4 of a-0.
    data = copy.deepcopy(OVERLAP)
    job(data, "r2")["placed"]["start"] = 1
    problems = problems_of(data)
    assert_problem(problems, "jobs", "placed jobs 'run', 'r1', 'r2'", "more than the 4 GPUs of a-0")


def test_placed_start_at_its_mid_slot_release_is_accepted() -> None:
    # Released at 00:30 and started at 00:30, wall-clock: the job started at its release.
    # The release rounds up to slot 1, the start down to slot 0; the start is compared with
    # the slot the release falls in (0), so a started job is not refused for the rounding.
    data = state()
    data["horizon"]["start"] = START
    job(data, "run").update(release="2026-12-01T00:30:00Z")
    placed(data, "run")["start"] = "2026-12-01T00:30:00Z"
    inst = compiled(data)
    assert inst.jobs[0].placed is not None


# -- 2. compiled values ----------------------------------------------------------------------------


@pytest.mark.parametrize(("release", "compiled_release"), [(0, 2), (1, 2), (2, 2), (5, 5)])
def test_free_job_release_is_at_least_now(release: int, compiled_release: int) -> None:
    data = state()
    job(data, "free")["release"] = release
    inst = compiled(data)
    assert inst.jobs[inst.job_index["free"]].release == compiled_release  # max(release, now 2)


def test_placed_jobs_compile_to_their_placement() -> None:
    inst = compiled(STATE)
    a, b = inst.pool_index["a"], inst.pool_index["b"]
    run, res, nxt, free, whole = inst.jobs
    assert inst.now == 2
    assert run.placed is not None and res.placed is not None
    assert (run.placed.pool, run.placed.start, run.placed.end) == (a, 0, 4)
    assert dict(run.placed.gpus) == {inst.node_index["a-0"]: (0, 1)}
    assert run.placed.nodes == (inst.node_index["a-0"],)
    assert (res.placed.start, res.placed.end) == (3, 5)
    # A placed job is released at its placed start (run: before now) ...
    assert (run.release, res.release) == (0, 3)
    # ... and may run only on its pool: run may run on a and b, as placed only on a.
    assert dict(run.durations) == {a: 4}
    assert set(run.gangs) == {a}
    assert dict(free.durations) == {a: 3, b: 3}
    # Free jobs: max(release 0, now 2). next's predecessor is placed: the residual instance
    # (what solvers see) releases it at res's end, 5, and drops the dependency.
    assert (nxt.release, free.release, whole.release) == (2, 2, 2)
    residual = residual_instance(inst)
    assert [(j.id, j.release, j.after) for j in residual.jobs] == [
        ("next", 5, ()),
        ("free", 2, ()),
        ("whole", 2, ()),
    ]
    # Values are the job's own, as if free: run 1 * 2 GPUs * 4 h.
    assert run.value == 8.0


def test_placed_gpus_by_hand() -> None:
    # run: 2 GPUs of a-0 in slots 0-3; res: 4 GPUs of a-1 in slots 3-4; nothing on b-0.
    inst = compiled(STATE)
    expected = np.array(
        [
            [2, 2, 2, 2, 0, 0, 0, 0],  # a-0
            [0, 0, 0, 4, 4, 0, 0, 0],  # a-1
            [0, 0, 0, 0, 0, 0, 0, 0],  # b-0
        ]
    )
    np.testing.assert_array_equal(inst.placed_gpus, expected)
    # The residual instance takes them off its capacity (and off `whole`), the full one does not.
    residual = residual_instance(inst)
    np.testing.assert_array_equal(inst.capacity, [[4] * 8, [4] * 8, [2] * 8])
    np.testing.assert_array_equal(
        residual.capacity, np.array([[4] * 8, [4] * 8, [2] * 8]) - expected
    )
    np.testing.assert_array_equal(residual.whole, expected == 0)


# -- 3. every solver keeps placed jobs where they are ----------------------------------------------


@pytest.mark.parametrize("solver", SOLVERS)
def test_every_solver_on_the_hand_state(solver: str) -> None:
    inst = compiled(STATE)
    plan = solve(inst, solver)
    assert_honours_placed(inst, plan, solver)
    by_job = {a.job: a for a in plan.assignments}
    assert by_job["next"].start >= 5  # after res
    assert plan.objective >= PLACED_VALUE
    if solver in SOLVED_PWO:
        assert plan.objective == pytest.approx(SOLVED_PWO[solver])
    if solver == "cpsat":
        assert plan.status == "optimal"
        assert plan.bound == pytest.approx(STATE_PWO)


@pytest.fixture(scope="module")
def demo_state() -> Instance:
    """The demo's state at slot 20 if its greedy plan ran as planned."""
    demo = ho.load_instance(ROOT / "instances" / "demo.yaml")
    spec = state_at(demo.spec, ho.solve(demo, "greedy"), 20)
    return compile_instance(spec, {s.index: s.demand.tolist() for s in demo.services})


def test_demo_state_has_running_and_free_jobs(demo_state: Instance) -> None:
    # Not a vacuous test below: jobs run across now, and some free jobs wait for them.
    assert demo_state.now == 20
    running = [j for j in demo_state.placed if j.placed and j.placed.start < 20]
    assert running and len(running) == len(demo_state.placed)  # state_at holds no reservation
    assert any(j.placed is None for j in demo_state.jobs)


@pytest.mark.parametrize("solver", SOLVERS)
def test_every_solver_on_the_demo_state(demo_state: Instance, solver: str) -> None:
    plan = solve(demo_state, solver, time_limit=3.0)
    assert_honours_placed(demo_state, plan, solver)
    assert plan.objective >= placed_value(demo_state) - 1e-9


# -- 4. metrics from now on --------------------------------------------------------------------------

# METRICS: 4 slots of 30 minutes (h = 0.5). Pool a: 1 node x 4 GPUs, down in slot 3. chat: 2
# GPUs per replica, demand [1, 0.5, 1, 0] -> req [1, 1, 1, 0]. run (2 GPUs, 2 slots) placed on
# GPUs 0-1 at 0; job (2 GPUs, 1 slot) free. The plan: run [0, 2), job [2, 3) on GPUs 0-1, one
# chat replica in slots 0-2 (a-0 holds 4 of 4 GPUs in each).
METRICS: Spec = {
    "name": "metrics",
    "horizon": {"slots": 4, "slot_minutes": 30},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4}],
    "outages": [{"node": "a-0", "start": 3, "end": 4}],
    "services": [{"name": "chat", "pool": "a", "gpus_per_replica": 2, "demand": [1, 0.5, 1, 0]}],
    "jobs": [
        {
            "id": "run",
            "priority": 1,
            "gpus": 2,
            "duration": 2,
            "placed": {"pool": "a", "start": 0, "gpus": {"a-0": [0, 1]}},
        },
        {"id": "job", "priority": 1, "gpus": 2, "duration": 1},
    ],
}
METRICS_PLAN: Spec = {
    "instance": "metrics",
    "solver": "hand",
    "status": "heuristic",
    "objective": 3.0,
    "assignments": [
        {"job": "run", "pool": "a", "start": 0, "end": 2, "gpus": {"a-0": [0, 1]}},
        {"job": "job", "pool": "a", "start": 2, "end": 3, "gpus": {"a-0": [0, 1]}},
    ],
    "inference": [{"service": "chat", "node": "a-0", "start": 0, "end": 3, "replicas": 1}],
}


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        # now 0, everything counts. available: a-0 up in slots 0-2: 3 x 4 GPUs x 0.5 = 6.
        # batch: run 2 x 2 x 0.5 = 2, job 2 x 1 x 0.5 = 1: 3. inference: demand 2.5 replicas
        # x 2 GPUs x 0.5 = 2.5. reserved idle: planned [1, 1, 1, 0] - demand = 0.5 replica
        # (slot 1) x 2 x 0.5 = 0.5. utilization (3 + 2.5) / 6. waits: run 0 (released at its
        # placed start), job 2 - 0 = 2 slots = 1 h: mean 0.5.
        (0, (6.0, 3.0, 2.5, 0.5, 5.5 / 6, 0.5)),
        # now 1: slot 0 is history. available: slots 1-2: 2 x 4 x 0.5 = 4 (slot 3 is down).
        # batch: run's slot 1 only, 2 x 1 x 0.5 = 1, job 1: 2. inference: demand[1:] 1.5 x 2 x
        # 0.5 = 1.5. reserved idle: slot 1 still, 0.5. utilization 3.5 / 4. waits: job released
        # at max(0, now 1), starts at 2: 0.5 h; mean 0.25.
        (1, (4.0, 2.0, 1.5, 0.5, 3.5 / 4, 0.25)),
    ],
)
def test_gpu_hours_count_from_now(now: int, expected: tuple[float, ...]) -> None:
    data = copy.deepcopy(METRICS)
    data["now"] = now
    inst = compiled(data)
    plan = Plan.parse(METRICS_PLAN)
    assert [str(v) for v in ho.check(inst, plan)] == []
    m = ho.evaluate(inst, plan)
    got = (
        m.available_gpu_hours,
        m.batch_gpu_hours,
        m.inference_gpu_hours,
        m.reserved_idle_gpu_hours,
        m.utilization,
        m.mean_wait_hours,
    )
    assert got == pytest.approx(expected)
    # pwo and completed count every assigned job, the running one too: 1 x 2 x 2 x 0.5 = 2
    # for run, 1 x 2 x 1 x 0.5 = 1 for job.
    assert (m.pwo, m.completed, m.scheduled, m.late) == (3.0, 2, 2, 0)


# -- 5. placed_value, and a placed job that ends late ----------------------------------------------


def test_placed_value_by_hand() -> None:
    # run 8 + res 16 (both end on time: no deadline); free jobs add nothing.
    assert placed_value(compiled(STATE)) == pytest.approx(PLACED_VALUE)
    data = state()
    del data["now"]
    for j in data["jobs"]:
        j.pop("placed", None)
    assert placed_value(compiled(data)) == 0.0


def late_state() -> Spec:
    # res gets deadline 4 but is placed in [3, 5): it ends late. It compiles (the deadline is
    # after its release 0), stays where it is, and earns nothing.
    data = state()
    job(data, "res")["deadline"] = 4
    return data


@pytest.mark.parametrize("solver", SOLVERS)
def test_late_placed_job_is_kept_but_earns_nothing(solver: str) -> None:
    inst = compiled(late_state())
    assert placed_value(inst) == pytest.approx(8.0)  # run only
    plan = solve(inst, solver)
    assert_honours_placed(inst, plan, solver)  # res is assigned, at [3, 5) on a-1
    m = ho.evaluate(inst, plan)
    assert m.late >= 1
    assert plan.objective >= 8.0
    # next still follows res, at 5: 42 - res's 16 = 26 for greedy and cpsat.
    if solver in SOLVED_PWO:
        assert plan.objective == pytest.approx(SOLVED_PWO[solver] - 16.0)
    if solver == "cpsat":
        assert plan.bound == pytest.approx(26.0)


def test_placed_end_overrides_the_estimate() -> None:
    # run is placed at slot 0 with duration 4 on a; `end: 5` says it is expected to run one
    # slot longer (it started mid-slot, or its time limit is later): it holds [0, 5).
    data = state()
    placed(data, "run")["end"] = 5
    inst = compiled(data)
    run = inst.jobs[0]
    assert run.placed is not None and run.placed.end == 5
    assert dict(run.durations) == {0: 5}
