"""The run configuration: what one re-planning cycle reads, how it plans, where it keeps state.

Written once by the platform team beside the cluster file (docs/operating.md):

```yaml
scheduler: slurm                        # slurm | kueue
cluster: cluster.yaml                   # the importers' cluster file (docs/import.md)
queue: {command: [squeue, --json]}      # or {file: squeue.json}
history: {command: [sacct, --json]}     # Slurm only, optional: run-time estimates
state: state                            # the state folder; relative paths: to this file
every: 15m                              # the cadence; pending work planned later is held
solver: cpsat
time_limit: 30                          # seconds per plan
workers: 2
freeze: 1h                              # the previous plan's starts this near are kept
keep: 20                                # cycles kept in the state folder
slurm: {users: [svc-inference]}         # who may run in the inference reservations
kueue: {cluster_queue: batch, cluster_queue_object: {command: [kubectl, get, clusterqueue, batch, -o, json]}}
```
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from horizon_opt.errors import InputError
from horizon_opt.io import read_yaml, validation_problems
from horizon_opt.loop.replan import MAX_STABILITY
from horizon_opt.service.registry import SCHEDULERS
from horizon_opt.service.settings import (
    ConfigModel,
    Duration,
    KueueSettings,
    PositiveDuration,
    SlurmSettings,
    Source,
    whole_minutes,
)
from horizon_opt.solvers import SOLVERS
from horizon_opt.solvers.options import MAX_SEED, SERVICE_PLAN_SECONDS


class RunConfig(ConfigModel):
    scheduler: str  # a name of service/registry.py's SCHEDULERS
    cluster: Path | None = None  # required unless the queue is an instance file
    queue: Source
    history: Source | None = None
    state: Path = Path("state")
    every: PositiveDuration = "15m"
    solver: str = "cpsat"
    time_limit: float = Field(default=SERVICE_PLAN_SECONDS, gt=0, le=86_400, allow_inf_nan=False)
    workers: int = Field(default=2, ge=1, le=64)
    seed: int = Field(default=0, ge=0, le=MAX_SEED)
    # Not replan's 2 h (DEFAULT_FREEZE_MINUTES): a service re-plans every few minutes, and the
    # replay did better re-planning often with a short freeze (docs/operating.md, Cadence).
    freeze: Duration = "1h"
    stability: float = Field(default=0.0, ge=0, le=MAX_STABILITY, allow_inf_nan=False)
    keep_promises: float = Field(default=0.0, ge=0, le=MAX_STABILITY, allow_inf_nan=False)
    keep: int = Field(default=20, ge=1, le=10_000)
    default_duration: PositiveDuration = "4h"
    command_timeout: float = Field(default=120.0, gt=0, le=3_600, allow_inf_nan=False)
    slurm: SlurmSettings = Field(default_factory=SlurmSettings)
    kueue: KueueSettings | None = None

    @field_validator("scheduler", mode="before")
    @classmethod
    def _scheduler(cls, value: object) -> object:
        if not isinstance(value, str) or value not in SCHEDULERS:
            names = [repr(n) for n in SCHEDULERS]
            raise ValueError(f"Input should be {', '.join(names[:-1])} or {names[-1]}")
        return value

    @field_validator("solver")
    @classmethod
    def _solver(cls, value: str) -> str:
        if value not in SOLVERS:
            raise ValueError(f"unknown solver {value!r}; one of {', '.join(SOLVERS)}")
        return value

    @model_validator(mode="after")
    def _check(self) -> RunConfig:
        if self.cluster is None and self.queue.format != "instance":
            raise ValueError("cluster: the cluster file is required to import the queue")
        scheduler = SCHEDULERS[self.scheduler]
        problem = scheduler.check(self.section)
        if problem is not None:
            raise ValueError(problem)
        if self.history is not None and not scheduler.history:
            read = [s.history for s in SCHEDULERS.values() if s.history]
            raise ValueError(f"history: only {' and '.join(read)} is read")
        return self

    @property
    def section(self) -> SlurmSettings | KueueSettings | None:
        """The scheduler's own section (the field of its name)."""
        section: SlurmSettings | KueueSettings | None = getattr(self, self.scheduler)
        return section

    def minutes(self, field: Literal["every", "freeze", "default_duration"]) -> int:
        return whole_minutes(getattr(self, field))


def read_config(path: str | os.PathLike[str]) -> RunConfig:
    """The run configuration at `path`, its relative paths made relative to its folder;
    problems raise InputError, one line per field."""
    file = Path(path)
    data = read_yaml(file, InputError)
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as exc:
        raise InputError([f"{file}: {p}" for p in validation_problems(exc)]) from None
    base = Path(os.path.normpath(file.parent))
    return config.model_copy(
        update={
            "cluster": None if config.cluster is None else _under(base, config.cluster),
            "state": _under(base, config.state),
            "queue": _rebased(config.queue, base),
            "history": None if config.history is None else _rebased(config.history, base),
            "kueue": config.kueue
            if config.kueue is None
            else config.kueue.model_copy(
                update={"cluster_queue_object": _rebased(config.kueue.cluster_queue_object, base)}
            ),
        }
    )


def _under(base: Path, path: Path) -> Path:
    """`path` relative to `base` (unchanged when absolute), without `..` detours."""
    return Path(os.path.normpath(base / path))


def _rebased(source: Source, base: Path) -> Source:
    if source.file is None:
        return source
    return source.model_copy(update={"file": _under(base, source.file)})
