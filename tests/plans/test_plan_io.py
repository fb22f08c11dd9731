"""The plan file: JSON round trip, atomic writes, and errors that name the bad field."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from horizon_opt import io
from horizon_opt.cli import app
from horizon_opt.errors import PlanError
from horizon_opt.model.instance import Instance
from horizon_opt.plans.metrics import evaluate
from horizon_opt.plans.plan import PLAN_FORMAT, Metrics, Plan
from horizon_opt.solvers import solve

Data = dict[str, Any]


def test_round_trip_hand_plan(tmp_path: Path, tiny_plan: Plan) -> None:
    path = tmp_path / "plan.json"
    tiny_plan.write(path)
    again = Plan.read(path)
    assert again == tiny_plan
    assert again.to_json() == tiny_plan.to_json()
    data = json.loads(path.read_text())
    assert data["format"] == PLAN_FORMAT == "horizon-opt.plan/1"
    assert data["assignments"][0] == {
        "job": "train",
        "pool": "a",
        "start": 0,
        "end": 2,
        "gpus": {"a-1": [0, 1, 2, 3]},
        "start_time": None,
        "end_time": None,
    }


def test_round_trip_solver_plan(tmp_path: Path, any_instance: Instance) -> None:
    plan = solve(any_instance, "greedy")
    path = tmp_path / "sub" / "plan.json"  # missing folders are created
    plan.write(path)
    assert Plan.read(path) == plan


def test_solver_plan_writes_every_metric_in_order(any_instance: Instance) -> None:
    plan = solve(any_instance, "greedy")
    written = json.loads(plan.to_json())["metrics"]
    by_team = {"teams", "team_fairness"}  # written only for instances with teams
    assert list(written) == [f for f in Metrics.model_fields if f not in by_team]
    assert written == evaluate(any_instance, plan).model_dump()


@pytest.mark.parametrize(
    "metrics",
    [
        {},
        {"utilization": 0.81, "pwo": 1834.5},  # FORMAT.md's example
        {"pwo": 12, "from_another_tool": {"cost": 3}},
    ],
)
def test_old_and_partial_metrics_load_and_are_written_back_as_they_were(
    tiny_plan_dict: Data, metrics: Data
) -> None:
    tiny_plan_dict["metrics"] = metrics
    plan = Plan.parse(tiny_plan_dict)
    assert plan.metrics.pwo == metrics.get("pwo", 0.0)
    assert plan.metrics.completed == 0  # not in the file: reads as zero
    assert json.loads(plan.to_json())["metrics"] == metrics


def test_a_plan_without_metrics_loads(tiny_plan_dict: Data) -> None:
    assert "metrics" not in tiny_plan_dict
    assert Plan.parse(tiny_plan_dict).metrics == Metrics()


def test_plan_has_every_field_of_the_format(tiny_plan: Plan) -> None:
    data = json.loads(tiny_plan.to_json())
    for key in (
        "format",
        "instance",
        "solver",
        "status",
        "objective",
        "bound",
        "gap",
        "wall_seconds",
        "assignments",
        "inference",
        "unscheduled",
        "metrics",
    ):
        assert key in data
    assert data["bound"] is None and data["gap"] is None


def test_write_replaces_the_file_and_leaves_no_temp_files(tmp_path: Path, tiny_plan: Plan) -> None:
    path = tmp_path / "plan.json"
    path.write_text("old content")
    tiny_plan.write(path)
    assert Plan.read(path) == tiny_plan
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]


def test_failed_serialization_keeps_the_old_file(tmp_path: Path, tiny_plan: Plan) -> None:
    path = tmp_path / "plan.json"
    tiny_plan.write(path)
    before = path.read_text()
    broken = tiny_plan.model_copy(update={"metrics": Metrics(x=object())})  # not JSON-serializable
    with pytest.raises(Exception, match="object"):
        broken.write(path)
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]


def test_failed_write_removes_the_temp_file(tmp_path: Path) -> None:
    # The data fails while being written to the temporary file.
    path = tmp_path / "out.txt"
    path.write_text("old")
    with pytest.raises(TypeError):
        io.write_atomic(path, 12345)  # type: ignore[arg-type]
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_failed_rename_removes_the_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "out.txt"
    path.write_text("old")

    def fail(src: str, dst: str) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(io.os, "replace", fail)
    with pytest.raises(OSError, match="disk on fire"):
        io.write_atomic(path, "new")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_write_atomic_bytes_and_text(tmp_path: Path) -> None:
    io.write_atomic(tmp_path / "a.bin", b"\x00\x01")
    io.write_atomic(tmp_path / "b.txt", "héllo")
    assert (tmp_path / "a.bin").read_bytes() == b"\x00\x01"
    assert (tmp_path / "b.txt").read_text(encoding="utf-8") == "héllo"


def set_(key: str, value: Any) -> Callable[[Data], None]:
    return lambda d: d.__setitem__(key, value)


@pytest.mark.parametrize(
    ("change", "path", "word"),
    [
        (set_("format", "horizon-opt.plan/2"), "format", "horizon-opt.plan/1"),
        (set_("status", "great"), "status", "optimal"),
        (set_("objective", "high"), "objective", "number"),
        (lambda d: d.pop("instance"), "instance", "missing"),
        (set_("colour", "red"), "colour", "unknown field"),
        (lambda d: d["assignments"][1].update(start="soon"), "assignments[1].start", "integer"),
        (lambda d: d["assignments"][0].update(gpus=[0, 1]), "assignments[0].gpus", "dictionary"),
        (
            lambda d: d["assignments"][0]["gpus"]["a-1"].__setitem__(2, "x"),
            "assignments[0].gpus.a-1[2]",
            "integer",
        ),
        (lambda d: d["assignments"][2].pop("pool"), "assignments[2].pool", "missing"),
        (lambda d: d["inference"][3].update(replicas=1.5), "inference[3].replicas", "integer"),
        (lambda d: d["inference"][0].update(extra=1), "inference[0].extra", "unknown field"),
        (set_("unscheduled", [{"job": "x"}]), "unscheduled[0].reason", "missing"),
        (set_("metrics", {"pwo": "high"}), "metrics.pwo", "number"),
    ],
)
def test_bad_plan_names_the_field(
    tiny_plan_dict: Data, change: Callable[[Data], object], path: str, word: str
) -> None:
    change(tiny_plan_dict)
    with pytest.raises(PlanError) as info:
        Plan.parse(tiny_plan_dict)
    problems = info.value.problems
    assert any(p.startswith(f"{path}: ") and word in p for p in problems), problems


def test_plan_not_json(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text('{"format": ')
    with pytest.raises(PlanError) as info:
        Plan.read(path)
    assert info.value.problems[0].startswith(f"{path}: not valid JSON")


def test_plan_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text("[1, 2]")
    with pytest.raises(PlanError) as info:
        Plan.read(path)
    assert info.value.problems[0].startswith("(top level): ")


def test_plan_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.json"
    with pytest.raises(PlanError) as info:
        Plan.read(path)
    assert info.value.problems == [f"{path}: cannot read: No such file or directory"]


def test_an_unscheduled_job_without_a_code_is_written_without_one(tiny_plan_dict: Data) -> None:
    """FORMAT.md: `code` may be omitted; a plan never writes `"code": null` (the audit of a
    replay, whose never-run jobs have no cause code, included)."""
    tiny_plan_dict["unscheduled"] = [
        {"job": "x", "reason": "never ran: no decision started it within the horizon"},
        {"job": "y", "reason": "runs after x", "code": "predecessor-unplanned"},
    ]
    plan = Plan.parse(tiny_plan_dict)
    written = json.loads(plan.to_json())["unscheduled"]
    assert written == tiny_plan_dict["unscheduled"]
    assert Plan.parse(json.loads(plan.to_json())) == plan


def test_a_replay_audit_writes_no_null_code(tmp_path: Path, tiny_spec: Data) -> None:
    tiny_spec["jobs"].append({"id": "never", "priority": 1, "gpus": 4, "duration": {"a": 9}})
    path = tmp_path / "tiny.yaml"
    path.write_text(json.dumps(tiny_spec))
    out = tmp_path / "out"
    args = ["simulate", str(path), "-o", str(out), "-t", "1", "--policy", "backfill"]
    args += ["--no-charts", "--world", "synthetic", "--noise", "early=0,fail=0,demand=0"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    text = (out / "backfill.ran.json").read_text()
    unscheduled = json.loads(text)["unscheduled"]
    assert "never" in [u["job"] for u in unscheduled]
    assert all("code" not in u for u in unscheduled) and '"code": null' not in text
