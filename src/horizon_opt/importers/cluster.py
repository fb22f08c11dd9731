"""The cluster file: what a scheduler's queue does not say, written once by the platform team.

A queue export (Slurm, Kueue, a CSV table) lists jobs; the planner also needs the pools (how
many nodes of how many GPUs, and which partitions, node names or resource flavors map to each),
the inference services with their forecast, outages, and the horizon. Every importer reads the
same cluster file and writes an instance file (FORMAT.md) around the jobs it maps.

A pool's `node_names` become the instance's `node_names`, so plans name the hosts the scheduler
knows; an outage may name a node by its host name or by `<pool>-<i>`.

```yaml
horizon: {slots: 168, slot_minutes: 60}   # start: the snapshot's time (default: its slot)
pools:
  - name: h100
    gpu_type: H100-80GB
    nodes: 8
    gpus_per_node: 8
    partitions: [gpu-h100]                # Slurm partitions that run on this pool
    node_names: [gpu-h100-01, gpu-h100-02] # scheduler host names, in the pool's node order
                                          # (the instance's node_names; nodes left unnamed
                                          # are <pool>-<i>: h100-2 .. h100-7)
    flavors: [h100-flavor]                # Kueue ResourceFlavors of this pool
services: []                               # as in the instance file
outages: []                                # as in the instance file
teams:                                     # optional: as the instance's teams (FORMAT.md), and
  - name: research                         # which scheduler names belong to each
    quota: {h100: 16}
    limit: {h100: 24}
    accounts: [ml, ml-eval]               # Slurm accounts of the team (default: its name)
    queues: [research-cq]                 # Kueue ClusterQueues of the team (default: its name)
```

The teams are copied into the instance without `accounts` and `queues`: those say which team a
job belongs to, which only the importer needs to know.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from horizon_opt.errors import InputError
from horizon_opt.importers.draft import JobDraft
from horizon_opt.io import read_yaml, validation_problems
from horizon_opt.model.node_names import name_problems
from horizon_opt.model.spec import (
    MAX_GPUS_PER_NODE,
    MAX_NODES,
    MAX_SLOT_MINUTES,
    MAX_SLOTS,
    HostName,
    Name,
    OutageSpec,
    ServiceSpec,
    TeamSpec,
    default_node_name,
)
from horizon_opt.model.teams import compile_teams
from horizon_opt.times import iso, parse_time

SchedulerName = Annotated[str, Field(min_length=1)]


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
    open_end: bool = Field(
        default=False,
        description="The instance's horizon.open_end: running jobs are placed until their end "
        "and pending ones of any length are planned, past the horizon (FORMAT.md, Open end).",
    )


class ClusterPool(_Model):
    name: Name
    gpu_type: str
    nodes: int = Field(ge=1, le=MAX_NODES)
    gpus_per_node: int = Field(ge=1, le=MAX_GPUS_PER_NODE)
    partitions: list[str] = Field(default_factory=list, description="Slurm partitions.")
    node_names: list[HostName] = Field(
        default_factory=list,
        description="Scheduler host names of the pool's first nodes, in node order; the "
        "instance names its nodes by them (nodes left unnamed: <pool>-<i>).",
    )
    flavors: list[str] = Field(default_factory=list, description="Kueue ResourceFlavors.")

    def instance_names(self) -> list[str]:
        """The instance's node names of the pool, in node order: its host names, then
        `<pool>-<i>` for the nodes the cluster file leaves unnamed."""
        given = self.node_names[: self.nodes]
        return [*given, *(default_node_name(self.name, i) for i in range(len(given), self.nodes))]


class ClusterTeam(TeamSpec):
    """A team of the instance (its per-pool keys are the cluster file's pools), and the
    scheduler's names of it, which stay in the cluster file."""

    accounts: list[SchedulerName] = Field(
        default_factory=list, description="Slurm accounts of the team (default: its name)."
    )
    queues: list[SchedulerName] = Field(
        default_factory=list, description="Kueue ClusterQueues of the team (default: its name)."
    )


class ClusterFile(_Model):
    name: str | None = Field(default=None, description="Instance name (default: the source).")
    horizon: ClusterHorizon
    pools: list[ClusterPool] = Field(min_length=1)
    services: list[ServiceSpec] = Field(default_factory=list)
    outages: list[OutageSpec] = Field(default_factory=list)
    teams: list[ClusterTeam] = Field(default_factory=list)
    # The cluster file's folder: its services' demand CSV paths are relative to it.
    _folder: Path = PrivateAttr(default=Path("."))

    @property
    def folder(self) -> Path:
        return self._folder

    def host_nodes(self) -> dict[str, str]:
        """Scheduler host name -> instance node name: the host name itself, since the instance
        names a pool's nodes by its `node_names`. Only named hosts are in it: a job on a host
        the cluster file does not name cannot be held."""
        return {host: host for pool in self.pools for host in pool.node_names}

    def node_pools(self) -> dict[str, ClusterPool]:
        """Instance node name -> its pool, for every node (named or not)."""
        return {name: pool for pool in self.pools for name in pool.instance_names()}

    def node_aliases(self) -> dict[str, str]:
        """Every name a cluster file or a table may give a node -> its instance name: its host
        name, or `<pool>-<i>` (a host name wins where it is another node's `<pool>-<i>`)."""
        out = {
            default_node_name(p.name, i): name
            for p in self.pools
            for i, name in enumerate(p.instance_names())
        }
        out.update((host, host) for p in self.pools for host in p.node_names)
        return out

    def instance_outages(self) -> list[OutageSpec]:
        """The outages with the instance's node names: `<pool>-<i>` of a node with a host name
        becomes that name."""
        aliases = self.node_aliases()
        return [
            o.model_copy(update={"node": aliases[o.node]}) if o.node in aliases else o
            for o in self.outages
        ]

    def name_problems(self) -> list[str]:
        """`node_names` that cannot name the instance's nodes, with their cluster file field:
        more names than nodes, a name given twice or that another node has (an unnamed node's
        `<pool>-<i>`, in its own pool or another)."""
        problems = [
            f"pools[{k}].node_names: {len(p.node_names)} names for {p.nodes} nodes"
            for k, p in enumerate(self.pools)
            if len(p.node_names) > p.nodes
        ]
        if problems:
            return problems
        where: dict[str, str] = {}  # a host name -> the field that names it first
        for k, p in enumerate(self.pools):
            for i, host in enumerate(p.node_names):
                where.setdefault(host, f"pools[{k}].node_names[{i}]")
        for p in self.pools:
            if not p.node_names:
                continue  # its <pool>-<i> are checked below, against the host names
            for i in range(len(p.node_names), p.nodes):
                name = default_node_name(p.name, i)
                if name in where:
                    problems.append(
                        f"{where[name]}: {name!r} is also the name of pool {p.name}'s node {i}, "
                        "which node_names leaves unnamed (unnamed nodes are <pool>-<i>): "
                        f"name every node of {p.name}, or rename this host"
                    )
        pools = [
            (p.name, p.nodes, p.instance_names() if p.node_names else None) for p in self.pools
        ]
        return problems or name_problems(pools)

    def team_problems(self) -> list[str]:
        """Teams the instance would refuse (an unknown pool, a limit below the quota, a name
        twice), and an account or ClusterQueue that two teams claim, with their fields."""
        problems: list[str] = []

        def error(path: str, message: str) -> None:
            problems.append(f"{path}: {message}")

        compile_teams(self.teams, {p.name: k for k, p in enumerate(self.pools)}, error)
        for by in ("accounts", "queues"):
            where: dict[str, str] = {}  # an account or queue -> the field that lists it first
            for k, team in enumerate(self.teams):
                for i, key in enumerate(getattr(team, by)):
                    first = where.setdefault(key, f"teams[{k}].{by}[{i}]")
                    if not first.startswith(f"teams[{k}]."):
                        error(
                            f"teams[{k}].{by}[{i}]",
                            f"{key!r} is also listed by {first}: it belongs to one team",
                        )
        return problems

    def team_of(
        self, key: str, by: Literal["accounts", "queues"], name: str | None = None
    ) -> str | None:
        """The team a Slurm account or a ClusterQueue (`key`) belongs to: the one whose `by`
        lists it, else the one called `name` (default: `key`); None when neither is."""
        listed = next((t.name for t in self.teams if key in getattr(t, by)), None)
        wanted = key if name is None else name
        return listed or next((t.name for t in self.teams if t.name == wanted), None)

    def instance_teams(self) -> list[dict[str, Any]]:
        """The teams as the instance writes them: without the scheduler's names."""
        return [
            t.model_dump(mode="json", exclude={"accounts", "queues"}, exclude_defaults=True)
            for t in self.teams
        ]


def read_cluster(path: str | os.PathLike[str]) -> ClusterFile:
    """Read and validate a cluster file; problems raise InputError, one line per field."""
    data = read_yaml(path, InputError)
    try:
        cluster = ClusterFile.model_validate(data)
    except ValidationError as exc:
        raise InputError([f"{path}: {p}" for p in validation_problems(exc)]) from None
    problems = cluster.name_problems() + cluster.team_problems()
    if problems:
        raise InputError([f"{path}: {p}" for p in problems])
    cluster._folder = Path(path).parent
    return cluster


def horizon_start(cluster: ClusterFile, snapshot: datetime) -> datetime:
    """Slot 0: the cluster file's start, or one slot before the snapshot's slot."""
    if cluster.horizon.start is not None:
        start = cluster.horizon.start
        return start if start.tzinfo is not None else start.replace(tzinfo=UTC)
    step = timedelta(minutes=cluster.horizon.slot_minutes)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    return epoch + ((snapshot - epoch) // step) * step - step


def outages_after_running(
    cluster: ClusterFile,
    running: list[tuple[str, set[str], datetime, datetime]],
    at: Callable[[int], datetime],
    slot_end: Callable[[datetime], datetime],
) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The cluster file's outages with each one that overlaps a running job on its node moved
    to start when the job ends (a drained node keeps running its jobs; a running job holds its
    GPUs until its limit, always), dropped if it ends by then. `running`: (job, its nodes, start,
    end); `at`: a slot's time; `slot_end`: a time rounded up to a slot boundary. Returns the
    outages for the instance and (job, note) pairs."""
    out: list[dict[str, Any]] = []
    notes: list[tuple[str, str]] = []
    for o in cluster.instance_outages():
        start, end = (at(t) if isinstance(t, int) else _when(t) for t in (o.start, o.end))
        for job, nodes, began, ends in running:
            if o.node in nodes and began < end and start < ends:
                after = slot_end(ends)
                notes.append(
                    (
                        job,
                        f"runs on {o.node}, down from {iso(start)} in the cluster file: the "
                        f"outage starts after it ends, at {iso(after)}",
                    )
                )
                start = max(start, after)
        if start < end:
            out.append({"node": o.node, "start": iso(start), "end": iso(end)})
    return out, notes


def _when(text: str) -> datetime:
    when = parse_time(text)
    if when is None:
        raise InputError([f"the cluster file: outages: not a time: {text!r}"])
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def check_snapshot(cluster: ClusterFile, snapshot: datetime, what: str) -> None:
    """Refuse a snapshot whose horizon (at its longest, with an open end) would end past the
    last date Python's datetime holds, naming where the snapshot came from."""
    step = timedelta(minutes=cluster.horizon.slot_minutes)
    try:
        horizon_start(cluster, snapshot) + (MAX_SLOTS + 1) * step
    except OverflowError:
        raise InputError(
            [f"{what}: {iso(snapshot)} is too late: the horizon from it would end after 9999"]
        ) from None


def instance_document(
    cluster: ClusterFile,
    name: str,
    snapshot: datetime,
    jobs: list[JobDraft],
    teams: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The instance file's content: the cluster around the imported `jobs`, with `now` at the
    snapshot (rounded up to a slot, as FORMAT.md rounds `now`). A pool whose hosts the cluster
    file names gets `node_names`, every node's: host names, then `<pool>-<i>`. `teams`: the
    instance's teams (default: the cluster file's); none, no `teams` field."""
    problems = cluster.name_problems() + cluster.team_problems()
    if problems:
        raise InputError([f"the cluster file: {p}" for p in problems])
    teams = cluster.instance_teams() if teams is None else teams
    start = horizon_start(cluster, snapshot)
    return {
        "name": cluster.name or name,
        "horizon": {
            "slots": cluster.horizon.slots,
            "slot_minutes": cluster.horizon.slot_minutes,
            "start": iso(start),
        }
        | ({"open_end": True} if cluster.horizon.open_end else {}),
        "now": iso(snapshot),
        "pools": [
            {
                "name": p.name,
                "gpu_type": p.gpu_type,
                "nodes": p.nodes,
                "gpus_per_node": p.gpus_per_node,
            }
            | ({"node_names": p.instance_names()} if p.node_names else {})
            for p in cluster.pools
        ],
        "outages": [o.model_dump(mode="json") for o in cluster.instance_outages()],
        "services": [s.model_dump(mode="json", exclude_defaults=True) for s in cluster.services],
        "jobs": jobs,
    } | ({"teams": teams} if teams else {})
