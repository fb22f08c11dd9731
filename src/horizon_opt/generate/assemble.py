"""The drawn cluster, services, outages and jobs put together as one FORMAT.md instance."""

from __future__ import annotations

from horizon_opt.generate.aliases import InstanceData
from horizon_opt.generate.jobs import Job
from horizon_opt.generate.sizes import START, Size


def _job_data(size: Size, job: Job) -> InstanceData:
    """A job as FORMAT.md writes it: one duration on a one-pool cluster, optional fields omitted."""
    durations = job.durations
    assert durations is not None
    out: InstanceData = {"id": job.id, "kind": job.kind, "priority": job.priority, "gpus": job.gpus}
    if len(size.pools) == 1:
        out["duration"] = next(iter(durations.values()))
    else:
        out["duration"] = durations
    if job.release:
        out["release"] = job.release
    if job.deadline is not None:
        out["deadline"] = job.deadline
    if job.after is not None:
        out["after"] = [job.after]
    return out


def instance_data(
    name: str,
    size: Size,
    outages: list[InstanceData],
    services: list[InstanceData],
    jobs: list[Job],
) -> InstanceData:
    """The instance as a plain dict, in FORMAT.md's field order."""
    return {
        "name": name,
        "horizon": {
            "slots": size.slots,
            "slot_minutes": size.slot_minutes,
            "start": START.isoformat().replace("+00:00", "Z"),
        },
        "pools": [
            {
                "name": p.name,
                "gpu_type": p.gpu_type,
                "nodes": p.nodes,
                "gpus_per_node": p.gpus_per_node,
            }
            for p in size.pools
        ],
        "outages": outages,
        "services": services,
        "jobs": [_job_data(size, j) for j in jobs],
    }
