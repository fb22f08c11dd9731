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

import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from horizon_opt.errors import InputError
from horizon_opt.io import read_yaml, validation_problems
from horizon_opt.loop.replan import MAX_STABILITY
from horizon_opt.model.instance import duration_minutes
from horizon_opt.solvers import SOLVERS
from horizon_opt.solvers.options import MAX_SEED


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Source(_Model):
    """Where a payload comes from: a file, or a command whose standard output is the payload
    (run without a shell, as the argument list says)."""

    file: Path | None = None
    command: list[str] | None = Field(default=None, min_length=1)
    format: Literal["scheduler", "instance"] = Field(
        default="scheduler",
        description="scheduler: the scheduler's own payload (squeue --json, Kueue Workloads), "
        "imported around the cluster file; instance: an instance file (FORMAT.md) with `now` "
        "and running jobs placed, as your own exporter writes it.",
    )

    @model_validator(mode="after")
    def _one(self) -> Source:
        if (self.file is None) == (self.command is None):
            raise ValueError("give exactly one of `file` or `command`")
        if self.format == "instance" and self.file is None:
            raise ValueError("format instance: give the instance as a `file`")
        return self


_SECONDS = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*s\s*$")


def config_minutes(value: str) -> float | None:
    """Minutes of a duration as the run configuration and `--every` read it (`15m`, `2h`,
    `30s`), or 0 for `0`."""
    seconds = _SECONDS.match(value)
    if seconds is not None:
        return float(seconds.group(1)) / 60
    return 0.0 if value.strip() == "0" else duration_minutes(value)


def whole_minutes(value: str) -> int:
    """A checked duration in whole minutes, rounded up (a cadence of 0.5m is 1 minute, not 0)."""
    minutes = config_minutes(value)
    assert minutes is not None  # checked when read
    return math.ceil(minutes - 1e-9)


def _zero(value: object) -> object:
    """`freeze: 0` as YAML writes it: the number 0 is the duration 0."""
    return "0" if value == 0 and not isinstance(value, bool) else value


def _checked(positive: bool) -> Callable[[str], str]:
    def check(value: str) -> str:
        minutes = config_minutes(value)
        if minutes is None or minutes < 0 or (minutes == 0 and positive):
            raise ValueError(f"not a duration: {value!r} (e.g. 15m, 2h)")
        return value

    return check


# A duration with a unit (`15m`, `2h`, `1d`), or 0 where zero means none.
Duration = Annotated[str, BeforeValidator(_zero), AfterValidator(_checked(positive=False))]
PositiveDuration = Annotated[str, BeforeValidator(_zero), AfterValidator(_checked(positive=True))]


class ServiceJobs(_Model):
    """The service's own Slurm jobs (its replicas): served inference, not batch work."""

    users: list[str] = Field(default_factory=list)
    accounts: list[str] = Field(default_factory=list)
    partitions: list[str] = Field(default_factory=list)
    qos: list[str] = Field(default_factory=list)

    def any(self) -> bool:
        return bool(self.users or self.accounts or self.partitions or self.qos)


class SlurmSettings(_Model):
    users: list[str] = Field(
        default_factory=list, description="Users= of the inference reservations."
    )
    accounts: list[str] = Field(
        default_factory=list, description="Accounts= of the inference reservations."
    )
    reservation_prefix: str = Field(default="hopt", pattern=r"^[A-Za-z0-9_-]+$")
    lookahead: PositiveDuration = Field(
        default="24h", description="How far ahead reservations are made."
    )
    time_zone: str = Field(
        default="UTC", description="The zone times are written in (scontrol runs with TZ set)."
    )
    start_hints: bool = Field(
        default=False,
        description="Also hold pending jobs to the plan's starts (StartTime=, ReqNodeList=); "
        "default: inference reservations only (docs/operating.md says why).",
    )
    granularity: Literal["gpu", "node"] = Field(
        default="gpu",
        description="gpu: reserve GPUs (TRESPerNode, Slurm 23.11+; older Slurm gets whole "
        "nodes); node: whole nodes.",
    )
    read_back: bool = Field(
        default=True,
        description="With the queue from a command: read Slurm's version, nodes and this "
        "tool's reservations each cycle (scontrol) and start the commands from them.",
    )
    service_jobs: ServiceJobs = Field(
        default_factory=ServiceJobs,
        description="The service's own jobs (by users, accounts, partitions, qos): its "
        "replicas, left out of the batch work.",
    )

    @property
    def lookahead_minutes(self) -> int:
        return whole_minutes(self.lookahead)


class KueueSettings(_Model):
    cluster_queue: str = Field(description="The batch ClusterQueue whose quota inference leaves.")
    cluster_queue_object: Source = Field(
        description="`kubectl get clusterqueue NAME -o json`: where each flavor's GPU quota is "
        "(the quota patch names its place in the object)."
    )
    resource: str = Field(default="nvidia.com/gpu")
    quota_window: Duration = Field(
        default="4h",
        description="The quota leaves room for inference's peak over this long from now: a "
        "workload Kueue admits now runs on beside it (0: now only, enough with holds).",
    )
    holds: bool = Field(
        default=False,
        description="Also hold pending workloads until their planned start (spec.active); "
        "default: the batch quota only (docs/operating.md says why).",
    )

    @property
    def quota_window_minutes(self) -> int:
        return whole_minutes(self.quota_window)


class RunConfig(_Model):
    scheduler: Literal["slurm", "kueue"]
    cluster: Path | None = None  # required unless the queue is an instance file
    queue: Source
    history: Source | None = None
    state: Path = Path("state")
    every: PositiveDuration = "15m"
    solver: str = "cpsat"
    time_limit: float = Field(default=30.0, gt=0, le=86_400, allow_inf_nan=False)
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
        if self.scheduler == "kueue" and self.kueue is None:
            raise ValueError("scheduler kueue needs a `kueue:` section (cluster_queue)")
        if self.scheduler == "kueue" and self.history is not None:
            raise ValueError("history: only Slurm's sacct history is read")
        if self.scheduler == "slurm" and not (self.slurm.users or self.slurm.accounts):
            raise ValueError(
                "slurm.users: the inference reservations need users or accounts (slurm.users, "
                "slurm.accounts): who runs the service's replicas"
            )
        return self

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
