"""What the commands that solve share: the instance's warnings before a solve, live progress
on a terminal, and the solve options from the command line."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import typer

from horizon_opt.model.instance import Instance
from horizon_opt.model.validate import validate
from horizon_opt.plans.plan import Plan
from horizon_opt.solvers import GapBelow, Progress, SolveOptions


def progress_printer() -> Callable[[Progress], None] | None:
    """Live progress on a terminal only; nothing when output is piped or logged."""
    if not sys.stderr.isatty():
        return None

    def show(p: Progress) -> None:
        bound = "-" if p.bound is None else f"{p.bound:,.1f}"
        gap = "-" if p.gap is None else f"{100 * p.gap:.2f}%"
        sys.stderr.write(
            f"\r  {p.elapsed:7.1f}s  pwo {p.objective:,.1f}  bound {bound}  gap {gap}   "
        )
        sys.stderr.flush()

    return show


MAX_WARNINGS = 10


def warn(instance_file: Path, inst: Instance) -> None:
    """The instance's warnings on stderr before a solve, at most MAX_WARNINGS of them: a solve
    can run for minutes, and `validate` is there to list them all."""
    found = validate(inst)
    for warning in found[:MAX_WARNINGS]:
        typer.echo(f"warning: {warning}", err=True)
    if len(found) > MAX_WARNINGS:
        more = len(found) - MAX_WARNINGS
        typer.echo(
            f"... and {more} more warning{'s' if more > 1 else ''} "
            f"(horizon-opt validate {instance_file} lists them all)",
            err=True,
        )


def solve_options(
    time_limit: float,
    workers: int,
    seed: int,
    log: Path | None,
    hint: Path | None,
    gap: float | None = None,
) -> SolveOptions:
    return SolveOptions(
        time_limit=time_limit,
        workers=workers,
        seed=seed,
        log=log,
        hint=Plan.read(hint) if hint is not None else None,
        on_progress=progress_printer(),
        stop=None if gap is None else GapBelow(gap),
    )
