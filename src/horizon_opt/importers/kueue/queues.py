"""Kueue's queues, as read: LocalQueues (which ClusterQueue a namespace's queue feeds) and
ClusterQueues (their GPU quota per ResourceFlavor, cohort, borrowing and lending limits).

The input is what `kubectl get localqueues -A -o yaml` and `kubectl get clusterqueues -o yaml`
write (or `-o json`): a List, a bare array or one object, `kueue.x-k8s.io` v1beta1 or v1beta2
(`apis/kueue/*/localqueue_types.go`, `clusterqueue_types.go`). The two versions differ here only
in the cohort's field: v1beta1 `spec.cohort`, v1beta2 `spec.cohortName`. A malformed field
raises InputError naming the file and its JSON path; what the importer makes of the queues is
in importers/kueue/teams.py.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from horizon_opt.errors import InputError
from horizon_opt.importers.kueue.kube import (
    Bad,
    at,
    items_of,
    list_at,
    object_at,
    object_of,
    read_objects,
    str_at,
    what,
)
from horizon_opt.importers.kueue.workload import whole_gpus
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


@dataclass(frozen=True)
class LocalQueue:
    namespace: str
    name: str
    cluster_queue: str
    path: str  # of its spec.clusterQueue


@dataclass(frozen=True)
class FlavorGpus:
    """One ResourceFlavor's GPU quota in a ClusterQueue: its GPU resources together."""

    flavor: str
    nominal: int
    borrowing: int | None  # None: some GPU resource of it has no borrowingLimit
    lending: int | None  # None: none of them has a lendingLimit
    path: str  # of the flavor in spec.resourceGroups


@dataclass(frozen=True)
class ClusterQueue:
    name: str
    path: str  # of the object
    cohort: str | None
    flavors: tuple[FlavorGpus, ...]  # those with a GPU resource


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
    if localqueues is not None:
        items = _items(localqueues, "LocalQueue", LOCALQUEUES, local_source, problems)
        local = _local_queues(items, local_source, problems)
        notes += [
            (f"{local_source}: apiVersion", n) for n in kueue_version_notes(i for _, i in items)
        ]
    if clusterqueues is not None:
        items = _items(clusterqueues, "ClusterQueue", CLUSTERQUEUES, cluster_source, problems)
        cluster = _cluster_queues(items, tuple(resources), cluster_source, problems)
        notes += [
            (f"{cluster_source}: apiVersion", n) for n in kueue_version_notes(i for _, i in items)
        ]
    if problems:
        raise InputError(problems)
    return Queues(local, cluster, local_source, cluster_source, tuple(notes))


def _items(
    payload: Any, kind: str, command: str, source: str, problems: list[str]
) -> list[tuple[str, Any]]:
    try:
        return items_of(payload, kind, command)
    except Bad as exc:
        problems.append(f"{source}: {exc}")
        return []


def _meta(item: Any, path: str, kind: str) -> tuple[dict[str, Any], str, str | None]:
    """The object at `path` (of `kind`), its name and namespace."""
    item = object_of(item, path or "(top level)")
    if item.get("kind") is not None and item.get("kind") != kind:
        raise Bad(at(path, "kind"), f"expected a {kind}, got {what(item.get('kind'))}")
    meta = object_at(item, "metadata", path, required=True)
    name = str_at(meta, "name", at(path, "metadata"), required=True)
    assert name is not None
    return item, name, str_at(meta, "namespace", at(path, "metadata")) or None


def _local_queues(
    items: Sequence[tuple[str, Any]], source: str, problems: list[str]
) -> dict[tuple[str, str], LocalQueue]:
    out: dict[tuple[str, str], LocalQueue] = {}
    for path, item in items:
        try:
            obj, name, namespace = _meta(item, path, "LocalQueue")
            spec = object_at(obj, "spec", path, required=True)
            where = at(at(path, "spec"), "clusterQueue")
            target = str_at(spec, "clusterQueue", at(path, "spec"), required=True)
            assert target is not None
            key = (namespace or "default", name)
            seen = out.get(key)
            if seen is not None and seen.cluster_queue != target:
                raise Bad(
                    where,
                    f"LocalQueue {'/'.join(key)} is also at {seen.path}, with ClusterQueue "
                    f"{seen.cluster_queue!r}, not {target!r}",
                )
            out.setdefault(key, LocalQueue(key[0], name, target, where))
        except Bad as exc:
            problems.append(f"{source}: {exc}")
    return out


def _cluster_queues(
    items: Sequence[tuple[str, Any]], resources: tuple[str, ...], source: str, problems: list[str]
) -> list[ClusterQueue]:
    out: dict[str, ClusterQueue] = {}
    for path, item in items:
        try:
            obj, name, _ = _meta(item, path, "ClusterQueue")
            if name in out:
                raise Bad(at(at(path, "metadata"), "name"), f"{name!r} is also {out[name].path}")
            spec = object_at(obj, "spec", path, required=True)
            spath = at(path, "spec")
            cohort = str_at(spec, "cohortName", spath) or str_at(spec, "cohort", spath) or None
            out[name] = ClusterQueue(
                name, path or "(top level)", cohort, _flavors(spec, spath, resources)
            )
        except Bad as exc:
            problems.append(f"{source}: {exc}")
    return list(out.values())


def _flavors(
    spec: Mapping[str, Any], spath: str, resources: tuple[str, ...]
) -> tuple[FlavorGpus, ...]:
    """The flavors of `spec.resourceGroups` that hold quota of a GPU resource."""
    out: list[FlavorGpus] = []
    for g, raw in enumerate(list_at(spec, "resourceGroups", spath)):
        gpath = f"{at(spath, 'resourceGroups')}[{g}]"
        group = object_of(raw, gpath)
        for f, raw_flavor in enumerate(list_at(group, "flavors", gpath, required=True)):
            fpath = f"{at(gpath, 'flavors')}[{f}]"
            flavor = object_of(raw_flavor, fpath)
            name = str_at(flavor, "name", fpath, required=True)
            assert name is not None
            nominal, gpu = 0, False
            borrowing: int | None = 0
            lending: int | None = None
            for r, raw_res in enumerate(list_at(flavor, "resources", fpath, required=True)):
                rpath = f"{at(fpath, 'resources')}[{r}]"
                res = object_of(raw_res, rpath)
                if str_at(res, "name", rpath, required=True) not in resources:
                    continue
                gpu = True
                if res.get("nominalQuota") is None:
                    raise Bad(at(rpath, "nominalQuota"), "required field is missing")
                nominal += whole_gpus(res["nominalQuota"], at(rpath, "nominalQuota"))
                borrow = _optional_gpus(res, "borrowingLimit", rpath)
                borrowing = None if borrowing is None or borrow is None else borrowing + borrow
                lend = _optional_gpus(res, "lendingLimit", rpath)
                lending = lending if lend is None else lend + (lending or 0)
            if gpu:
                out.append(FlavorGpus(name, nominal, borrowing, lending, fpath))
    return tuple(out)


def _optional_gpus(res: Mapping[str, Any], key: str, path: str) -> int | None:
    return None if res.get(key) is None else whole_gpus(res[key], at(path, key))
