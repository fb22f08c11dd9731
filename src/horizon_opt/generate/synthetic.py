"""The recipe that `enterprise`, `hetero` and `deadline` share; they differ only in its knobs."""

from __future__ import annotations

from horizon_opt.generate.aliases import InstanceData, IntArray, Rng
from horizon_opt.generate.assemble import instance_data
from horizon_opt.generate.jobs import PoolsFn, TimesFn, make_jobs
from horizon_opt.generate.outages import make_outages
from horizon_opt.generate.services import make_services, reservation
from horizon_opt.generate.sizes import Size


def _left_gpu_hours(size: Size, up: dict[str, IntArray], reserved: dict[str, IntArray]) -> float:
    """GPU-hours that inference (the per-slot reservation) leaves to batch work."""
    h = size.slot_minutes / 60
    available = sum(float(up[p.name].sum()) * p.gpus_per_node for p in size.pools) * h
    return available - sum(float(r.sum()) for r in reserved.values()) * h


def synthetic(
    name: str,
    size: Size,
    rng: Rng,
    *,
    peak_share: float,
    load: float,
    pools_for: PoolsFn | None = None,
    add_times: TimesFn | None = None,
) -> InstanceData:
    """Services, outages, then `load` x the GPU-hours they leave as jobs (`pools_for`,
    `add_times`: see `make_jobs`)."""
    services = make_services(size, rng, peak_share=peak_share)
    reserved = reservation(size, services)
    outages, up = make_outages(size, rng, reserved)
    left = _left_gpu_hours(size, up, reserved)
    jobs = make_jobs(size, rng, reserved, left, load, pools_for, add_times)
    return instance_data(name, size, outages, services, jobs)
