"""The measured window of a replay (`simulate.window`): parsing, and the figures by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from test_solvers import build
from typer.testing import CliRunner

from horizon_opt.cli import app
from horizon_opt.errors import InputError
from horizon_opt.simulate import Noise, draw_world, policy, simulate
from horizon_opt.simulate.window import Window, WindowTally
from horizon_opt.solvers import SolveOptions

FAST = SolveOptions(time_limit=1.0, workers=1, seed=0)
runner = CliRunner()


def test_parse() -> None:
    assert Window.parse("middle", 48, 60) == Window(12, 36)
    assert Window.parse("12-36", 96, 30) == Window(24, 72)
    assert Window.middle(10) == Window(2, 8)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("soon", "is not A-B"), ("36-12", "not within"), ("0-49", "not within the 48 h")],
)
def test_parse_refuses(text: str, fragment: str) -> None:
    with pytest.raises(InputError, match=fragment):
        Window.parse(text, 48, 60)


def test_a_run_counts_its_share_inside() -> None:
    """A run over 0-8 worth 16 with the window 2-6: half of it inside, 8."""
    tally = WindowTally(Window(2, 6))
    tally.completed(16.0, 0, 8)
    tally.completed(5.0, 6, 9)  # wholly after it
    tally.slot(1, 4.0, 8.0)  # before it
    tally.slot(2, 4.0, 8.0)
    tally.slot(3, 8.0, 8.0)
    assert (tally.pwo, tally.utilization) == (8.0, 0.75)


# A closed 48-slot horizon on one 8-GPU node: "early" (8 GPUs, 0-4, value 32) and "late" (8 GPUs,
# 24 slots, released at 30, value 192). The replay runs "late" from 30; it is still running at
# 48 but completes in the world, so the middle window (12-36) counts its 6 slots of 24 inside:
# 192 * 6 / 24 = 48. GPUs in the window: 8 for slots 30-35 of 24 * 8: 48 / 192 = 0.25.
LATE = {
    "name": "late",
    "horizon": {"slots": 48},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 8}],
    "jobs": [
        {"id": "early", "priority": 1, "gpus": 8, "duration": 4},
        {"id": "late", "priority": 1, "gpus": 8, "duration": 24, "release": 30},
    ],
}


@pytest.mark.parametrize("name", ["backfill", "cpsat@event"])
def test_a_run_past_the_end_counts_inside_the_window(name: str) -> None:
    inst = build(LATE)
    r = simulate(inst, [policy(name, 4, 2)], draw_world(inst, Noise.parse("none"), 0), FAST)[0]
    assert r.realized_pwo == 32.0  # only "early" ended within the replay
    assert (r.window_start, r.window_end) == (12, 36)
    assert r.window_pwo == pytest.approx(48.0)
    assert r.window_utilization == pytest.approx(0.25)


def test_a_failing_run_counts_nothing(tmp_path: Path) -> None:
    inst = build(LATE)
    world = draw_world(inst, Noise.parse("none"), 0)
    world = type(world)(world.run_share, frozenset({"late"}), world.demand, world.cancels)
    r = simulate(inst, [policy("backfill", 4, 2)], world, FAST)[0]
    assert r.window_pwo == 0.0


def test_the_cli_reports_the_window(tmp_path: Path) -> None:
    path = tmp_path / "late.yaml"
    path.write_text(yaml.safe_dump(LATE))
    out = tmp_path / "sim"
    args = [
        "simulate",
        str(path),
        "--policy",
        "backfill",
        "--world",
        "synthetic",
        "--noise",
        "none",
        "-o",
        str(out),
    ]
    result = runner.invoke(app, [*args, "--window", "30-40", "--no-charts"])
    assert result.exit_code == 0, result.output
    assert "window 30-40 h" in result.output
    assert "| backfill | - | 32 | - | +0.0% | - | " in result.output
    # late runs 30-40 inside it: 192 * 10 / 24 = 80, on all 8 GPUs of the window
    assert "| 80 (+0.0%) | 100.0% |" in result.output
    bad = runner.invoke(app, [*args, "--window", "40-60"])
    assert bad.exit_code == 2
    assert "--window: 40-60 is not within the 48 h replayed" in bad.output
    assert "Traceback" not in bad.output
