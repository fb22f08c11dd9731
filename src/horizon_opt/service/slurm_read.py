"""What a Slurm cycle reads besides the queue: the version, the nodes' states and the tool's own
reservations (`scontrol`), and from the queue the service's own jobs, the jobs running in each
reservation and the GPUs each running job holds to its limit (`horizon_opt.actions.slurm_state`).

The service's own jobs (its replicas, matched by user, account, partition or QoS in the run
configuration) are served inference, not batch work: they leave the queue before the import, so
inference is not counted twice, and their GPUs are the reservations' to hold.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from horizon_opt.actions.slurm_state import (
    SlurmState,
    held_gpus,
    held_reservations,
    job_id,
    node_states,
    occupied,
    parse_version,
    unusable_nodes,
)
from horizon_opt.model.instance import duration_minutes
from horizon_opt.service.context import Run
from horizon_opt.service.settings import ServiceJobs, SlurmSettings
from horizon_opt.times import iso, parse_time

__all__ = [
    "FOREVER",
    "SlurmRead",
    "held_to_limits",
    "hints_of",
    "limits_of",
    "outages",
    "read_slurm",
    "service_job",
    "without_own_hints",
    "without_service_jobs",
]

FOREVER = datetime(9999, 1, 1, tzinfo=UTC)
"""The end of a running job without a time limit."""


@dataclass(frozen=True)
class SlurmRead:
    """What one cycle read from Slurm: the actions' view (`state`) and what the import uses."""

    state: SlurmState = field(default_factory=SlurmState)
    unusable: Mapping[str, str] = field(default_factory=dict)  # host -> its state words
    # host -> the latest limit of the jobs still running there (a drained node runs them on)
    busy_until: Mapping[str, datetime] = field(default_factory=dict)
    # job id -> the start hint (StartTime=) this tool set, from the ledger
    hints: Mapping[str, datetime] = field(default_factory=dict)
    drift: int = 0  # reservations where Slurm differs from the ledger (`slurm_state.drift`)
    limits: Mapping[str, datetime] = field(default_factory=dict)  # running job -> its limit


def service_job(job: Mapping[str, Any], match: ServiceJobs) -> bool:
    """Whether a `squeue --json` job is one of the service's own (a replica)."""
    fields = (
        ("user_name", match.users),
        ("account", match.accounts),
        ("partition", match.partitions),
        ("qos", match.qos),
    )
    for key, wanted in fields:
        value = job.get(key)
        if wanted and isinstance(value, str) and set(value.split(",")) & set(wanted):
            return True
    return False


def without_service_jobs(payload: Any, match: ServiceJobs) -> tuple[Any, list[str]]:
    """The queue without the service's jobs, and the ids of those left out."""
    if not match.any() or not isinstance(payload, dict):
        return payload, []
    jobs = payload.get("jobs")
    if not isinstance(jobs, list):
        return payload, []
    mine = [j for j in jobs if isinstance(j, dict) and service_job(j, match)]
    kept = [j for j in jobs if not (isinstance(j, dict) and service_job(j, match))]
    return {**payload, "jobs": kept}, [job_id(j) for j in mine]


def _task_id(job: Mapping[str, Any]) -> str:
    """The importer's id of a job: `1234`, or `1230_4` for an array task."""
    array, task = job.get("array_job_id"), job.get("array_task_id")
    a = array.get("number") if isinstance(array, Mapping) else array
    t = task.get("number") if isinstance(task, Mapping) and task.get("set") else task
    if isinstance(a, int) and a and isinstance(t, int) and not isinstance(t, bool):
        return f"{a}_{t}"
    return job_id(job)


def without_own_hints(payload: Any, hints: Mapping[str, datetime]) -> Any:
    """The queue with the eligible time this tool set (a start hint, `StartTime=`, which Slurm
    reports as the job's `eligible_time`) taken back to its submit time, so the hint is not
    read as the job's release and a later plan can start it earlier."""
    if not hints or not isinstance(payload, dict) or not isinstance(payload.get("jobs"), list):
        return payload
    jobs = []
    for job in payload["jobs"]:
        hint = hints.get(_task_id(job)) if isinstance(job, dict) else None
        eligible = None if hint is None else _epoch(job.get("eligible_time"))
        if hint is not None and eligible is not None and abs(eligible - hint.timestamp()) < 60:
            job = {**job, "eligible_time": job.get("submit_time")}
        jobs.append(job)
    return {**payload, "jobs": jobs}


def _epoch(value: Any) -> float | None:
    number = value.get("number") if isinstance(value, Mapping) else value
    return float(number) if isinstance(number, int) and not isinstance(number, bool) else None


