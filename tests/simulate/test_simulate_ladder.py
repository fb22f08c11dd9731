"""The replay's peers and rungs (backfill-value, -runtimes, -arrivals, -oracle) and its audit:
the instance as it really ran and the plan of what ran, which `check` verifies and whose pwo and
utilization are the realized ones.

Hand-sized instances; each docstring works out the decision by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import Spec, build
from test_simulate import PREEMPT, TOY, world
from typer.testing import CliRunner

import horizon_opt as ho
from horizon_opt.cli import app
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.simulate import Noise, Replay, draw_world, policy, replay, simulate
from horizon_opt.simulate.audit import actual_spec, ran_plan, told_spec
from horizon_opt.simulate.report import format_table, rows
from horizon_opt.solvers import SolveOptions

FAST = SolveOptions(time_limit=1.0, workers=2, seed=0)
runner = CliRunner()

# ONE: 6 slots of 60 minutes, one node of 4 GPUs, no inference; every job takes the whole node.
ONE: Spec = {
    "name": "one",
    "horizon": {"slots": 6, "slot_minutes": 60},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4}],
    "jobs": [],
}


def one(*jobs: dict[str, object]) -> Instance:
    return build({**ONE, "jobs": list(jobs)})


def starts(r: Replay) -> dict[str, int]:
    assert r.audit is not None
    return {run.job: run.start for run in r.audit.runs}


def test_backfill_value_orders_by_deadline_among_equal_density() -> None:
    """`old` (released 0, no deadline) and `due` (released 0, deadline 2), both 2 slots on the
    whole node, priority 1. backfill takes the older first by file order (`old` 0-2, `due` 2-4
    ends late and is not started); backfill-value takes the earlier deadline first (`due` 0-2,
    `old` 2-4): pwo 8 + 8 against 8."""
    inst = one(
        {"id": "old", "priority": 1, "gpus": 4, "duration": 2},
        {"id": "due", "priority": 1, "gpus": 4, "duration": 2, "deadline": 2},
    )
    age = ho.solve(inst, "backfill")
    value = ho.solve(inst, "backfill-value")
    assert {a.job: a.start for a in age.assignments} == {"old": 0}
    assert {a.job: a.start for a in value.assignments} == {"due": 0, "old": 2}
    assert (age.objective, value.objective) == (8.0, 16.0)


def test_told_runtimes_plan_the_actual_durations() -> None:
    """`long` (estimate 4) really runs half of it: 2 slots. greedy re-plans only at slot 0
    (every 6 slots) and holds its promises between: told the estimate it promises `next` slot 4
    and holds it; told the run times (-runtimes) it plans `next` at slot 2."""
    inst = one(
        {"id": "long", "priority": 2, "gpus": 4, "duration": 4},
        {"id": "next", "priority": 1, "gpus": 4, "duration": 2},
    )
    w = world(inst, {"long": 0.5})
    assert told_spec(inst, w).jobs[0].duration == {"a": 2}
    plain = replay(inst, w, policy("greedy", 6, 6), FAST)
    told = replay(inst, w, policy("greedy-runtimes", 6, 6), FAST)
    assert starts(plain) == {"long": 0, "next": 4}
    assert starts(told) == {"long": 0, "next": 2}


def test_told_arrivals_keep_room_for_work_that_arrives() -> None:
    """`low` (priority 1, 4 slots) is there at slot 0; `high` (priority 5, 3 slots, deadline 4)
    arrives at slot 1. Not told, greedy starts `low` at 0 and `high` can no longer end by 4:
    realized 1 * 4 * 4 = 16. Told every arrival (-arrivals), it keeps slots 1-4 for `high`:
    5 * 4 * 3 = 60, and `low` starts at 4 (the replay's planners plan with an open end), still
    running when the replay ends at 6."""
    inst = one(
        {"id": "low", "priority": 1, "gpus": 4, "duration": 4},
        {"id": "high", "priority": 5, "gpus": 4, "duration": 3, "release": 1, "deadline": 4},
    )
    w = world(inst)
    plain = replay(inst, w, policy("greedy", 2, 0), FAST)
    told = replay(inst, w, policy("greedy-arrivals", 2, 0), FAST)
    assert (plain.realized_pwo, told.realized_pwo) == (16.0, 60.0)
    assert starts(told) == {"high": 1, "low": 4}


@pytest.mark.parametrize(
    ("name", "open_loop", "runtimes", "arrivals"),
    [
        ("cpsat-open", True, False, True),
        ("cpsat-runtimes", False, True, False),
        ("cpsat-arrivals", False, False, True),
        ("cpsat-oracle", False, True, True),
        ("backfill-oracle", False, True, True),
    ],
)
def test_ladder_names(name: str, open_loop: bool, runtimes: bool, arrivals: bool) -> None:
    p = policy(name, 4, 2)
    assert (p.open_loop, p.knows_runtimes, p.knows_arrivals) == (open_loop, runtimes, arrivals)
    assert p.online == name.startswith("backfill")


def audit_holds(instance: Instance, r: Replay) -> None:
    """The audit's actual instance compiles, its plan passes `check`, and its pwo and
    utilization are the replay's realized figures."""
    assert r.audit is not None
    actual = compile_instance(actual_spec(instance, r.audit, r.policy))
    plan = ran_plan(actual, instance, r.audit, r.policy)
    assert ho.check(actual, plan) == []
    assert plan.metrics.pwo == pytest.approx(r.realized_pwo, rel=1e-12)
    assert plan.metrics.utilization == pytest.approx(r.realized_utilization, rel=1e-12)


@pytest.mark.parametrize("name", ["fifo", "backfill", "greedy", "cpsat", "cpsat-open"])
def test_audit_of_a_preemption(name: str) -> None:
    """PREEMPT's preemption world (see test_simulate): `lo` runs 0-2, is preempted and never
    completes; the audit holds `lo#preempted-1` (late by construction) and `hi`, `side`."""
    inst = build(PREEMPT)
    r = replay(inst, world(inst, demand={0: {2: 2.0, 7: 4.5}}), policy(name, 2, 1), FAST)
    audit_holds(inst, r)
    assert r.audit is not None
    outcomes = sorted((run.job, run.outcome) for run in r.audit.runs)
    assert ("lo", "preempted") in outcomes


def test_audit_of_failures_and_cancellations() -> None:
    """TOY with `train` failing at half its run: `ev`, which runs after it, never runs."""
    inst = build(TOY)
    r = replay(inst, world(inst, {"train": 0.5}, fails={"train"}), policy("backfill", 2, 0), FAST)
    audit_holds(inst, r)
    assert r.audit is not None
    actual = actual_spec(inst, r.audit, "backfill")
    ids = [j.id for j in actual.jobs]
    assert "train#failed" in ids and "ev" in ids
    plan = ran_plan(compile_instance(actual), inst, r.audit, "backfill")
    (ev,) = [u for u in plan.unscheduled if u.job == "ev"]
    assert "train" in ev.reason


@pytest.mark.parametrize(
    "name", ["backfill", "backfill-value", "greedy", "cpsat", "cpsat-runtimes", "cpsat-oracle"]
)
def test_audit_on_the_demo_in_a_drawn_world(demo: Instance, name: str) -> None:
    """Every policy's audit recomputes its realized figures, in a world with early ends,
    failures and demand error large enough to preempt."""
    w = draw_world(demo, Noise(early=0.6, fail=0.2, demand=0.3), seed=1)
    (r,) = simulate(demo, [policy(name, 8, 4)], w, SolveOptions(time_limit=0.5, workers=1))
    audit_holds(demo, r)


@pytest.fixture(scope="module")
def demo() -> Instance:
    return ho.load_instance(Path(__file__).parents[2] / "instances" / "demo.yaml")


def test_cli_writes_the_audit_and_check_recomputes_it(tmp_path: Path) -> None:
    """`simulate` writes per policy POLICY.actual.yaml and POLICY.ran.json; `check` on them says
    VALID, and the plan's pwo is the realized pwo of results.csv."""
    src = tmp_path / "toy.yaml"
    src.write_text(yaml.safe_dump(TOY))
    out = tmp_path / "out"
    args = ["simulate", str(src), "-o", str(out), "--policy", "backfill,greedy", "-t", "1"]
    result = runner.invoke(app, [*args, "--no-charts"])
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in out.iterdir())
    assert "backfill.actual.yaml" in names and "greedy.ran.json" in names
    assert "world.yaml" in names
    rows = (out / "results.csv").read_text().splitlines()
    header = rows[0].split(",")
    for row in rows[1:]:
        cells = dict(zip(header, row.split(","), strict=True))
        name = cells["policy"]
        checked = runner.invoke(
            app, ["check", str(out / f"{name}.actual.yaml"), str(out / f"{name}.ran.json")]
        )
        assert checked.exit_code == 0, checked.output
        plan = ho.Plan.read(out / f"{name}.ran.json")
        assert plan.metrics.pwo == pytest.approx(float(cells["realized_pwo"]), rel=1e-12)


