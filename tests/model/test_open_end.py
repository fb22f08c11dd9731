"""An open end (`horizon.open_end`): jobs longer than what is left of the horizon still run.

The compiled horizon extends until every job can end (`open_end.py`); every solver then plans
over it and the checker checks it. Each fixture is tiny, with its arithmetic beside it.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from test_replay_window import LATE
from test_snapshot import ROOT, along, assert_same, demands, nows, round_trip
from test_solvers import LONG, OPEN_TAIL, build, solve_checked
from typer.testing import CliRunner

import horizon_opt as ho
from horizon_opt.analysis.whatif import Change, changed_instance
from horizon_opt.cli import app
from horizon_opt.errors import InstanceError
from horizon_opt.loop.snapshot import instance_at
from horizon_opt.model.load import load_instance
from horizon_opt.model.validate import validate
from horizon_opt.simulate import Noise, draw_world, policy, simulate
from horizon_opt.simulate.audit import audit_files, write_audit
from horizon_opt.solvers import SolveOptions

runner = CliRunner()
FAST = SolveOptions(time_limit=1.0, workers=1, seed=0)


def closed(data: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(data)
    out["horizon"]["open_end"] = False
    return out


@pytest.mark.parametrize("solver", ho.SOLVERS)
def test_every_solver_starts_the_long_job_at_once(solver: str) -> None:
    """48 slots written, a 72-slot job on an idle cluster: it runs over 0-72."""
    inst = build(LONG)
    assert (inst.slots, inst.written_slots) == (72, 48)
    plan = solve_checked(inst, solver)
    assert [(a.job, a.start, a.end) for a in plan.assignments] == [("pretrain", 0, 72)]
    assert plan.objective == pytest.approx(5 * 16 * 72)


# One 2-GPU node, a 4-slot horizon with an open end: "cheap" (priority 1, value 1 * 2 * 2 = 4)
# and "urgent" (priority 5, value 20) each need the whole node for 2 slots, so both end in time
# either way and pwo is 24 whichever runs first. Ranked by value-weighted ends (weights 200 and
# 1000 of `END_WEIGHT_STEPS`): urgent first costs 1000 * 2 + 200 * 4 = 2800, cheap first 4400.
ORDER = {
    "name": "order",
    "horizon": {"slots": 4, "open_end": True},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 2}],
    "jobs": [
        {"id": "cheap", "priority": 1, "gpus": 2, "duration": 2},
        {"id": "urgent", "priority": 5, "gpus": 2, "duration": 2},
    ],
}


def test_cpsat_runs_the_most_valuable_work_first_when_every_job_fits() -> None:
    """With an open end pwo cannot rank the plans (both orders earn 24): the value-weighted end
    sum does, and the search does not stop at the proven pwo (fifo's plan reaches it at once)."""
    inst = build(ORDER)
    plan = solve_checked(inst, "cpsat")
    assert plan.objective == pytest.approx(24)
    assert sorted((a.start, a.job) for a in plan.assignments) == [(0, "urgent"), (2, "cheap")]


@pytest.mark.parametrize("solver", ho.SOLVERS)
def test_without_an_open_end_no_plan_starts_it(solver: str) -> None:
    inst = build(closed(LONG))
    assert (inst.slots, inst.written_slots) == (48, None)
    plan = solve_checked(inst, solver)
    assert plan.assignments == []
    assert "longer than the horizon (48) (with horizon.open_end: true" in plan.unscheduled[0].reason
    assert validate(inst)[0].endswith(
        "(with horizon.open_end: true it may run past the horizon's end)"
    )


def test_the_forecast_repeats_its_last_day_past_the_written_end() -> None:
    """30 hourly slots with demand 0, 1, ..., 29 and a job of 60 slots: the horizon extends by
    30 slots, which repeat the last 24 values (6..29) and then 6..11 again; the headroom's
    requirement follows (ceil(d * 1.5))."""
    data = {
        "name": "daily",
        "horizon": {"slots": 30, "open_end": True},
        "pools": [{"name": "p", "gpu_type": "x", "nodes": 8, "gpus_per_node": 8}],
        "services": [
            {
                "name": "chat",
                "pool": "p",
                "gpus_per_replica": 1,
                "headroom": 0.5,
                "demand": list(range(30)),
            }
        ],
        "jobs": [{"id": "long", "priority": 1, "gpus": 1, "duration": 60}],
    }
    chat = build(data).services[0]
    expected = [*range(30), *range(6, 30), *range(6, 12)]
    assert chat.demand.tolist() == expected
    assert chat.req.tolist() == [int(np.ceil(d * 1.5 - 1e-9)) for d in expected]


def test_a_chain_extends_the_horizon_for_its_last_job() -> None:
    """ "b" runs after "a" (40 slots): its earliest start is 40, so the horizon reaches 40 + 30;
    cpsat runs both, 8 * 40 + 8 * 30 = 560."""
    data = {
        "name": "chain",
        "horizon": {"slots": 48, "open_end": True},
        "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 8}],
        "jobs": [
            {"id": "a", "priority": 1, "gpus": 8, "duration": 40},
            {"id": "b", "priority": 1, "gpus": 8, "duration": 30, "after": ["a"]},
        ],
    }
    inst = build(data)
    assert inst.slots == 70
    plan = solve_checked(inst, "cpsat")
    assert [(a.job, a.start, a.end) for a in plan.assignments] == [("a", 0, 40), ("b", 40, 70)]
    assert plan.objective == pytest.approx(560.0)


def test_a_placed_job_may_end_past_the_written_end() -> None:
    """A re-plan at slot 10 of a job placed over 0-60 in a 48-slot horizon: with an open end it
    is kept where it is; without, the state is refused, naming the field."""
    data: dict[str, Any] = {
        "name": "running",
        "horizon": {"slots": 48, "open_end": True},
        "now": 10,
        "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 8}],
        "jobs": [
            {
                "id": "a",
                "priority": 1,
                "gpus": 8,
                "duration": 60,
                "placed": {"pool": "p", "start": 0, "gpus": {"p-0": list(range(8))}},
            },
            {"id": "b", "priority": 1, "gpus": 8, "duration": 5, "release": 10},
        ],
    }
    inst = build(data)
    assert inst.slots == 65  # "b" can start at 10 at the earliest... and "a" ends at 60
    plan = solve_checked(inst, "cpsat")
    assert [(a.job, a.start, a.end) for a in plan.assignments] == [("a", 0, 60), ("b", 60, 65)]
    with pytest.raises(
        InstanceError, match=r"jobs\[0\]\.placed\.start: job 'a' runs until slot 60"
    ):
        build(closed(data))


def test_a_placed_job_past_the_written_end_leaves_room_for_the_replicas() -> None:
    """One 4-GPU node, 24 hourly slots with an open end; a service of 2-GPU replicas needs one
    at slot 0 of each day (the forecast repeats its last day past the written end). A job
    placed over 1-30 on all 4 GPUs leaves none for slot 24's replica: the state is refused,
    naming the field, as it is within the horizon as written (before, it compiled into an
    instance no plan could serve)."""
    data: dict[str, Any] = {
        "name": "crowded",
        "horizon": {"slots": 24, "slot_minutes": 60, "open_end": True},
        "now": 1,
        "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 4}],
        "services": [{"name": "s", "pool": "p", "gpus_per_replica": 2, "demand": [1] + [0] * 23}],
        "jobs": [
            {
                "id": "a",
                "priority": 1,
                "gpus": 4,
                "duration": 29,
                "placed": {"pool": "p", "start": 1, "gpus": {"p-0": [0, 1, 2, 3]}},
            }
        ],
    }
    with pytest.raises(InstanceError) as refused:
        build(data)
    assert refused.value.problems == [
        "services[0].demand: service 's' needs more replicas than pool 'p' can hold beside "
        "the placed jobs, at slots 24"
    ]
    data["jobs"][0]["duration"] = 23  # ends at 24: the replica fits
    assert build(data).slots == 24


def test_an_extension_too_large_to_plan_is_refused(tmp_path: Path) -> None:
    """1,000 nodes and a job of 100,000 slots: 100,000,000 node-slots, over the 10,000,000 that
    horizon-opt plans. Exit 2 with one line naming the field, nothing written."""
    data = {
        "name": "huge",
        "horizon": {"slots": 10, "open_end": True},
        "pools": [{"name": "p", "gpu_type": "x", "nodes": 1000, "gpus_per_node": 8}],
        "jobs": [{"id": "a", "priority": 1, "gpus": 8, "duration": 100_000}],
    }
    path = tmp_path / "huge.yaml"
    path.write_text(yaml.safe_dump(data))
    out = tmp_path / "plan.json"
    result = runner.invoke(app, ["solve", str(path), "--solver", "fifo", "-o", str(out)])
    assert result.exit_code == 2
    assert "horizon.open_end: the jobs need 100,000 slots to end" in result.output
    assert "Traceback" not in result.output
    assert not out.exists()


def test_validate_names_both_horizons(tmp_path: Path) -> None:
    path = tmp_path / "long.yaml"
    path.write_text(yaml.safe_dump(LONG))
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 0
    assert "48 slots (open end: planned over 72); 0 warnings" in result.output


@pytest.mark.parametrize("name", ["backfill", "cpsat@event"])
def test_the_loop_runs_the_long_job_and_its_audit_checks(name: str, tmp_path: Path) -> None:
    """In the replay (no noise) the 72-slot job starts at slot 0 and completes at 72, where the
    replayed horizon ends; what ran passes the checker."""
    inst = build(LONG)
    replays = simulate(inst, [policy(name, 2, 1)], draw_world(inst, Noise.parse("none"), 0), FAST)
    assert replays[0].realized_pwo == pytest.approx(5 * 16 * 72)
    assert replays[0].completed == 1
    audit = replays[0].audit
    assert audit is not None
    plan = write_audit(tmp_path, inst, audit, name)
    actual = load_instance(tmp_path / audit_files(name)[0])
    assert (actual.slots, actual.written_slots) == (72, None)
    assert ho.check(actual, plan) == []


@pytest.mark.parametrize("file", ["instances/demo.yaml", "instances/bench/trace-small-s0.yaml"])
def test_states_of_an_open_end_equal_their_round_trip(file: str) -> None:
    """A replay's states (`instance_at`) of an instance with an open end are the instances their
    specs compile to: the horizon extends (or shrinks back) as the jobs left need, and the
    forecast past the written end is the written last day's."""
    written = load_instance(ROOT / file)
    spec = written.spec.model_copy(
        update={"horizon": written.spec.horizon.model_copy(update={"open_end": True})}
    )
    inst = ho.compile_instance(spec, demands(written))
    plan = ho.solve(inst, "greedy")
    for now in nows(inst):
        keep, running = along(inst, plan, now)
        fast = instance_at(inst, now, keep, running)
        assert_same(fast, round_trip(inst, now, keep, running))
        assert_same(fast, ho.compile_instance(fast.spec, demands(inst)))


@pytest.mark.parametrize("name", ["backfill", "greedy", "cpsat@event", "backfill-expect"])
def test_the_loop_starts_a_job_that_outlasts_the_horizon_when_it_arrives(name: str) -> None:
    """LATE: a closed 48-slot horizon, an idle node and a 24-slot job released at slot 30: a plan of
    the file could never start it (30 + 24 > 48), but the replay's planners plan with an open
    end, so it starts on arrival instead of waiting out the horizon while its GPUs sit idle."""
    inst = build(LATE)
    assert ho.solve(inst, "backfill").unscheduled[0].job == "late"
    r = simulate(inst, [policy(name, 4, 2)], draw_world(inst, Noise.parse("none"), 0), FAST)[0]
    assert r.audit is not None
    assert {run.job: (run.start, run.outcome) for run in r.audit.runs} == {
        "early": (0, "completed"),
        "late": (30, "unfinished"),
    }


def test_a_what_if_of_an_open_end_keeps_its_forecast() -> None:
    """One more node on OPEN_TAIL: the changed instance reads the forecast as written (4 slots)
    and extends it again, as the original (the replica from slot 3 on, for good)."""
    inst = build(OPEN_TAIL)
    changed = changed_instance(inst, [Change("add", "p", nodes=1)])
    assert (changed.slots, changed.written_slots) == (inst.slots, 4)
    assert changed.services[0].demand.tolist() == inst.services[0].demand.tolist()
    assert changed.num_nodes == 2
