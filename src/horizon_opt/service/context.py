"""What a scheduler's steps of a cycle are given (`Context`) and how a step fails (`CycleFailed`).

The cycle (service/cycle.py) builds the context from the run configuration; the steps of each
scheduler (service/registry.py) read it, so they need neither the whole configuration nor the
cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from horizon_opt.importers import ClusterFile
from horizon_opt.model.spec import OutageSpec
from horizon_opt.service.settings import Source

__all__ = ["Context", "CycleFailed", "Run", "jobs_only"]

Run = Callable[[list[str], str], str]  # (argv, what) -> standard output; raises on failure


class CycleFailed(Exception):
    """A step of the cycle failed; the last good plan stays in force."""

    def __init__(self, step: str, problems: list[str]) -> None:
        super().__init__(f"{step}: {'; '.join(problems)}")


@dataclass(frozen=True)
class Context:
    """One cycle as a scheduler's steps see it."""

    section: Any  # the scheduler's section of the run configuration (the field of its name)
    cluster: ClusterFile | None
    run: Run  # runs a command (CycleFailed when it cannot run or fails)
    read: Callable[[Source, str], str]  # a source's text (CycleFailed when unreadable)
    parse: Callable[[str, str], Any]  # a payload's text as JSON or YAML (CycleFailed if neither)
    every_minutes: int  # the cadence: work planned later is held
    default_duration: str  # the run time of a job nothing else says
    queue_command: bool  # the queue comes from a command (the scheduler is live), not a file
    lines: list[str]  # what a person reads of the cycle: the steps add their notes


def jobs_only(cluster: ClusterFile, outages: Sequence[dict[str, str]] = ()) -> ClusterFile:
    """The cluster file without its services, with `outages` added: the import is the jobs',
    and the cycle fits the services' demand beside them (`shortfall`)."""
    added = [OutageSpec.model_validate(o) for o in outages]
    return cluster.model_copy(update={"services": [], "outages": [*cluster.outages, *added]})
