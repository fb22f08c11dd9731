"""`horizon-opt forecast` from the command line: a demand CSV, a patched instance, a backtest,
and bad options that exit 2 with nothing written."""

from __future__ import annotations

import csv
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

import horizon_opt as ho
from horizon_opt.cli import app

DEMO = Path(__file__).parents[2] / "instances" / "demo.yaml"
runner = CliRunner()


@pytest.fixture
def history(tmp_path: Path) -> Path:
    """Two weeks of hourly requests before the demo's horizon: 10 + 5 sin(hour), in rps."""
    start = datetime(2026, 11, 17, tzinfo=UTC)
    path = tmp_path / "chat-rps.csv"
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["timestamp", "value"])
        for h in range(14 * 24):
            when = start + timedelta(hours=h)
            out.writerow([when.isoformat(), 10 + 5 * math.sin(2 * math.pi * (h % 24) / 24)])
    return path


def test_demand_csv_for_the_next_day(history: Path, tmp_path: Path) -> None:
    out = tmp_path / "demand.csv"
    result = runner.invoke(
        app, ["forecast", str(history), "--rps-per-replica", "2", "-o", str(out), "--backtest"]
    )
    assert result.exit_code == 0, result.output
    assert "backtest: day-ahead" in result.stderr and "p95" in result.stderr
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 24 and rows[0]["time"] == "2026-12-01T00:00:00Z"
    # A pure daily cycle repeats: hour 6 is the peak, 15 rps / 2 rps per replica.
    assert float(rows[6]["replicas"]) == pytest.approx(7.5, rel=1e-6)


def test_patch_an_instance(history: Path, tmp_path: Path) -> None:
    out = tmp_path / "demo.yaml"
    args = ["forecast", str(history), "--patch", str(DEMO), "--service", "chat", "-o", str(out)]
    result = runner.invoke(app, [*args, "--rps-per-replica", "2"])
    assert result.exit_code == 0, result.output
    (tmp_path / "demo-chat.csv").write_text((DEMO.parent / "demo-chat.csv").read_text())
    inst = ho.load_instance(out)
    chat = next(s for s in inst.services if s.name == "chat")
    assert len(chat.demand) == 48 and chat.demand[6] == pytest.approx(7.5, rel=1e-6)
    assert "#" in out.read_text()  # the file's comments are kept


def test_a_history_far_before_the_horizon_is_said(history: Path, tmp_path: Path) -> None:
    """The history ends 2026-12-01; a forecast from 2027-03-01 carries only its daily pattern
    and latest level over 90 days, and says so; the next day's forecast says nothing."""
    out = tmp_path / "demand.csv"
    args = ["forecast", str(history), "-o", str(out)]
    far = runner.invoke(app, [*args, "--start", "2027-03-01T00:00:00Z"])
    assert far.exit_code == 0, far.output
    assert "warning: the history ends 2026-12-01 00:00 UTC, 90 days before" in far.stderr
    near = runner.invoke(app, args)
    assert near.exit_code == 0 and "warning" not in near.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--where", "model"], "error: --where: expected COLUMN=VALUE, got 'model'"),
        (["--patch", str(DEMO)], "error: --patch and --service go together"),
        (["--seasonality", "month"], "error: --seasonality: day or week, got 'month'"),
    ],
)
def test_bad_options_exit_2(history: Path, tmp_path: Path, args: list[str], message: str) -> None:
    out = tmp_path / "demand.csv"
    result = runner.invoke(app, ["forecast", str(history), "-o", str(out), *args])
    assert result.exit_code == 2 and message in result.stderr
    assert not out.exists()
