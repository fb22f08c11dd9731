"""Kueue's queues, as read: LocalQueues (which ClusterQueue a namespace's queue feeds) and
ClusterQueues (their GPU quota per ResourceFlavor, cohort, borrowing and lending limits).

The input is what `kubectl get localqueues -A -o yaml` and `kubectl get clusterqueues -o yaml`
write (or `-o json`): a List, a bare array or one object, `kueue.x-k8s.io` v1beta1 or v1beta2
(`apis/kueue/*/localqueue_types.go`, `clusterqueue_types.go`), read as pydantic models (importers/kueue/kube.py). The two
versions differ here only in the cohort's field: v1beta1 `spec.cohort`, v1beta2
`spec.cohortName`. A malformed field raises InputError naming the file and its JSON path; what
the importer makes of the queues is in importers/kueue/teams.py.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from pydantic import Field, PrivateAttr, ValidationInfo, model_validator

from horizon_opt.errors import InputError, Loc
from horizon_opt.importers.kueue.kube import (
    KubeModel,
    KubeObject,
    Name,
    ObjectMeta,
    Text,
    items_of,
    listed,
    located,
    needed_list,
    parse_items,
    read_objects,
    required,
)
from horizon_opt.importers.kueue.workload import gpu_names, whole_gpus
from horizon_opt.importers.payload_model import checked, fail_at, json_path
from horizon_opt.schedulers.kueue import kueue_version_notes

__all__ = [
    "ClusterQueue",
    "FlavorGpus",
    "LocalQueue",
    "Queues",
    "read_clusterqueues",
    "read_localqueues",
    "read_queues",
]

LOCALQUEUES = "kubectl get localqueues -A -o yaml"
CLUSTERQUEUES = "kubectl get clusterqueues -o yaml"


class LocalQueueSpec(KubeModel):
    cluster_queue: Name


class LocalQueue(KubeObject):
    """Which ClusterQueue a namespace's queue feeds."""

    kind_name: ClassVar[str] = "LocalQueue"
    metadata: Annotated[ObjectMeta, required]
    spec: Annotated[LocalQueueSpec, required]

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or "default"

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def cluster_queue(self) -> str:
        return self.spec.cluster_queue

    @property
    def queue_path(self) -> str:
        """Where its spec.clusterQueue is."""
        return json_path((*self.loc, "spec", "clusterQueue"))


@dataclass(frozen=True)
class FlavorGpus:
    """One ResourceFlavor's GPU quota in a ClusterQueue: its GPU resources together."""

    flavor: str
    nominal: int
    borrowing: int | None  # None: some GPU resource of it has no borrowingLimit
    lending: int | None  # None: none of them has a lendingLimit
    path: str  # of the flavor in spec.resourceGroups


@dataclass(frozen=True)
class _Quota:
    nominal: int
    borrowing: int | None
    lending: int | None


class ResourceQuota(KubeModel):
    """One resource's quota in a flavor; `gpus`: read as whole GPUs when it is a GPU resource
    (the validation context's), None for any other (whose quantities are not read)."""

    name: Name
    nominal_quota: Any = None
    borrowing_limit: Any = None
    lending_limit: Any = None
    _gpus: _Quota | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _read_gpus(self, info: ValidationInfo) -> ResourceQuota:
        if self.name not in gpu_names(info):
            return self
        if self.nominal_quota is None:
            fail_at(("nominalQuota",), "required field is missing")
        nominal = checked(("nominalQuota",), whole_gpus, self.nominal_quota)
        limits = [
            None if value is None else checked((field,), whole_gpus, value)
            for field, value in (
                ("borrowingLimit", self.borrowing_limit),
                ("lendingLimit", self.lending_limit),
            )
        ]
        self._gpus = _Quota(nominal, *limits)
        return self

    @property
    def gpus(self) -> _Quota | None:
        return self._gpus


class FlavorQuotas(KubeModel):
    name: Name
    resources: Annotated[list[ResourceQuota], needed_list]


class ResourceGroup(KubeModel):
    flavors: Annotated[list[FlavorQuotas], needed_list]


class ClusterQueueSpec(KubeModel):
    cohort_name: Text = None
    cohort: Text = None
    resource_groups: Annotated[list[ResourceGroup], listed] = Field(default_factory=list)


