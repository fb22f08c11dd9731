"""Real-time inference services: their forecast demand and the GPUs it reserves per slot.

The reservation comes first because everything else is drawn around it: outages must not leave
inference short, gangs must fit beside it, and the batch load is measured against what it leaves.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import timedelta

import numpy as np

from horizon_opt.generate.aliases import InstanceData, IntArray, Rng
from horizon_opt.generate.sizes import START, Size

ShapeFn = Callable[[Size, Rng, float, int], list[float]]  # (size, rng, peak, k) -> demand

SERVICE_NAMES = (
    "chat",
    "search-embed",
    "code-assist",
    "rerank",
    "summarize",
    "translate",
    "moderation",
    "voice",
)


def daily_cycle(
    size: Size, rng: Rng, peak: float, trough_ratio: float, peak_hour: float
) -> list[float]:
    """Forecast replicas per slot: cosine day (peak at `peak_hour`), noise, lighter weekends.

    Rescaled so that its maximum is exactly `peak`; rounded to two decimals."""
    hours = np.arange(size.slots) * size.slot_minutes / 60
    shape = 0.5 * (1 + np.cos(2 * np.pi * (hours - peak_hour) / 24))
    series = trough_ratio + (1 - trough_ratio) * shape
    series *= 1 + rng.normal(0.0, 0.04, size.slots)
    if size.hours > 48:
        weekday = np.array([(START + timedelta(hours=float(h))).weekday() for h in hours])
        series *= np.where(weekday >= 5, 0.8, 1.0)
    series = np.clip(series, 0.05, None)
    series *= peak / series.max()
    return [round(float(v), 2) for v in series]


def required(demand: list[float], headroom: float) -> list[int]:
    """FORMAT.md's req[v][t] = ceil(demand * (1 + headroom) - 1e-9)."""
    return [math.ceil(d * (1 + headroom) - 1e-9) for d in demand]


def make_services(
    size: Size,
    rng: Rng,
    peak_share: float = 0.48,
    headroom: float = 0.1,
    shape: ShapeFn | None = None,
) -> list[InstanceData]:
    """Services on the one or two first pools, forecast peaks adding up to `peak_share` of GPUs.

    Demand follows `daily_cycle` unless `shape(size, rng, peak, k)` gives service k's series."""
    hosts = list(size.pools[: min(2, len(size.pools))])
    host_gpus = sum(p.nodes * p.gpus_per_node for p in hosts)
    fraction = min(0.7, peak_share * size.gpus / host_gpus)  # of each host pool, at the peak
    services: list[InstanceData] = []
    for k, pool in enumerate(hosts):
        count = len(range(k, size.services, len(hosts)))  # round-robin over the host pools
        shares = rng.dirichlet(np.full(count, 4.0))
        budget = fraction * pool.nodes * pool.gpus_per_node
        for share in shares:
            gpus = float(share) * budget
            sizes = [g for g in (1, 2, 4, 8) if pool.gpus_per_node % g == 0 and gpus / g >= 4]
            gpr = int(rng.choice(sizes or [1]))
            k_name = len(services)
            if shape is not None:
                demand = shape(size, rng, gpus / gpr, k_name)
            else:
                demand = daily_cycle(
                    size,
                    rng,
                    peak=gpus / gpr,
                    trough_ratio=float(rng.uniform(0.28, 0.38)),
                    peak_hour=float(rng.uniform(11, 15)),
                )
            services.append(
                {
                    "name": SERVICE_NAMES[k_name]
                    if k_name < len(SERVICE_NAMES)
                    else f"svc-{k_name}",
                    "pool": pool.name,
                    "gpus_per_replica": gpr,
                    "headroom": headroom,
                    "demand": demand,
                }
            )
    return services


def reservation(size: Size, services: list[InstanceData]) -> dict[str, IntArray]:
    """GPUs reserved for inference per pool and slot (req x gpus_per_replica)."""
    out = {p.name: np.zeros(size.slots, dtype=np.int64) for p in size.pools}
    for s in services:
        out[s["pool"]] += np.array(required(s["demand"], s["headroom"])) * s["gpus_per_replica"]
    return out
