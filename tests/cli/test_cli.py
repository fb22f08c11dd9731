"""The `horizon-opt` command: exit codes, files written, and clean messages for bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from horizon_opt import __version__
from horizon_opt.cli import app
from horizon_opt.plans.plan import Plan

runner = CliRunner()
DEMO = Path(__file__).parents[2] / "instances" / "demo.yaml"

Data = dict[str, Any]


@pytest.fixture
def instance_file(tmp_path: Path, tiny_spec: Data) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_spec, sort_keys=False))
    return path


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"horizon-opt {__version__}"


def test_solve_fifo_writes_the_plan(tmp_path: Path, instance_file: Path) -> None:
    out = tmp_path / "out" / "plan.json"
    result = runner.invoke(app, ["solve", str(instance_file), "--solver", "fifo", "-o", str(out)])
    assert result.exit_code == 0, result.output
    plan = Plan.read(out)
    assert (plan.solver, plan.instance, plan.status) == ("fifo", "tiny", "heuristic")
    assert "fifo on tiny: heuristic" in result.stdout
    assert f"plan written to {out}" in result.stdout
    assert [p.name for p in out.parent.iterdir()] == ["plan.json"]  # no temp files left


def test_check_valid_and_tampered_plan(tmp_path: Path, instance_file: Path) -> None:
    out = tmp_path / "plan.json"
    solved = runner.invoke(app, ["solve", str(instance_file), "--solver", "fifo", "-o", str(out)])
    assert solved.exit_code == 0, solved.output

    ok = runner.invoke(app, ["check", str(instance_file), str(out)])
    assert ok.exit_code == 0, ok.output
    assert ok.stdout.startswith("VALID: ")
    assert "warning" not in ok.stdout

    # Tamper: the first assignment ends one slot late, and the first unscheduled job vanishes.
    data = json.loads(out.read_text())
    assert data["assignments"] and data["unscheduled"], "tiny under fifo has both"
    a = data["assignments"][0]
    a["end"] += 1
    gone = data["unscheduled"].pop(0)["job"]
    bad = tmp_path / "tampered.json"
    bad.write_text(json.dumps(data))
    result = runner.invoke(app, ["check", str(instance_file), str(bad)])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert f"rule 1: job '{gone}' is neither assigned nor unscheduled" in lines
    assert (
        f"rule 2: job '{a['job']}': end {a['end']} != start {a['start']} + duration "
        f"{a['end'] - 1 - a['start']} on {a['pool']}"
    ) in lines
    assert lines[-1] == "INVALID: 2 violation(s)"
    assert "INVALID: " in result.stdout
    assert "Traceback" not in result.output


def test_check_hand_plan_and_objective_warning(
    tmp_path: Path, instance_file: Path, tiny_plan_dict: Data
) -> None:
    # The hand plan is valid; it claims objective 12 = its pwo (8 + 1 + 3).
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(tiny_plan_dict))
    result = runner.invoke(app, ["check", str(instance_file), str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "VALID: 3 jobs assigned, 0 unscheduled, pwo 12.00"
    tiny_plan_dict["objective"] = 99
    path.write_text(json.dumps(tiny_plan_dict))
    result = runner.invoke(app, ["check", str(instance_file), str(path)])
    assert result.exit_code == 0
    assert "warning: the plan reports objective 99.00, recomputed pwo is 12.00" in result.stdout


def test_bad_instance_exits_2_naming_the_field(tmp_path: Path, tiny_spec: Data) -> None:
    tiny_spec["jobs"][1]["duration"] = "5x"
    tiny_spec["services"][0]["gpus_per_replica"] = 3
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(tiny_spec))
    result = runner.invoke(
        app, ["solve", str(path), "--solver", "fifo", "-o", str(tmp_path / "p.json")]
    )
    assert result.exit_code == 2
    assert "error: jobs[1].duration: not a duration: '5x'" in result.stderr
    assert "error: services[0].gpus_per_replica: 3 does not divide" in result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "p.json").exists()


def test_check_with_bad_instance_exits_2(
    tmp_path: Path, tiny_spec: Data, tiny_plan_dict: Data
) -> None:
    tiny_spec["pools"][0]["nodes"] = "two"
    inst = tmp_path / "bad.yaml"
    inst.write_text(yaml.safe_dump(tiny_spec))
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(tiny_plan_dict))
    result = runner.invoke(app, ["check", str(inst), str(plan)])
    assert result.exit_code == 2
    assert "error: pools[0].nodes: " in result.stderr
    assert "Traceback" not in result.output


def test_bad_plan_file_exits_2(tmp_path: Path, instance_file: Path, tiny_plan_dict: Data) -> None:
    tiny_plan_dict["assignments"][0]["start"] = "soon"
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(tiny_plan_dict))
    result = runner.invoke(app, ["check", str(instance_file), str(plan)])
    assert result.exit_code == 2
    assert "error: assignments[0].start: " in result.stderr
    assert "Traceback" not in result.output


def test_yaml_syntax_error_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: x\nhorizon: {slots: 4\n")
    result = runner.invoke(
        app, ["solve", str(path), "--solver", "fifo", "-o", str(tmp_path / "p.json")]
    )
    assert result.exit_code == 2
    assert "not valid YAML" in result.stderr
    assert "Traceback" not in result.output


def test_nonexistent_instance_exits_2(tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    result = runner.invoke(
        app, ["solve", str(missing), "--solver", "fifo", "-o", str(tmp_path / "p.json")]
    )
    assert result.exit_code == 2
    assert f"error: {missing}: cannot read" in result.stderr
    assert "Traceback" not in result.output


def test_nonexistent_plan_exits_2(tmp_path: Path, instance_file: Path) -> None:
    result = runner.invoke(app, ["check", str(instance_file), str(tmp_path / "nope.json")])
    assert result.exit_code == 2
    assert "cannot read" in result.stderr
    assert "Traceback" not in result.output


def test_unknown_solver_exits_2(tmp_path: Path, instance_file: Path) -> None:
    result = runner.invoke(
        app, ["solve", str(instance_file), "--solver", "magic", "-o", str(tmp_path / "p.json")]
    )
    assert result.exit_code == 2
    assert "--solver: unknown solver 'magic'" in result.stderr


@pytest.mark.parametrize(
    ("solvers", "said"),
    [("greedy,magic", "unknown solver(s) ['magic']"), (" , ", "name at least one solver")],
)
def test_compare_refuses_unknown_or_no_solvers(
    tmp_path: Path, instance_file: Path, solvers: str, said: str
) -> None:
    out = tmp_path / "plans"
    args = ["compare", str(instance_file), "--solvers", solvers, "--output-dir", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert f"--solvers: {said}; choose from fifo," in result.stderr
    assert not out.exists()


def test_schema_prints_json_schema() -> None:
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert "properties" in schema
    assert {"name", "horizon", "pools", "outages", "services", "jobs"} <= set(schema["properties"])
    assert schema["additionalProperties"] is False


def test_no_arguments_shows_help() -> None:
    result = runner.invoke(app, [])
    assert "solve" in result.output and "check" in result.output


def test_a_bound_that_fails_the_guard_is_dropped_and_the_plan_written(
    tmp_path: Path, instance_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever source gives a bound below the plan, `solve` writes the plan without a bound,
    says why on stderr and exits 0: a wrong bound never costs the plan."""
    from horizon_opt.solvers.cpsat import solver

    def with_a_bound_too_low(*args: Any, **kwargs: Any) -> Plan:
        return build_plan(*args, **{**kwargs, "bound": 0.0, "bound_source": "lp"})

    build_plan = solver.build_plan
    monkeypatch.setattr(solver, "build_plan", with_a_bound_too_low)
    out = tmp_path / "plan.json"
    args = ["solve", str(instance_file), "--solver", "cpsat", "-t", "2", "--workers", "1"]
    result = runner.invoke(app, [*args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "warning: cpsat: the bound 0 (lp) is below the plan's pwo" in result.stderr
    plan = Plan.read(out)
    assert plan.bound is None and plan.status == "feasible" and plan.objective > 0


@pytest.mark.parametrize("value", ["0", "1", "1.5", "-0.01", "nan", "inf"])
def test_a_gap_outside_zero_to_one_exits_2(
    value: str, tmp_path: Path, instance_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("solved with a bad --gap")

    monkeypatch.setattr("horizon_opt.cli.plan.solve", fail)
    out = tmp_path / "p.json"
    result = runner.invoke(app, ["solve", str(instance_file), "--gap", value, "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert "--gap" in result.stderr and "between 0 and 1" in result.stderr
    assert not out.exists()


def test_solve_stopped_by_its_gap_writes_a_valid_plan(tmp_path: Path) -> None:
    # The demo's start plan is within 90% of its first bound: the search stops right there.
    out, log = tmp_path / "plan.json", tmp_path / "search.log"
    args = ["solve", str(DEMO), "-t", "3", "--workers", "1", "--gap", "0.9"]
    result = runner.invoke(app, [*args, "--log", str(log), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "search stopped by GapBelow(share=0.9)" in log.read_text()
    checked = runner.invoke(app, ["check", str(DEMO), str(out)])
    assert checked.exit_code == 0, checked.output
    plan = Plan.read(out)
    assert plan.gap is not None and plan.gap <= 0.9