class ClusterQueue(KubeObject):
    """A ClusterQueue: its cohort and GPU quota per ResourceFlavor."""

    kind_name: ClassVar[str] = "ClusterQueue"
    metadata: Annotated[ObjectMeta, required]
    spec: Annotated[ClusterQueueSpec, required]

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def cohort(self) -> str | None:
        return self.spec.cohort_name or self.spec.cohort or None

    @property
    def flavors(self) -> tuple[FlavorGpus, ...]:
        """The flavors of `spec.resourceGroups` that hold quota of a GPU resource."""
        out: list[FlavorGpus] = []
        for g, group in enumerate(self.spec.resource_groups):
            for f, flavor in enumerate(group.flavors):
                quotas = [r.gpus for r in flavor.resources if r.gpus is not None]
                if not quotas:
                    continue
                borrowing: int | None = 0
                lending: int | None = None
                for q in quotas:
                    if borrowing is not None:
                        borrowing = None if q.borrowing is None else borrowing + q.borrowing
                    if q.lending is not None:
                        lending = q.lending + (lending or 0)
                path = json_path((*self.loc, "spec", "resourceGroups", g, "flavors", f))
                nominal = sum(q.nominal for q in quotas)
                out.append(FlavorGpus(flavor.name, nominal, borrowing, lending, path))
        return tuple(out)


@dataclass(frozen=True)
class Queues:
    """What the optional queue files say; None: that file was not given."""

    local: dict[tuple[str, str], LocalQueue] | None = None  # (namespace, name) -> queue
    cluster: list[ClusterQueue] | None = None
    local_source: str = "localqueues"
    cluster_source: str = "clusterqueues"
    notes: tuple[tuple[str, str], ...] = ()  # (field, problem) about the files themselves


def read_localqueues(path: str | os.PathLike[str]) -> Any:
    """The parsed content of `kubectl get localqueues -A -o yaml` (or `-o json`)."""
    return read_objects(path, f"{LOCALQUEUES} output")


def read_clusterqueues(path: str | os.PathLike[str]) -> Any:
    """The parsed content of `kubectl get clusterqueues -o yaml` (or `-o json`)."""
    return read_objects(path, f"{CLUSTERQUEUES} output")


def read_queues(
    localqueues: Any | None,
    clusterqueues: Any | None,
    resources: Sequence[str],
    local_source: str = "localqueues",
    cluster_source: str = "clusterqueues",
) -> Queues:
    """The parsed queue payloads (None: not given) as `Queues`, GPUs counted from `resources`;
    InputError lists every malformed object, each with its file and JSON path."""
    problems: list[str] = []
    notes: list[tuple[str, str]] = []
    local = cluster = None
    context = {"resources": tuple(resources)}
    if localqueues is not None:
        items = _items(localqueues, "LocalQueue", LOCALQUEUES, local_source, problems)
        locals_, bad = parse_items(LocalQueue, items, local_source, context)
        local = _local_queues(locals_, local_source, bad)
        problems += bad
        notes += [
            (f"{local_source}: apiVersion", n) for n in kueue_version_notes(i for _, i in items)
        ]
    if clusterqueues is not None:
        items = _items(clusterqueues, "ClusterQueue", CLUSTERQUEUES, cluster_source, problems)
        clusters, bad = parse_items(ClusterQueue, items, cluster_source, context)
        cluster = _cluster_queues(clusters, cluster_source, bad)
        problems += bad
        notes += [
            (f"{cluster_source}: apiVersion", n) for n in kueue_version_notes(i for _, i in items)
        ]
    if problems:
        raise InputError(problems)
    return Queues(local, cluster, local_source, cluster_source, tuple(notes))


def _items(
    payload: Any, kind: str, command: str, source: str, problems: list[str]
) -> list[tuple[Loc, Any]]:
    try:
        return items_of(payload, kind, command)
    except InputError as exc:
        problems += [f"{source}: {p}" for p in exc.problems]
        return []


def _local_queues(
    queues: Sequence[LocalQueue], source: str, problems: list[str]
) -> dict[tuple[str, str], LocalQueue]:
    """By (namespace, name); the same LocalQueue twice must feed the same ClusterQueue."""
    out: dict[tuple[str, str], LocalQueue] = {}
    for q in queues:
        key = (q.namespace, q.name)
        seen = out.setdefault(key, q)
        if seen.cluster_queue != q.cluster_queue:
            problem = located(
                (*q.loc, "spec", "clusterQueue"),
                f"LocalQueue {'/'.join(key)} is also at {seen.queue_path}, with ClusterQueue "
                f"{seen.cluster_queue!r}, not {q.cluster_queue!r}",
            )
            problems.append(f"{source}: {problem}")
    return out


def _cluster_queues(
    queues: Sequence[ClusterQueue], source: str, problems: list[str]
) -> list[ClusterQueue]:
    """Each name once."""
    out: dict[str, ClusterQueue] = {}
    for cq in queues:
        if cq.name in out:
            where = (*cq.loc, "metadata", "name")
            problem = located(where, f"{cq.name!r} is also {out[cq.name].path}")
            problems.append(f"{source}: {problem}")
            continue
        out[cq.name] = cq
    return list(out.values())
