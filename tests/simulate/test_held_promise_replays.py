"""Replays that once stopped on an invalid plan: a periodic policy's fill between re-plans held a
promise the state could no longer allow (a team above its limit or kept out of its quota, a run
grown into a forecast peak past the written horizon). Each is greedy, which needs no time limit,
so the replay is the same on any machine; `simulate` checks every plan it executes and exits 0
only when all pass."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from horizon_opt.cli import app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


@pytest.mark.parametrize(
    ("instance", "name", "seed"),
    [
        ("teams.yaml", "greedy", 0),  # rule 9: a held borrower kept a team out of its quota
        ("teams.yaml", "greedy-expect", 1),  # rule 8: a held start above its team's limit
        ("demo.yaml", "greedy-predict", 1),  # rule 6: a held run into chat's peak at slot 54
    ],
)
def test_the_replay_runs_to_its_end(instance: str, name: str, seed: int, tmp_path: Path) -> None:
    args = [str(ROOT / "instances" / instance), "--policy", name, "--seed", str(seed)]
    result = runner.invoke(app, ["simulate", *args, "--workers", "1", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "internal error" not in result.output
    assert (tmp_path / f"{name}.ran.json").exists()
