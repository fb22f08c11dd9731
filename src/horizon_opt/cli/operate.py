"""The command that operates a cluster: `run`, one re-planning cycle per call, or one every
`--every` (docs/operating.md)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from horizon_opt.cli.errors import input_errors
from horizon_opt.cli.options import Snapshot, snapshot
from horizon_opt.errors import InputError
from horizon_opt.service.config import RunConfig, read_config
from horizon_opt.service.cycle import Cycle, run_cycle
from horizon_opt.service.folder import Busy
from horizon_opt.service.settings import config_minutes

EXIT_FAILED = 1  # the cycle failed; the last good plan stays in force
EXIT_BUSY = 3  # another run holds the state folder


def run_cmd(
    config: Annotated[
        Path,
        typer.Argument(
            metavar="CONFIG.yaml",
            help="The run configuration: scheduler, cluster file, queue source, state folder, "
            "solver (docs/operating.md).",
            show_default=False,
        ),
    ],
    apply: Annotated[
        bool,
        typer.Option(
            "--apply",
            help="Run the actions through scontrol / kubectl; without it they are only written "
            "(state/current/actions.sh) for review.",
        ),
    ] = False,
    every: Annotated[
        str | None,
        typer.Option(
            help="Keep running: one cycle every this long (e.g. 15m); it is also the cadence "
            "that holds and pinned hosts look ahead by, instead of the config's `every`.",
            show_default=False,
        ),
    ] = None,
    cycles: Annotated[
        int | None,
        typer.Option(
            help="With --every: stop after this many cycles, with the last one's exit code.",
            min=1,
            show_default=False,
        ),
    ] = None,
    now: Snapshot = None,
) -> None:
    """One re-planning cycle: import the queue, re-plan from the last good plan, write the plan,
    explanations, metrics and the scheduler actions that changed. Exit 0, 1 when the cycle
    failed (the last good plan stays in force), 2 on a bad configuration, 3 when another run
    holds the state folder."""
    with input_errors():
        cfg = read_config(config)
        seconds = None
        if every is not None:
            minutes = config_minutes(every)
            if minutes is None or minutes <= 0:
                raise InputError([f"--every: not a duration: {every!r} (e.g. 15m or 30s)"])
            cfg = cfg.model_copy(update={"every": every})
            seconds = minutes * 60
        when = snapshot(now)
    if seconds is None:
        raise typer.Exit(_one(cfg, apply, when))
    done = code = 0
    try:
        while cycles is None or done < cycles:
            started = time.monotonic()
            code = _one(cfg, apply, when)
            done += 1
            if cycles is not None and done >= cycles:
                break
            time.sleep(max(seconds - (time.monotonic() - started), 0.0))
    except KeyboardInterrupt:
        typer.echo("stopped", err=True)
    raise typer.Exit(code)  # the last cycle's


def _one(config: RunConfig, apply: bool, now: datetime | None) -> int:
    """One cycle, reported; its exit code."""
    try:
        with input_errors():
            cycle = run_cycle(config, apply=apply, now=now)
    except Busy as exc:
        typer.echo(f"error: {exc}; this cycle is skipped", err=True)
        return EXIT_BUSY
    for line in cycle.lines:
        typer.echo(line, err=True)
    for line in summary(cycle, config, apply):
        typer.echo(line)
    if cycle.error is not None:
        typer.echo(f"error: {cycle.error}", err=True)
    return 0 if cycle.ok else EXIT_FAILED


def summary(cycle: Cycle, config: RunConfig, apply: bool) -> list[str]:
    """What a person reads after a cycle."""
    stamp = cycle.when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    if cycle.plan is None or cycle.folder is None or cycle.actions is None:
        return [f"cycle {stamp}: FAILED; the last good plan stays in force ({config.state})"]
    plan = cycle.plan
    bound = "" if plan.gap is None else f", gap {100 * plan.gap:.1f}%"
    lines = [
        f"cycle {stamp}: {plan.solver} plan, pwo {plan.objective:,.1f}{bound}; jobs: "
        f"{cycle.running} running, {len(plan.assignments) - cycle.running} planned, "
        f"{len(plan.unscheduled)} not planned ({cycle.folder})"
    ]
    if plan.churn is not None:
        c = plan.churn
        lines.append(
            f"  churn: {c.held} held, {c.moved} moved ({c.later} later), {c.dropped} dropped, "
            f"{c.new} newly planned"
        )
    kinds = cycle.actions.by_kind()
    shown = ", ".join(f"{n} {k}" for k, n in kinds.items()) or "none: nothing changed"
    script = cycle.folder / "actions.sh"
    if apply:
        failed = f", {cycle.failed} failed (the rest not run)" if cycle.failed else ""
        lines.append(f"  actions: {shown}; {cycle.applied} applied{failed} ({script})")
    else:
        lines.append(f"  actions: {shown}; written to {script}, not applied (--apply runs them)")
    return lines
