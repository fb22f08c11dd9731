"""What several commands share: option types (`Annotated`), and the parsers and checks of
option values; bad values exit 2 (typer.BadParameter, or InputError under `input_errors`)."""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from horizon_opt.errors import InputError
from horizon_opt.loop.replan import MAX_STABILITY
from horizon_opt.model.instance import Instance, duration_minutes
from horizon_opt.solvers import SOLVERS
from horizon_opt.solvers.options import MAX_SEED, default_workers
from horizon_opt.times import parse_time


def file_name(value: str) -> Path:
    """An output name as given: an empty one would otherwise mean the current folder."""
    if not value:
        raise typer.BadParameter("empty file name")
    return Path(value)


InstanceArg = Annotated[
    Path, typer.Argument(help="Instance file (YAML, see FORMAT.md).", show_default=False)
]


def finite(value: float) -> float:
    """A float option's value, refused when it is not a finite number (`inf` passes `min`)."""
    if not math.isfinite(value):
        raise typer.BadParameter(f"not a finite number: {value}")
    return value


TimeLimit = Annotated[
    float,
    typer.Option("--time-limit", "-t", help="Seconds for cpsat.", min=0.1, callback=finite),
]
PlanTimeLimit = Annotated[
    float,
    typer.Option("--time-limit", "-t", help="Seconds per cpsat plan.", min=0.1, callback=finite),
]


def share(value: float | None) -> float | None:
    """A share option's value, strictly between 0 and 1 (checked here: typer's range check lets
    `nan` through)."""
    if value is not None and not 0 < value < 1:
        raise typer.BadParameter(f"use a share between 0 and 1 (0.01 is 1%), got {value}")
    return value


Gap = Annotated[
    float | None,
    typer.Option(
        help="Stop cpsat once its plan is proven within this share of the best possible (0.01: "
        "1%); the time limit still holds.",
        callback=share,
        show_default=False,
    ),
]
Workers = Annotated[
    int,
    typer.Option(
        help="CP-SAT search workers (default: the CPUs available to this process, at most 8).",
        min=1,
        show_default=False,
    ),
]
DEFAULT_WORKERS = default_workers()
Seed = Annotated[
    int,
    typer.Option(help="Random seed; with --workers 1 runs are repeatable.", min=0, max=MAX_SEED),
]
Log = Annotated[
    Path | None,
    typer.Option(
        help="Write the CP-SAT search log to this file (streamed: a device such as /dev/stderr "
        "works too; its folder must exist).",
        parser=file_name,
    ),
]
Hint = Annotated[Path | None, typer.Option(help="Start cpsat from this plan file.")]
Stability = Annotated[
    float,
    typer.Option(
        help="Price of a promise beyond the freeze window, times its job's value: cpsat keeps a "
        "promised start unless moving gains more (0: no price).",
        min=0.0,
        max=MAX_STABILITY,
    ),
]
KeepPromises = Annotated[
    float | None,
    typer.Option(
        help="Hold what people were told: a start first predicted 2 h or more ahead is worth "
        "this times its job's value in every later cpsat plan that starts the job by then, so "
        "a re-plan breaks it only for more (0: promises are not held). Default: 0.5 for "
        "-expect and -risk re-plans, 0 for the others.",
        min=0.0,
        max=MAX_STABILITY,
        show_default=False,
    ),
]
DeadlineOdds = Annotated[
    bool,
    typer.Option(
        "--deadline-odds/--no-deadline-odds",
        help="For -expect and -risk re-plans: a job with a deadline is worth its chance of "
        "ending in time, read off the ended runs: half its value for a start whose learned run "
        "ends by it, more for an early start (all of it where its limit ends by it; "
        "docs/simulate.md).",
    ),
]
EndDiscount = Annotated[
    float,
    typer.Option(
        help="For cpsat's re-plans: a plan gives up this share of each job's value per hour its "
        "end comes later, so it trades some pwo for ending valuable work sooner instead of "
        "deferring it behind work a later plan may put first again (0: the order only breaks "
        "ties; docs/design.md).",
        min=0.0,
        max=1.0,
    ),
]
EarlyStarts = Annotated[
    bool | None,
    typer.Option(
        "--early-starts/--no-early-starts",
        help="Between plans, a re-planning policy starts a job its plan starts later as soon "
        "as it fits on GPUs no other planned start needs over its planned run. Default: on for "
        "-expect, -pack and -risk re-planning policies, off for the others; online and "
        "open-loop policies never do (docs/simulate.md).",
        show_default=False,
    ),
]
SOLVER_LIST = "\n\n".join(f"{s.name}: {s.description}" for s in SOLVERS.values())
Solver = Annotated[str, typer.Option(help=f"One of:\n\n{SOLVER_LIST}")]

PlanOutput = Annotated[
    Path,
    typer.Option(
        "--output",
        "-o",
        help="Where to write the plan (JSON); - writes it to standard output and the summary "
        "to stderr.",
        parser=file_name,
    ),
]


def check_solver(solver: str) -> None:
    if solver not in SOLVERS:
        raise InputError(
            [f"--solver: unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}"]
        )


def time_option(value: str, inst: Instance, option: str) -> int:
    """A time option as slots: a duration with a unit (2h, 90m) rounds up; a number is slots."""
    text = value.strip()
    if text.isascii() and text.isdigit():
        return int(text)
    minutes = duration_minutes(text)
    if minutes is None:
        raise InputError([f"{option}: not a duration: {value!r} (use slots or e.g. 90m, 2h)"])
    return math.ceil(minutes / inst.slot_minutes - 1e-9)


FORMATS = ("text", "json")
Format = Annotated[
    str, typer.Option("--format", "-f", help="text (a table) or json (for scripts).")
]


def check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise InputError([f"--format: unknown format {fmt!r}; choose one of {', '.join(FORMATS)}"])


def to_json(data: object) -> str:
    return json.dumps(data, indent=1, allow_nan=False)


def one_of(value: str, option: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise typer.BadParameter(f"use {' or '.join(choices)}, got {value!r}", param_hint=option)
    return value


def snapshot(text: str | None) -> datetime | None:
    if text is None:
        return None
    when = parse_time(text)
    if when is None:
        raise InputError([f"--now: not an ISO-8601 time: {text!r}"])
    return when


Snapshot = Annotated[
    str | None,
    typer.Option(
        "--now",
        help="The time of the snapshot, ISO-8601; it becomes the instance's `now`. Slurm's own "
        "`last_update` wins over it (a difference is noted); default: the time of the import.",
        show_default=False,
    ),
]