@pytest.mark.parametrize("kind", ["synthetic", "trace"])
def test_a_written_world_replays_identically_with_actual(tmp_path: Path, kind: str) -> None:
    """The world.yaml a replay writes, given back with --actual, replays to the same results
    (the solver seconds aside) and the same audit files."""
    src = tmp_path / "toy.yaml"
    src.write_text(yaml.safe_dump(PREEMPT))
    common = ["--policy", "backfill,greedy,cpsat-oracle", "-t", "1", "--no-charts"]
    first, second = tmp_path / "first", tmp_path / "second"
    drawn = runner.invoke(app, ["simulate", str(src), "-o", str(first), "--world", kind, *common])
    assert drawn.exit_code == 0, drawn.output
    args = ["simulate", str(src), "-o", str(second), "--actual", str(first / "world.yaml")]
    again = runner.invoke(app, [*args, *common])
    assert again.exit_code == 0, again.output
    assert f"world: read from {first / 'world.yaml'}" in (second / "summary.md").read_text()

    def figures(folder: Path) -> list[list[str]]:
        lines = (folder / "results.csv").read_text().splitlines()
        keep = [i for i, k in enumerate(lines[0].split(",")) if "seconds" not in k]
        return [[row.split(",")[i] for i in keep] for row in lines]

    assert figures(first) == figures(second)
    for name in ("backfill", "greedy", "cpsat-oracle"):
        ran = f"{name}.ran.json"
        assert (first / ran).read_text() == (second / ran).read_text()


