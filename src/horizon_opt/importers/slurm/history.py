"""What sacct's history (`sacct --json`: finished jobs) says: run-time estimates and the
outcome of finished jobs.

`import slurm --sacct` reads it (`read_history`) to plan a queued job for what the same user's
completed jobs of the same name took rather than its time limit (`estimate_minutes`), and to
tell whether a finished job that a queued one depends on completed OK (`History.states`). The
payload is read as `SacctPayload`, a pydantic model over reader.py's Slurm field types, so its
problems are named by JSON path as squeue's are.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar

from pydantic import Field

from horizon_opt.importers.slurm.payload import check_slurm
from horizon_opt.importers.slurm.reader import (
    JobId,
    SlurmModel,
    SlurmNumber,
    SlurmPayload,
    Strings,
    Text,
    an_object,
    base_state,
    jobs_default,
    read_payload,
    slurm_number,
)

__all__ = ["MIN_HISTORY", "History", "SacctJob", "SacctPayload", "estimate_minutes", "read_history"]

MIN_HISTORY = 3  # completed runs sacct must show before their run times replace the time limit


@dataclass
class History:
    """What sacct says about finished jobs: the fraction of its time limit each completed run
    used, by (user, job name) and by partition; completed runs' elapsed minutes; and the base
    state of every job (`"12"`, an array task `"10_3"`, an array's tasks under `"10"`)."""

    ratios: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (user, name)
    by_partition: dict[str, list[float]] = field(default_factory=dict)
    elapsed: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # minutes
    states: dict[str, list[str]] = field(default_factory=dict)  # "12", "10_3" -> base states
    arrays: dict[str, list[str]] = field(default_factory=dict)  # "10" -> its tasks' states


class _Time(SlurmModel):
    elapsed: Annotated[SlurmNumber, slurm_number("seconds")] = None
    limit: Annotated[SlurmNumber, slurm_number("minutes")] = None


class _State(SlurmModel):
    current: Strings = Field(default_factory=list)


class _Array(SlurmModel):
    job_id: Annotated[SlurmNumber, slurm_number("a job id")] = None
    task_id: Annotated[SlurmNumber, slurm_number("an array task id")] = None


class SacctJob(SlurmModel):
    """One job of `sacct --json`: what the history reads of it."""

    job_id: JobId
    time: Annotated[_Time, an_object("an object")] = _Time()
    state: Annotated[_State, an_object("an object")] = _State()
    array: Annotated[_Array, an_object("an object")] = _Array()
    user: Text = ""
    name: Text = ""
    partition: Text = ""


class SacctPayload(SlurmPayload):
    """`sacct --json` as the history reads it: its jobs."""

    output: ClassVar[str] = "sacct --json output"
    jobs: list[Annotated[SacctJob, an_object("a job object", null_is_empty=False)]] = jobs_default()


def read_history(payload: Any, source: str = "sacct") -> History:
    """The history in parsed `sacct --json` output; InputError names the JSON path of a field
    of the wrong type."""
    check_slurm(payload, "sacct", source)
    history = History()
    for job in read_payload(SacctPayload, payload, source).jobs:
        base = base_state(job.state.current)
        history.states.setdefault(str(job.job_id), []).append(base)
        array_job, task = job.array.job_id, job.array.task_id
        if isinstance(array_job, int) and array_job and isinstance(task, int):
            history.states.setdefault(f"{array_job}_{task}", []).append(base)
            history.arrays.setdefault(str(array_job), []).append(base)
        elapsed, limit = job.time.elapsed, job.time.limit
        if base != "COMPLETED" or not isinstance(elapsed, int):
            continue
        user, name = job.user, job.name
        if isinstance(limit, int) and limit > 0:
            ratio = min(elapsed / 60 / limit, 1.0)
            history.ratios.setdefault((user, name), []).append(ratio)
            for p in job.partition.split(","):
                history.by_partition.setdefault(p.strip(), []).append(ratio)
        history.elapsed.setdefault((user, name), []).append(elapsed / 60)
    return history


def estimate_minutes(
    limit: int | None, user: str, name: str, partitions: list[str], history: History
) -> tuple[int, str] | None:
    """A run-time estimate from sacct history, with the note that says how; None: no estimate.

    Slurm kills a job at its time limit, so users ask for generous limits (often the
    partition's maximum) and most jobs end well before them; planning every job at its limit
    leaves the cluster idle behind jobs that have finished. The estimate is the median fraction
    of their limits that the same user's completed jobs of the same name used (at least
    MIN_HISTORY of them; else the partition's completed jobs), applied to this job's limit and
    rounded up to a minute. The ratio carries over when a user changes the limit; the median
    ignores the odd hung or quick-failing run; only COMPLETED runs count (a failed or
    cancelled run says nothing about the work). It is never above the limit: Slurm ends the
    job there. A job without a limit (`limit` None) gets the median elapsed time of the same
    user's completed jobs of that name.
    """
    if limit is None:
        runs = history.elapsed.get((user, name), [])
        if len(runs) < MIN_HISTORY:
            return None
        minutes = max(1, math.ceil(statistics.median(runs) - 1e-9))
        return minutes, (
            f"no time limit; sacct: {len(runs)} completed runs of {user}/{name} took a median "
            f"{minutes} min: planned for {minutes}m"
        )
    ratios = history.ratios.get((user, name), [])
    whose = f"{user}/{name}"
    if len(ratios) < MIN_HISTORY:
        ratios = [r for p in partitions for r in history.by_partition.get(p, [])]
        whose = f"partition {', '.join(partitions)}"
        if len(ratios) < MIN_HISTORY:
            return None
    ratio = statistics.median(ratios)
    minutes = min(limit, max(1, math.ceil(limit * ratio - 1e-9)))
    return minutes, (
        f"time limit {limit} min; sacct: {len(ratios)} completed runs of {whose} used a median "
        f"{ratio:.0%} of their limits: planned for {minutes}m (the limit stays the bound)"
    )
