"""Re-planning from the cluster's state: the library's `replan` and the `horizon-opt replan` command.

The state is the demo's at slot 20 if its greedy plan ran as planned (`state_at`): jobs that
ended are left out, jobs running across slot 20 are placed, the rest is free. The previous plan
is that greedy plan. A hand-sized instance shows what the freeze window buys and costs.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import horizon_opt as ho
from horizon_opt.cli import app
from horizon_opt.loop.replan import Replan, replan
from horizon_opt.loop.state import state_at
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.model.spec import InstanceSpec, OutageSpec
from horizon_opt.plans.plan import Churn, Plan

ROOT = Path(__file__).resolve().parents[2]
NOW = 20
FAST = ho.SolveOptions(time_limit=3.0, workers=2, seed=0)
runner = CliRunner()


@dataclass(frozen=True)
class Demo:
    previous: Plan  # the greedy plan of the demo
    spec: InstanceSpec  # the state at NOW
    state: Instance
    demands: dict[int, list[float]]


@pytest.fixture(scope="module")
def demo() -> Demo:
    inst = ho.load_instance(ROOT / "instances" / "demo.yaml")
    previous = ho.solve(inst, "greedy")
    spec = state_at(inst.spec, previous, NOW)
    demands = {s.index: s.demand.tolist() for s in inst.services}
    return Demo(previous, spec, compile_instance(spec, demands), demands)


def promises(demo: Demo, until: int) -> list[str]:
    """The free jobs that the previous plan starts in [NOW, until), in start order (then id)."""
    free = {j.id for j in demo.state.jobs if j.placed is None}
    return [
        a.job
        for a in sorted(demo.previous.assignments, key=lambda a: (a.start, a.job))
        if a.job in free and NOW <= a.start < until
    ]


def assert_valid(instance: Instance, plan: Plan) -> None:
    assert [str(v) for v in ho.check(instance, plan)] == []
    assert plan.objective == pytest.approx(ho.evaluate(instance, plan).pwo)


def assert_consistent(churn: Churn | None, demo: Demo) -> Churn:
    assert churn is not None
    # compared: the previous plan's starts at or after now of jobs still in the state.
    compared = sum(
        a.start >= NOW and a.job in demo.state.job_index for a in demo.previous.assignments
    )
    assert churn.compared == compared > 0
    assert churn.held <= churn.compared
    assert churn.moved <= churn.compared
    assert churn.moved + churn.dropped <= churn.compared
    assert churn.later <= churn.moved
    assert churn.broken <= churn.compared
    assert churn.max_shift_hours >= churn.mean_shift_hours >= 0.0
    if churn.moved == 0:
        assert (churn.moved_gpu_hours, churn.max_shift_hours) == (0.0, 0.0)
    return churn


Run = Callable[[str, int], Replan]


@pytest.fixture(scope="module")
def run(demo: Demo) -> Run:
    """replan on the demo state by (solver, freeze slots), each computed once for the module."""
    done: dict[tuple[str, int], Replan] = {}

    def get(solver: str, freeze: int) -> Replan:
        if (solver, freeze) not in done:
            done[solver, freeze] = replan(
                demo.state, demo.previous, solver, FAST, freeze_slots=freeze
            )
        return done[solver, freeze]

    return get


# -- library ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("solver", ["greedy", "cpsat"])
def test_freeze_zero_holds_nothing(demo: Demo, run: Run, solver: str) -> None:
    result = run(solver, 0)
    assert (result.held, result.not_held) == ((), ())
    assert_valid(demo.state, result.plan)
    assert assert_consistent(result.plan.churn, demo).held == 0


@pytest.mark.parametrize("solver", ["greedy", "cpsat"])
@pytest.mark.parametrize("freeze", [2, 10, 48])
def test_freeze_holds_every_promise_in_the_window(
    demo: Demo, run: Run, solver: str, freeze: int
) -> None:
    result = run(solver, freeze)
    expected = promises(demo, NOW + freeze)
    assert expected, "the window must hold some promise, or this test shows nothing"
    assert result.held == tuple(expected)
    assert result.not_held == ()
    assert_valid(demo.state, result.plan)
    before = {a.job: a for a in demo.previous.assignments}
    after = {a.job: a for a in result.plan.assignments}
    for job in result.held:
        old, new = before[job], after[job]
        assert (new.pool, new.start, new.end, set(new.gpus)) == (
            old.pool,
            old.start,
            old.end,
            set(old.gpus),
        ), job
    churn = assert_consistent(result.plan.churn, demo)
    assert churn.held == len(expected)
    if freeze == 48:  # the whole rest of the horizon: every promise is held, nothing moves
        assert churn.held == churn.compared
        assert (churn.moved, churn.dropped, churn.broken) == (0, 0, 0)


@pytest.mark.parametrize("freeze", [0, 2])
def test_greedy_replan_of_its_own_state_moves_nothing(demo: Demo, run: Run, freeze: int) -> None:
    # The state is what the greedy plan promised; greedy planning it again finds the same plan.
    result = run("greedy", freeze)
    churn = assert_consistent(result.plan.churn, demo)
    assert (churn.moved, churn.later, churn.dropped, churn.broken) == (0, 0, 0, 0)
    assert churn.moved_gpu_hours == churn.mean_shift_hours == churn.max_shift_hours == 0.0


def test_cpsat_replan_is_at_least_greedys(demo: Demo, run: Run) -> None:
    # cpsat starts from the best of greedy, fifo and the previous plan, on the same instance
    # with the same holds: it can only do better.
    for freeze in (0, 2, 48):
        cpsat, greedy = run("cpsat", freeze).plan, run("greedy", freeze).plan
        assert cpsat.objective >= greedy.objective - 1e-9
        assert cpsat.bound is not None and cpsat.bound >= cpsat.objective - 1e-9


def test_promise_the_state_no_longer_allows_is_not_held(demo: Demo) -> None:
    # Take the last promise of the 2-slot window that no running job shares a node with at its
    # start, and take its node down for that slot in the state: the promise cannot be held.
    running = [j for j in demo.state.placed if j.placed is not None]
    candidates = [
        a
        for a in demo.previous.assignments
        if a.job in promises(demo, NOW + 2)
        and not any(
            demo.state.node_index[n] in j.placed.gpus and j.placed.start <= a.start < j.placed.end
            for j in running
            if j.placed is not None
            for n in a.gpus
        )
    ]
    assert candidates
    promise = max(candidates, key=lambda a: (a.start, a.job))
    node = next(iter(promise.gpus))
    outage = OutageSpec(node=node, start=promise.start, end=promise.start + 1)
    spec = demo.spec.model_copy(update={"outages": [*demo.spec.outages, outage]})
    state = compile_instance(spec, demo.demands)

    result = replan(state, demo.previous, "greedy", freeze_slots=2)
    assert promise.job not in result.held
    lines = [x for x in result.not_held if x.startswith(f"{promise.job}: ")]
    assert len(lines) == 1
    assert lines[0].startswith(f"{promise.job}: its start at slot {promise.start} cannot be held: ")
    assert "while that node is down" in lines[0]
    # Every promise of the window is held or said not to be, once.
    said = [*result.held, *(x.split(":", 1)[0] for x in result.not_held)]
    assert sorted(said) == sorted(promises(demo, NOW + 2))
    assert_valid(state, result.plan)
    assert result.plan.churn is not None and result.plan.churn.held == len(result.held)
    moved = {a.job: a for a in result.plan.assignments}.get(promise.job)
    assert moved is None or (moved.start, set(moved.gpus)) != (promise.start, set(promise.gpus))


# HOLD: 6 slots (h = 1), now = 1, one pool a of 1 node x 4 GPUs, no inference.
#   low   4 GPUs, 2 slots, priority 1             value 1 x 4 x 2 = 8
#   high  4 GPUs, 2 slots, priority 10, deadline 3: on time only in [1, 3), value 80
# The previous plan promised low [1, 3) and high [3, 5) (late). Planned again with no freeze,
# high takes [1, 3) and low moves to [3, 5): pwo 88; both moved (low 2 h later, high 2 h
# earlier), nothing broken (high was late already). With a 1-slot freeze low's start at 1 is
# held: high cannot be on time, pwo 8.
HOLD = {
    "name": "hold",
    "horizon": {"slots": 6},
    "now": 1,
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4}],
    "jobs": [
        {"id": "low", "priority": 1, "gpus": 4, "duration": 2},
        {"id": "high", "priority": 10, "gpus": 4, "duration": 2, "deadline": 3},
    ],
}
HOLD_PREVIOUS = Plan.parse(
    {
        "instance": "hold",
        "solver": "hand",
        "status": "heuristic",
        "objective": 8.0,
        "assignments": [
            {"job": "low", "pool": "a", "start": 1, "end": 3, "gpus": {"a-0": [0, 1, 2, 3]}},
            {"job": "high", "pool": "a", "start": 3, "end": 5, "gpus": {"a-0": [0, 1, 2, 3]}},
        ],
    }
)


@pytest.mark.parametrize("solver", ["greedy", "cpsat"])
def test_freeze_trades_value_for_kept_promises(solver: str) -> None:
    inst = compile_instance(InstanceSpec.model_validate(HOLD))
    free = replan(inst, HOLD_PREVIOUS, solver, FAST, freeze_slots=0)
    assert_valid(inst, free.plan)
    assert free.plan.objective == pytest.approx(88.0)
    assert free.plan.churn == Churn(
        compared=2,
        moved=2,
        moved_gpu_hours=4 * 2 + 4 * 2,
        mean_shift_hours=2.0,
        max_shift_hours=2.0,
        later=1,
        dropped=0,
        broken=0,
        new=0,
        held=0,
    )

    held = replan(inst, HOLD_PREVIOUS, solver, FAST, freeze_slots=1)
    assert (held.held, held.not_held) == (("low",), ())
    assert_valid(inst, held.plan)
    assert held.plan.objective == pytest.approx(8.0)
    low = next(a for a in held.plan.assignments if a.job == "low")
    assert (low.start, low.end) == (1, 3)
    churn = held.plan.churn
    assert churn is not None
    assert (churn.compared, churn.held, churn.moved, churn.broken) == (2, 1, 0, 0)


def _pool_a(gpus: int) -> list[dict[str, object]]:
    return [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": gpus}]


@dataclass(frozen=True)
class Unheld:
    """A state (now = 1, h = 1, one pool a of one node) and a previous plan that promised `job`
    a start in the freeze window (slots 1-2), which the state cannot hold for the reason `why`;
    the re-plan's runs."""

    spec: dict[str, object]
    job: str
    promised: tuple[int, int, list[int]]  # start, end, GPUs of node a-0
    why: str
    runs: list[tuple[str, int, int]]

    def previous(self) -> Plan:
        start, end, gpus = self.promised
        run = {"job": self.job, "pool": "a", "start": start, "end": end, "gpus": {"a-0": gpus}}
        return Plan.parse(
            {
                "instance": self.spec["name"],
                "solver": "hand",
                "status": "heuristic",
                "objective": 0.0,
                "assignments": [run],
            }
        )


