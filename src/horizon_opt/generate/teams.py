"""Families `enterprise-teams` and `trace-teams`: the base family's instance, shared by teams.

The base family draws first, from the same generator, so the cluster, demand and jobs are
exactly those of `enterprise` (`trace`) with the same size and seed: a plan's pwo with and
without teams measures what the teams' limits cost. Then three teams are drawn: each job
belongs to one with the probabilities `WORK_SHARE`, while each pool's quotas split what
inference leaves free on average by `QUOTA_SHARE`, so the teams' work and their entitlement
differ and the quotas bind. Each limit is `LIMIT_FACTOR` times the quota, rounded up to whole
nodes. The trace records no user or virtual cluster, so its jobs' teams are drawn as well.
"""

from __future__ import annotations

import math
import os

import numpy as np

from horizon_opt.generate.aliases import InstanceData, Rng
from horizon_opt.generate.enterprise import enterprise
from horizon_opt.generate.sizes import Size
from horizon_opt.generate.trace import trace

TEAMS = ("research", "product", "data")
WORK_SHARE = (0.5, 0.3, 0.2)  # a job's chance to belong to each team
QUOTA_SHARE = (0.4, 0.35, 0.25)  # each team's part of a pool's free GPUs on average
LIMIT_FACTOR = 1.5  # a team's hard limit on a pool, times its quota there


def with_teams(data: InstanceData, rng: Rng) -> InstanceData:
    """`data` with `teams:` and every job's `team:` drawn from `rng`. A limit is never below
    the team's largest gang, so that no job is kept out by its limit alone."""
    free = _mean_free_gpus(data)
    drawn = rng.choice(len(TEAMS), size=len(data["jobs"]), p=WORK_SHARE)
    jobs = [{**job, "team": TEAMS[int(k)]} for job, k in zip(data["jobs"], drawn, strict=True)]
    teams: list[InstanceData] = []
    for name, share in zip(TEAMS, QUOTA_SHARE, strict=True):
        largest = max((j["gpus"] for j in jobs if j["team"] == name), default=0)
        quota, limit = {}, {}
        for pool in data["pools"]:
            g, total = pool["gpus_per_node"], pool["nodes"] * pool["gpus_per_node"]
            quota[pool["name"]] = q = int(share * free[pool["name"]])
            cap = max(q, largest, g * math.ceil(LIMIT_FACTOR * q / g))
            limit[pool["name"]] = min(total, cap)
        teams.append({"name": name, "quota": quota, "limit": limit})
    return {**data, "jobs": jobs, "teams": teams}


def _mean_free_gpus(data: InstanceData) -> dict[str, float]:
    """Per pool: its GPUs less the mean GPUs its services' forecast needs."""
    free = {p["name"]: float(p["nodes"] * p["gpus_per_node"]) for p in data["pools"]}
    for service in data["services"]:
        free[service["pool"]] -= float(np.mean(service["demand"])) * service["gpus_per_replica"]
    return {name: max(value, 0.0) for name, value in free.items()}


def enterprise_teams(
    name: str, size: Size, rng: Rng, *, traces: str | os.PathLike[str] | None = None
) -> InstanceData:
    """`enterprise`'s instance with three teams; see docs/generator.md."""
    return with_teams(enterprise(name, size, rng), rng)


def trace_teams(
    name: str, size: Size, rng: Rng, *, traces: str | os.PathLike[str] | None = None
) -> InstanceData:
    """`trace`'s instance with three teams; see docs/generator.md."""
    return with_teams(trace(name, size, rng, traces=traces), rng)
