"""Slurm's steps of a cycle: what it reads back besides the queue (its version, nodes and this
tool's reservations: service/slurm_read.py), the import of `squeue --json` with `sacct --json`
history, the scontrol actions, and the guard that keeps a reservation someone runs in."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from horizon_opt.actions import Action, Actions, SlurmOptions, read_desired, slurm_actions
from horizon_opt.actions.slurm import name_part
from horizon_opt.actions.slurm_state import SlurmState, drift
from horizon_opt.importers import Imported
from horizon_opt.importers.slurm import import_slurm
from horizon_opt.model.instance import Instance
from horizon_opt.plans.plan import Plan
from horizon_opt.service.context import Context, CycleFailed, jobs_only
from horizon_opt.service.folder import StateFolder
from horizon_opt.service.settings import SlurmSettings
from horizon_opt.service.slurm_read import (
    SlurmRead,
    held_to_limits,
    hints_of,
    outages,
    read_slurm,
    without_own_hints,
    without_service_jobs,
)
from horizon_opt.times import parse_time

__all__ = ["check", "guard", "import_queue", "make_actions", "read_back"]


def _settings(ctx: Context) -> SlurmSettings:
    assert isinstance(ctx.section, SlurmSettings)
    return ctx.section


def check(section: Any) -> str | None:
    """What the run configuration's `slurm:` section lacks, or None."""
    if not isinstance(section, SlurmSettings) or not (section.users or section.accounts):
        return (
            "slurm.users: the inference reservations need users or accounts (slurm.users, "
            "slurm.accounts): who runs the service's replicas"
        )
    return None


def read_back(ctx: Context, queue: str, folder: StateFolder) -> SlurmRead | None:
    """What Slurm holds besides the queue, when the queue comes from Slurm itself (a command)
    and the configuration reads it back; InputError when what it says is malformed."""
    s = _settings(ctx)
    if not s.read_back or not ctx.queue_command:
        return None
    cluster = ctx.cluster
    services = {} if cluster is None else {name_part(v.name): v.name for v in cluster.services}
    read, notes = read_slurm(s, ctx.parse(queue, "queue"), services, ctx.run)
    text = folder.applied()
    ledger = {} if text is None else read_desired(text, str(folder.root / "applied.json"))
    ctx.lines.extend(f"note: {n}" for n in notes)
    held = read.state.reservations or {}
    return replace(read, hints=hints_of(ledger), drift=drift(ledger, held) if text else 0)


def import_queue(
    ctx: Context, queue: Any, history: Any | None, now: datetime | None, read: SlurmRead | None
) -> Imported:
    """`squeue --json` (and `sacct --json`) imported around the cluster file's jobs part. Read
    back from Slurm: the service's own jobs are left out (its replicas), and so are the start
    hints this tool set; unusable nodes are outages."""
    cluster = ctx.cluster
    assert cluster is not None  # the config requires it for a scheduler payload
    down: list[dict[str, str]] = []
    if read is not None:
        queue = without_service_jobs(queue, _settings(ctx).service_jobs)[0]
        queue = without_own_hints(queue, read.hints)
        hosts = set(cluster.host_nodes())
        down = outages(read, now or datetime.now(UTC).replace(microsecond=0), hosts)
    imported = import_slurm(
        queue,
        jobs_only(cluster, down),
        sacct=history,
        snapshot=now,
        squeue_source="queue",
        sacct_source="history",
        default_duration=ctx.default_duration,
    )
    if read is not None and held_to_limits(imported.document, read.limits):
        ctx.lines.append(
            "note: running jobs are planned to hold their GPUs to their time limits (estimates "
            "said earlier ends): inference is never planned on GPUs a running job may still hold"
        )
    return imported


def make_actions(
    ctx: Context,
    instance: Instance,
    plan: Plan,
    applied: Mapping[str, Mapping[str, str]] | None,
    read: SlurmRead | None,
    document: Mapping[str, Any],
) -> Actions:
    """The scontrol commands; read back, they start from what Slurm holds, as of now."""
    s = _settings(ctx)
    options = SlurmOptions(
        reservation_prefix=s.reservation_prefix,
        users=tuple(s.users),
        accounts=tuple(s.accounts),
        lookahead_minutes=s.lookahead_minutes,
        time_zone=s.time_zone,
        hold_after_minutes=ctx.every_minutes,
        granularity=s.granularity,
        start_hints=s.start_hints,
    )
    state = SlurmState() if read is None else read.state
    clock = parse_time(str(document.get("now", "")))
    if read is not None and clock is not None:  # Slurm's present: the commands run now
        clock = max(clock, datetime.now(UTC).replace(microsecond=0))
    state = replace(state, clock=clock)
    return slurm_actions(instance, plan, options, applied, state)


def guard(ctx: Context) -> Callable[[Action], str | None]:
    """A reservation is ended now only if no job runs in it when the command is about to run
    (a replica may have started in it since the queue was read)."""

    def check_release(action: Action) -> str | None:
        if action.kind != "release":
            return None
        name = action.target.removeprefix("reservation/")
        argv = ["squeue", "-h", "-t", "RUNNING,CONFIGURING", f"--reservation={name}", "-o", "%i"]
        try:
            jobs = ctx.run(argv, "squeue").split()
        except CycleFailed as exc:
            return f"could not tell whether jobs run in it ({exc})"
        return f"jobs run in it ({', '.join(jobs)})" if jobs else None

    return check_release
