"""Every scheduler `horizon-opt run` drives, by name, with its steps of a cycle, so that the cycle
and the run configuration ask an entry instead of branching on a name (as callers ask the solver
registry, solvers/registry.py).

A scheduler's section of the run configuration is the field of its name (`slurm:`, `kueue:`).
Adding a scheduler is one entry here, its section in service/settings.py and its field in
RunConfig.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from horizon_opt.actions import Action, Actions
from horizon_opt.importers import Imported
from horizon_opt.model.instance import Instance
from horizon_opt.plans.plan import Plan
from horizon_opt.service import kueue, slurm
from horizon_opt.service.context import Context
from horizon_opt.service.folder import StateFolder
from horizon_opt.service.slurm_read import SlurmRead

__all__ = ["SCHEDULERS", "Scheduler"]

# (context, queue payload, history payload or None, snapshot or None, what was read back)
ImportQueue = Callable[[Context, Any, Any | None, datetime | None, SlurmRead | None], Imported]
# (context, instance, plan, the last applied desired state or None, read back, document)
MakeActions = Callable[
    [Context, Instance, Plan, Mapping[str, Mapping[str, str]] | None, SlurmRead | None, Any],
    Actions,
]
# (context, the queue's text, the state folder): what the scheduler holds besides the queue
ReadBack = Callable[[Context, str, StateFolder], SlurmRead | None]
Guard = Callable[[Action], str | None]  # why an action must not run now, or None


@dataclass(frozen=True)
class Scheduler:
    name: str
    import_queue: ImportQueue
    actions: MakeActions
    check: Callable[[Any], str | None]  # what its section of the configuration lacks, or None
    history: str = ""  # the history it reads besides the queue, in words; "": none
    read_back: ReadBack | None = None  # its version, nodes and own state, read each cycle
    guard: Callable[[Context], Guard] | None = None  # checked before each applied action


SCHEDULERS: dict[str, Scheduler] = {
    s.name: s
    for s in (
        Scheduler(
            name="slurm",
            import_queue=slurm.import_queue,
            actions=slurm.make_actions,
            check=slurm.check,
            history="Slurm's sacct history",
            read_back=slurm.read_back,
            guard=slurm.guard,
        ),
        Scheduler(
            name="kueue",
            import_queue=kueue.import_queue,
            actions=kueue.make_actions,
            check=kueue.check,
        ),
    )
}
