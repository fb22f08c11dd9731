"""The cluster file: what a scheduler's queue does not say, written once by the platform team.

A queue export (Slurm, Kueue, a CSV table) lists jobs; the planner also needs the pools (how
many nodes of how many GPUs, and which partitions, node names or resource flavors map to each),
the inference services with their forecast, outages, and the horizon. Every importer reads the
same cluster file and writes an instance file (FORMAT.md) around the jobs it maps.

```yaml
horizon: {slots: 168, slot_minutes: 60}   # start: the snapshot's time (default: its slot)
pools:
  - name: h100
    gpu_type: H100-80GB
    nodes: 8
    gpus_per_node: 8
    partitions: [gpu-h100]                # Slurm partitions that run on this pool
    node_names: [gpu-h100-01, gpu-h100-02] # scheduler host names, in the pool's node order
    flavors: [h100-flavor]                # Kueue ResourceFlavors of this pool
services: []                               # as in the instance file
outages: []                                # as in the instance file
```
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from horizon_opt.errors import InputError
from horizon_opt.io import read_yaml, validation_problems
from horizon_opt.spec import (
    MAX_GPUS_PER_NODE,
    MAX_NODES,
    MAX_SLOT_MINUTES,
    MAX_SLOTS,
    Name,
    OutageSpec,
    ServiceSpec,
)
from horizon_opt.times import iso


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ClusterHorizon(_Model):
    slots: int = Field(ge=2, le=MAX_SLOTS, description="Slots S of the planned horizon.")
    slot_minutes: int = Field(default=60, ge=1, le=MAX_SLOT_MINUTES)
    start: datetime | None = Field(
        default=None,
        description="Wall-clock time of slot 0; default: one slot before the snapshot, so that "
        "the snapshot's slot is `now` and jobs running then are placed before it.",
    )


class ClusterPool(_Model):
    name: Name
    gpu_type: str
    nodes: int = Field(ge=1, le=MAX_NODES)
    gpus_per_node: int = Field(ge=1, le=MAX_GPUS_PER_NODE)
    partitions: list[str] = Field(default_factory=list, description="Slurm partitions.")
    node_names: list[str] = Field(
        default_factory=list,
        description="Scheduler host names of the pool's nodes, in node order (<pool>-0 first).",
    )
    flavors: list[str] = Field(default_factory=list, description="Kueue ResourceFlavors.")


class ClusterFile(_Model):
    name: str | None = Field(default=None, description="Instance name (default: the source).")
    horizon: ClusterHorizon
    pools: list[ClusterPool] = Field(min_length=1)
    services: list[ServiceSpec] = Field(default_factory=list)
    outages: list[OutageSpec] = Field(default_factory=list)

    def host_nodes(self) -> dict[str, str]:
        """Scheduler host name -> instance node name (`<pool>-<i>`)."""
        return {
            host: f"{pool.name}-{i}"
            for pool in self.pools
            for i, host in enumerate(pool.node_names)
        }


def read_cluster(path: str | os.PathLike[str]) -> ClusterFile:
    """Read and validate a cluster file; problems raise InputError, one line per field."""
    data = read_yaml(path, InputError)
    try:
        cluster = ClusterFile.model_validate(data)
    except ValidationError as exc:
        raise InputError([f"{path}: {p}" for p in validation_problems(exc)]) from None
    problems = [
        f"{path}: pools[{k}].node_names: {len(p.node_names)} names for {p.nodes} nodes"
        for k, p in enumerate(cluster.pools)
        if len(p.node_names) > p.nodes
    ]
    if problems:
        raise InputError(problems)
    return cluster


def horizon_start(cluster: ClusterFile, snapshot: datetime) -> datetime:
    """Slot 0: the cluster file's start, or one slot before the snapshot's slot."""
    if cluster.horizon.start is not None:
        start = cluster.horizon.start
        return start if start.tzinfo is not None else start.replace(tzinfo=UTC)
    step = timedelta(minutes=cluster.horizon.slot_minutes)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    return epoch + ((snapshot - epoch) // step) * step - step


def instance_document(
    cluster: ClusterFile,
    name: str,
    snapshot: datetime,
    jobs: list[dict[str, Any]],
) -> dict[str, Any]:
    """The instance file's content: the cluster around the imported `jobs`, with `now` at the
    snapshot (rounded up to a slot, as FORMAT.md rounds `now`)."""
    start = horizon_start(cluster, snapshot)
    return {
        "name": cluster.name or name,
        "horizon": {
            "slots": cluster.horizon.slots,
            "slot_minutes": cluster.horizon.slot_minutes,
            "start": iso(start),
        },
        "now": iso(snapshot),
        "pools": [
            {
                "name": p.name,
                "gpu_type": p.gpu_type,
                "nodes": p.nodes,
                "gpus_per_node": p.gpus_per_node,
            }
            for p in cluster.pools
        ],
        "outages": [o.model_dump(mode="json") for o in cluster.outages],
        "services": [s.model_dump(mode="json", exclude_defaults=True) for s in cluster.services],
        "jobs": jobs,
    }