UNHELD = {
    # An open end over 6 slots, 4 GPUs. x (4 GPUs) runs 5 slots now (3 when promised [2, 5)):
    # held at 2 it would run until 7, past the state's horizon (6: x can end by 1 + 5), which a
    # hold may not grow. x starts at 1 and ends at 6.
    "past the horizon": Unheld(
        {
            "name": "grown",
            "horizon": {"slots": 6, "open_end": True},
            "now": 1,
            "pools": _pool_a(4),
            "jobs": [{"id": "x", "priority": 1, "gpus": 4, "duration": 5}],
        },
        "x",
        (2, 5, [0, 1, 2, 3]),
        "job 'x' would run until slot 7, past the horizon (6 slots)",
        [("x", 1, 6)],
    ),
    # 6 slots, 4 GPUs; teams x and y, each with a quota of 2. wide (x, 4 GPUs, 3 slots) was
    # promised [1, 4); late (y, 2 GPUs, 2 slots) was released at 1, after that plan. Held, wide
    # borrows 2 GPUs above x's quota while late waits within y's (0 + 2 <= 2) with none free:
    # kept out at slots 1-3 (rule 9), and a held start's borrowing can be given back as any
    # waiting job's. late runs [1, 3), wide [3, 6).
    "rule 9": Unheld(
        {
            "name": "lent",
            "horizon": {"slots": 6},
            "now": 1,
            "pools": _pool_a(4),
            "teams": [{"name": "x", "quota": {"a": 2}}, {"name": "y", "quota": {"a": 2}}],
            "jobs": [
                {"id": "wide", "team": "x", "priority": 1, "gpus": 4, "duration": 3},
                {"id": "late", "team": "y", "priority": 1, "gpus": 2, "duration": 2, "release": 1},
            ],
        },
        "wide",
        (1, 4, [0, 1, 2, 3]),
        "it borrows GPUs that another team's job needs within its quota (rule 9)",
        [("late", 1, 3), ("wide", 3, 6)],
    ),
    # 8 slots, 8 GPUs; team x may hold at most 2 (rule 8). run (x, 2 GPUs) runs over [0, 4)
    # (the previous plan expected it to end by 1); next (x, 2 GPUs, 2 slots) was promised
    # [1, 3). Held, x would hold 2 + 2 = 4 > 2 at slots 1-2: a held start is a waiting job in
    # the state, which the running job's allowance does not cover. next runs [4, 6).
    "rule 8": Unheld(
        {
            "name": "capped",
            "horizon": {"slots": 8},
            "now": 1,
            "pools": _pool_a(8),
            "teams": [{"name": "x", "limit": {"a": 2}}],
            "jobs": [
                {
                    "id": "run",
                    "team": "x",
                    "priority": 1,
                    "gpus": 2,
                    "duration": 4,
                    "placed": {"pool": "a", "start": 0, "gpus": {"a-0": [0, 1]}},
                },
                {"id": "next", "team": "x", "priority": 1, "gpus": 2, "duration": 2},
            ],
        },
        "next",
        (1, 3, [2, 3]),
        "team 'x' would hold 4 GPUs of pool 'a' at slot 1, above the 2 it may hold (rule 8)",
        [("next", 4, 6), ("run", 0, 4)],
    ),
    # 8 slots, 8 GPUs. x (2 GPUs) runs 3 slots now (2 when promised [1, 3)) and never through
    # slot 3 (blackout [3, 4)): held at 1 it would run [1, 4) through it. A placed job's
    # blackouts bind nothing, but in the state x waits. x runs [4, 7).
    "blackout": Unheld(
        {
            "name": "dark",
            "horizon": {"slots": 8},
            "now": 1,
            "pools": _pool_a(8),
            "jobs": [
                {
                    "id": "x",
                    "priority": 1,
                    "gpus": 2,
                    "duration": 3,
                    "blackout": [{"start": 3, "end": 4}],
                }
            ],
        },
        "x",
        (1, 3, [0, 1]),
        "job 'x' would run [1, 4) through its blackout [3, 4)",
        [("x", 4, 7)],
    ),
}


