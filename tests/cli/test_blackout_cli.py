"""Bad `blackout:` windows through the CLI: exit 2, a message naming the field, no traceback;
a plan through a blackout fails `check`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from horizon_opt.cli import app

runner = CliRunner()


def write(tmp_path: Path, blackout: Any) -> Path:
    spec = {
        "name": "blackout",
        "horizon": {"slots": 8},
        "pools": [{"name": "a", "gpu_type": "h100", "nodes": 1, "gpus_per_node": 8}],
        "jobs": [{"id": "j", "priority": 1, "gpus": 8, "duration": 2, "blackout": blackout}],
    }
    path = tmp_path / "inst.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.parametrize(
    ("blackout", "field"),
    [
        ([{"start": 4, "end": 2}], "jobs[0].blackout[0].end: must be after start"),
        ([{"start": 1}], "jobs[0].blackout[0].end: required field is missing"),
        ([5], "jobs[0].blackout[0]"),
        ("slots 1-2", "jobs[0].blackout"),
        ([{"start": True, "end": 2}], "jobs[0].blackout[0].start"),
    ],
)
def test_validate_names_a_bad_blackout(tmp_path: Path, blackout: Any, field: str) -> None:
    result = runner.invoke(app, ["validate", str(write(tmp_path, blackout))])
    assert result.exit_code == 2
    assert field in result.output
    assert "Traceback" not in result.output


def test_check_refuses_a_plan_through_a_blackout(tmp_path: Path) -> None:
    inst = write(tmp_path, [{"start": 1, "end": 3}])
    plan = tmp_path / "plan.json"
    assert (
        runner.invoke(app, ["solve", str(inst), "--solver", "fifo", "-o", str(plan)]).exit_code == 0
    )
    data = json.loads(plan.read_text())
    assert (data["assignments"][0]["start"], data["assignments"][0]["end"]) == (3, 5)
    assert runner.invoke(app, ["check", str(inst), str(plan)]).exit_code == 0
    data["assignments"][0].update(start=0, end=2)
    plan.write_text(json.dumps(data))
    result = runner.invoke(app, ["check", str(inst), str(plan)])
    assert result.exit_code == 1
    assert "runs [0, 2) through its blackout [1, 3)" in result.output
