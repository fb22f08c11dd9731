"""The solver registry: one entry per solver, whose flags (not its name) decide how `compare`,
`bench` and the CLI treat it (test_bench.py registers a solver under a new name)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

import horizon_opt as ho
from horizon_opt.analysis.compare import compare_plans
from horizon_opt.bench import guard_seconds
from horizon_opt.cli import app
from horizon_opt.generate import GeneratorError, generate
from horizon_opt.model.instance import Instance
from horizon_opt.plans.plan import Plan
from horizon_opt.solvers import SOLVERS, SolveOptions, Solver
from horizon_opt.solvers.options import default_workers

KNOWN_FLAGS = {  # name: anytime, takes_hint, reports_bound, online, optimizing, and the baselines
    "fifo": (False, False, False, True, False, True, False),
    "fifo-elastic": (False, False, False, True, False, False, False),
    "backfill": (False, False, False, True, False, False, True),
    "backfill-static": (False, False, False, True, False, False, False),
    "backfill-value": (False, False, False, True, False, False, False),
    "greedy": (False, False, False, False, False, False, False),
    "cpsat": (True, True, True, False, True, False, False),
}


def test_every_entry_and_its_flags() -> None:
    for name, solver in SOLVERS.items():
        assert solver.name == name
        assert callable(solver.run)
        assert solver.description and "\n" not in solver.description
        flags = (
            solver.anytime,
            solver.takes_hint,
            solver.reports_bound,
            solver.online,
            solver.optimizing,
            solver.baseline,
            solver.loop_baseline,
        )
        assert all(isinstance(flag, bool) for flag in flags)
        assert flags == KNOWN_FLAGS.get(name, flags)
        assert solver.periodic is not solver.online
        assert "\n" not in solver.method
    assert set(KNOWN_FLAGS) <= set(SOLVERS)
    for flag in ("baseline", "loop_baseline"):  # the reference of a comparison is one solver
        assert sum(getattr(s, flag) for s in SOLVERS.values()) == 1, flag
    assert ho.SOLVERS is SOLVERS


@pytest.mark.parametrize("command", ["solve", "compare", "bench"])
def test_help_lists_every_solver_with_its_description(command: str) -> None:
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    for solver in SOLVERS.values():
        assert f"{solver.name}: {solver.description}" in result.output


def test_workers_default_is_said_in_the_help() -> None:
    result = CliRunner().invoke(app, ["solve", "--help"], env={"COLUMNS": "250"})
    assert "default: the CPUs available to this process, at most 8" in result.output
    assert 1 <= default_workers() <= 8


def test_the_cli_starts_without_ortools() -> None:
    code = "import sys, horizon_opt.cli; print('ortools' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_compare_hints_only_solvers_that_take_a_hint(
    monkeypatch: pytest.MonkeyPatch, tiny: Instance
) -> None:
    hints: dict[str, Plan | None] = {}

    def recorder(name: str) -> Solver:
        def run(instance: Instance, options: SolveOptions) -> Plan:
            hints[name] = options.hint
            return SOLVERS["greedy"].run(instance, options).model_copy(update={"solver": name})

        return Solver(name, run, "records its hint", False, name == "hinted", False)

    monkeypatch.setitem(SOLVERS, "plain", recorder("plain"))
    monkeypatch.setitem(SOLVERS, "hinted", recorder("hinted"))
    plans = compare_plans(tiny, ["greedy", "plain", "hinted"], SolveOptions(workers=1))
    assert hints["plain"] is None
    assert hints["hinted"] is plans[0]


def test_bench_guards_anytime_solvers_by_their_time_limit() -> None:
    for name, solver in SOLVERS.items():
        expected = 60 + 30 if solver.anytime else 30
        assert guard_seconds(name, 60, workers=2, margin=30) == expected


@pytest.mark.parametrize(
    "bad", [{"seed": -1}, {"seed": 2**40}, {"workers": 0}, {"time_limit": 0.0}]
)
def test_options_no_solver_can_honour_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        SolveOptions(**bad)  # type: ignore[arg-type]


def test_generate_refuses_a_negative_seed() -> None:
    with pytest.raises(GeneratorError, match="seed"):
        generate("enterprise", "small", -1)