@pytest.mark.parametrize("solver", ["backfill", "greedy", "cpsat"])
@pytest.mark.parametrize("case", UNHELD)
def test_promise_the_state_cannot_hold_is_not_held(case: str, solver: str) -> None:
    """Before, each of these promises was held, and the re-plan broke a rule of the state."""
    unheld = UNHELD[case]
    inst = compile_instance(InstanceSpec.model_validate(unheld.spec))
    result = replan(inst, unheld.previous(), solver, FAST, freeze_slots=2)
    assert result.held == ()
    start = unheld.promised[0]
    assert result.not_held == (
        f"{unheld.job}: its start at slot {start} cannot be held: {unheld.why}",
    )
    assert_valid(inst, result.plan)
    assert sorted((a.job, a.start, a.end) for a in result.plan.assignments) == unheld.runs


def test_negative_freeze_is_refused(demo: Demo) -> None:
    with pytest.raises(ValueError, match="freeze_slots must be >= 0"):
        replan(demo.state, demo.previous, "greedy", freeze_slots=-1)


# -- the command -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def files(demo: Demo, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The demo state as a YAML file (its chat demand CSV beside it) and the previous plan."""
    folder = tmp_path_factory.mktemp("replan")
    state = folder / "state.yaml"
    data = demo.spec.model_dump(mode="json", exclude_defaults=True)
    state.write_text(yaml.safe_dump(data, sort_keys=False))
    shutil.copy(ROOT / "instances" / "demo-chat.csv", folder / "demo-chat.csv")
    previous = folder / "previous.json"
    demo.previous.write(previous)
    loaded = ho.load_instance(state)
    assert (loaded.now, [j.placed for j in loaded.jobs]) == (
        NOW,
        [j.placed for j in demo.state.jobs],
    )
    return state, previous


