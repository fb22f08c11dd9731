"""The parts of the run configuration (service/config.py) that more than the configuration reads:
sources, durations, and each scheduler's section, which its steps of the cycle read
(service/registry.py)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from horizon_opt.model.instance import duration_minutes

__all__ = [
    "ConfigModel",
    "Duration",
    "KueueSettings",
    "PositiveDuration",
    "ServiceJobs",
    "SlurmSettings",
    "Source",
    "config_minutes",
    "whole_minutes",
]


class ConfigModel(BaseModel):
    """A part of the run configuration: unknown keys refused, frozen once read."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Source(ConfigModel):
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


class ServiceJobs(ConfigModel):
    """The service's own Slurm jobs (its replicas): served inference, not batch work."""

    users: list[str] = Field(default_factory=list)
    accounts: list[str] = Field(default_factory=list)
    partitions: list[str] = Field(default_factory=list)
    qos: list[str] = Field(default_factory=list)

    def any(self) -> bool:
        return bool(self.users or self.accounts or self.partitions or self.qos)


class SlurmSettings(ConfigModel):
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


class KueueSettings(ConfigModel):
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