def test_actual_refuses_a_bad_world_file(tmp_path: Path) -> None:
    src = tmp_path / "toy.yaml"
    src.write_text(yaml.safe_dump(TOY))
    bad = tmp_path / "world.yaml"
    bad.write_text("format: horizon-opt.world/1\ninstance: toy\njobs: {nope: {run: 0.5}}\n")
    out = tmp_path / "out"
    result = runner.invoke(app, ["simulate", str(src), "-o", str(out), "--actual", str(bad)])
    assert result.exit_code == 2, result.output
    assert "nope" in result.output and "Traceback" not in result.output
    assert not out.exists()


def test_rows_give_the_share_of_the_top_rung() -> None:
    """QUEUE-like: `later` arrives at slot 1 and is worth more than `now`; only a planner told
    the arrival keeps the node for it, so the oracle realizes 24 and backfill 16 (2/3 of it)."""
    inst = one(
        {"id": "now", "priority": 1, "gpus": 4, "duration": 4},
        {"id": "later", "priority": 2, "gpus": 4, "duration": 3, "release": 1, "deadline": 4},
    )
    replays = simulate(inst, [policy("backfill", 2, 0), policy("greedy-oracle", 2, 0)], world(inst))
    table = {row["policy"]: row for row in rows(replays)}
    assert (replays[0].realized_pwo, replays[1].realized_pwo) == (16.0, 24.0)
    assert table["backfill"]["of_top"] == pytest.approx(16 / 24)
    assert table["greedy-oracle"]["of_top"] == 1.0
    assert "| 66.7% |" in format_table(replays)


@pytest.mark.parametrize("name", ["backfill-value", "greedy-runtimes", "cpsat-oracle"])
def test_every_plan_the_replay_executes_is_checked(
    demo: Instance, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replay checks each plan against the state it was made for before executing it: one
    check per decision, every one without a violation."""
    import horizon_opt.simulate.engine as engine

    verdicts: list[int] = []

    def spy(instance: Instance, plan: ho.Plan) -> list[object]:
        found = ho.check(instance, plan)
        verdicts.append(len(found))
        return found

    monkeypatch.setattr(engine, "check", spy)
    w = draw_world(demo, Noise(early=0.6, fail=0.2, demand=0.3), seed=2)
    (r,) = simulate(demo, [policy(name, 8, 4)], w, SolveOptions(time_limit=0.5, workers=1))
    assert len(verdicts) == r.decisions > 0
    assert set(verdicts) == {0}