def replan_args(state: Path, previous: Path, output: Path | str, *more: str) -> list[str]:
    return ["replan", str(state), "--previous", str(previous), "-o", str(output), *more]


def churn_lines(churn: Churn) -> list[str]:
    return [
        f"  promises compared / held        {churn.compared} / {churn.held}",
        f"  moved (later)                   {churn.moved} ({churn.later})",
        f"  dropped / promises broken       {churn.dropped} / {churn.broken}",
        f"  newly planned                   {churn.new}",
    ]


@pytest.mark.parametrize(
    ("solver", "more"), [("greedy", []), ("cpsat", ["-t", "2", "--workers", "2", "--seed", "1"])]
)
def test_cli_replan_writes_a_valid_plan(
    demo: Demo, files: tuple[Path, Path], tmp_path: Path, solver: str, more: list[str]
) -> None:
    state, previous = files
    out = tmp_path / "new.json"
    result = runner.invoke(app, replan_args(state, previous, out, "--solver", solver, *more))
    assert result.exit_code == 0, result.output
    plan = Plan.read(out)
    assert plan.solver == solver
    churn = assert_consistent(plan.churn, demo)
    assert churn.held == len(promises(demo, NOW + 2))  # the default freeze, 2h = 2 slots
    for line in churn_lines(churn):
        assert line in result.stdout
    assert f"plan written to {out}" in result.stdout
    checked = runner.invoke(app, ["check", str(state), str(out)])
    assert checked.exit_code == 0, checked.output
    assert checked.stdout.startswith("VALID: ")
    assert "warning" not in checked.stdout