def limits_of(payload: Any) -> dict[str, datetime]:
    """Running job id (the importer's) -> when its time limit ends (FOREVER without one)."""
    out = {}
    jobs = payload.get("jobs") if isinstance(payload, Mapping) else None
    for job in jobs if isinstance(jobs, list) else []:
        if not isinstance(job, Mapping) or "RUNNING" not in str(job.get("job_state")):
            continue
        start, limit = _epoch(job.get("start_time")), _epoch(job.get("time_limit"))
        until = FOREVER
        if start is not None and limit is not None and 0 < limit < 4294967294:
            until = datetime.fromtimestamp(start, UTC) + timedelta(minutes=limit)
        out[_task_id(job)] = until
    return out


def held_to_limits(document: dict[str, Any], limits: Mapping[str, datetime]) -> int:
    """Running jobs of the instance document placed to their time limits (within the horizon,
    unless it has an open end), where an estimate ended them earlier: a plan then never gives
    their GPUs to anything before the limits. Returns how many were moved."""
    horizon = document.get("horizon", {})
    start = parse_time(str(horizon.get("start", "")))
    if start is None or not limits:
        return 0
    end = start + timedelta(minutes=int(horizon["slots"]) * int(horizon.get("slot_minutes", 60)))
    moved = 0
    for job in document.get("jobs", []):
        placed = job.get("placed")
        limit = limits.get(str(job.get("id", "")).split("@")[0])
        ends = None if placed is None else parse_time(str(placed.get("end", "")))
        if limit is None or ends is None or not isinstance(job.get("duration"), str):
            continue
        target = limit if horizon.get("open_end") else min(limit, end)
        minutes = duration_minutes(job["duration"])
        if target <= ends or minutes is None or target >= FOREVER:
            continue
        placed["end"] = iso(target)
        job["duration"] = f"{math.ceil(minutes + (target - ends).total_seconds() / 60)}m"
        moved += 1
    return moved


def hints_of(ledger: Mapping[str, Mapping[str, str]]) -> dict[str, datetime]:
    """The start hints of the ledger (`job/<id>`: start), by job id."""
    out = {}
    for target, props in ledger.items():
        when = parse_time(props.get("start", "")) if target.startswith("job/") else None
        if when is not None:
            out[target.removeprefix("job/")] = when
    return out


def read_slurm(
    settings: SlurmSettings,
    payload: Any,
    services: Mapping[str, str],
    run: Run,
) -> tuple[SlurmRead, list[str]]:
    """Read Slurm's version, nodes and the tool's reservations (`run` runs scontrol), and from
    the queue (`payload`, with the service's jobs) what runs where. Returns it and notes."""
    notes: list[str] = []
    version = parse_version(run(["scontrol", "version"], "scontrol version"))
    zone = ZoneInfo(settings.time_zone)
    shown = run(
        ["env", f"TZ={settings.time_zone}", "scontrol", "show", "reservation", "-o"],
        "scontrol show reservation",
    )
    mine = held_reservations(shown, settings.reservation_prefix, services, zone)
    unusable = unusable_nodes(node_states(run(["scontrol", "show", "nodes", "-o"], "nodes")))
    batch, replicas = without_service_jobs(payload, settings.service_jobs)
    if replicas:
        notes.append(
            f"{len(replicas)} running or pending jobs are the service's own (slurm.service_jobs): "
            f"served replicas, not batch work ({', '.join(replicas[:10])}"
            f"{', ...' if len(replicas) > 10 else ''})"
        )
    every = held_gpus(payload, FOREVER)
    busy_until = {h: max(until for _, until in held) for h, held in every.items()}
    notes += [
        f"node {host} is {words}: it takes no new work"
        + (
            f" (its running jobs go on, to {busy_until[host]:%Y-%m-%dT%H:%MZ} at most)"
            if host in busy_until and "DOWN" not in words
            else ""
        )
        for host, words in unusable.items()
    ]
    read = SlurmRead(unusable=unusable, busy_until=busy_until, limits=limits_of(batch))
    state = SlurmState(
        reservations=mine,
        occupied=occupied(payload),
        held=held_gpus(batch, FOREVER),
        version=version,
    )
    return replace(read, state=state), notes


def outages(read: SlurmRead, snapshot: datetime, hosts: set[str]) -> list[dict[str, str]]:
    """Outages (cluster file form) for the unusable nodes the cluster file names: from the
    snapshot (a drained node: from when the jobs it still runs reach their limits) on."""
    out = []
    for host, words in read.unusable.items():
        if host not in hosts:
            continue
        start = snapshot
        if "DOWN" not in words and host in read.busy_until:
            start = max(snapshot, read.busy_until[host])
        if start < FOREVER:
            out.append({"node": host, "start": start.isoformat(), "end": FOREVER.isoformat()})
    return out
