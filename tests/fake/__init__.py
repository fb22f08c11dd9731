"""Fake schedulers for the end-to-end tests of `horizon-opt run`: a world in a JSON file, the
scheduler's commands as scripts on PATH (slurm.py: squeue, scontrol; kueue.py: kubectl)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
HORIZON_OPT = Path(sys.executable).parent / "horizon-opt"


def install_commands(bin_dir: Path, script: str, commands: Mapping[str, str]) -> None:
    """Executables in `bin_dir` that run `script` (in this folder) with their first argument:
    `{"squeue": "squeue"}` makes `squeue ARGS` run `slurm.py squeue ARGS`."""
    bin_dir.mkdir(exist_ok=True)
    for name, first in commands.items():
        wrapper = bin_dir / name
        wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{HERE / script}" {first} "$@"\n')
        wrapper.chmod(0o755)


def write_demand_csv(path: Path, start: datetime, pattern: Sequence[float]) -> None:
    """Hourly replicas from a day before `start` to four days after, repeating `pattern`."""
    rows = ["time,replicas"]
    for h in range(-24, 96):
        rows.append(f"{(start + timedelta(hours=h)).isoformat()},{pattern[h % len(pattern)]}")
    path.write_text("\n".join(rows) + "\n")


def assert_current_plan_valid(state: Path) -> None:
    """The state folder's current plan passes `horizon-opt check` against its instance."""
    current = state / "current"
    check = subprocess.run(
        [str(HORIZON_OPT), "check", str(current / "instance.yaml"), str(current / "plan.json")],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0 and check.stdout.startswith("VALID"), check.stdout