def test_cli_replan_to_stdout(demo: Demo, files: tuple[Path, Path]) -> None:
    state, previous = files
    result = runner.invoke(app, replan_args(state, previous, "-", "--solver", "greedy"))
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data["churn"]) == set(Churn.model_fields)
    assert data["churn"]["held"] == len(promises(demo, NOW + 2))
    assert_valid(demo.state, Plan.parse(data))
    assert "promises compared / held" in result.stderr  # the summary goes to stderr
    assert "plan written to standard output" in result.stderr


@pytest.mark.parametrize(("freeze", "slots"), [("0", 0), ("3", 3), ("90m", 2), ("2h", 2)])
def test_cli_freeze_units(
    demo: Demo, files: tuple[Path, Path], tmp_path: Path, freeze: str, slots: int
) -> None:
    # Slots of 60 minutes: 90m rounds up to 2 slots.
    state, previous = files
    out = tmp_path / "new.json"
    result = runner.invoke(
        app, replan_args(state, previous, out, "--solver", "greedy", "--freeze", freeze)
    )
    assert result.exit_code == 0, result.output
    churn = Plan.read(out).churn
    assert churn is not None and churn.held == len(promises(demo, NOW + slots))


@pytest.mark.parametrize("freeze", ["2x", "-1", "1.5", "h"])
def test_cli_bad_freeze(files: tuple[Path, Path], tmp_path: Path, freeze: str) -> None:
    state, previous = files
    out = tmp_path / "new.json"
    result = runner.invoke(
        app, replan_args(state, previous, out, "--solver", "greedy", "--freeze", freeze)
    )
    assert result.exit_code == 2, result.output
    assert "--freeze" in result.stderr
    assert repr(freeze) in result.stderr
    assert "Traceback" not in result.output
    assert not out.exists()


def test_cli_unknown_solver(files: tuple[Path, Path], tmp_path: Path) -> None:
    state, previous = files
    out = tmp_path / "new.json"
    result = runner.invoke(app, replan_args(state, previous, out, "--solver", "magic"))
    assert result.exit_code == 2, result.output
    assert "--solver: unknown solver 'magic'" in result.stderr
    assert not out.exists()


def test_cli_missing_previous_plan(files: tuple[Path, Path], tmp_path: Path) -> None:
    state, _ = files
    missing = tmp_path / "nope.json"
    out = tmp_path / "new.json"
    result = runner.invoke(app, replan_args(state, missing, out, "--solver", "greedy"))
    assert result.exit_code == 2, result.output
    assert f"{missing}: cannot read" in result.stderr
    assert "Traceback" not in result.output
    assert not out.exists()


def test_cli_previous_plan_of_another_instance_warns(
    demo: Demo, files: tuple[Path, Path], tmp_path: Path
) -> None:
    state, _ = files
    other = tmp_path / "other.json"
    demo.previous.model_copy(update={"instance": "yesterday"}).write(other)
    out = tmp_path / "new.json"
    result = runner.invoke(app, replan_args(state, other, out, "--solver", "greedy"))
    assert result.exit_code == 0, result.output
    assert (
        f"warning: the previous plan is for instance 'yesterday', not '{demo.state.name}'"
        in result.stderr
    )
    assert_valid(demo.state, Plan.read(out))
