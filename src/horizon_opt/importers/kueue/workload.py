"""A Kueue Workload, parsed: its pod sets (pods, GPUs per pod, time limit, pinned hosts), the
conditions Kueue set, and the admission (flavors, admitted pods, topology, charged GPUs).

`workload_items` finds the Workloads in what `kubectl get workloads -A -o json` (or `-o yaml`)
writes, `parse_workload` reads one, `gpu_quantity` reads a Kubernetes quantity as whole GPUs.
A malformed field raises Bad (importers/kueue/kube.py) naming its JSON path
(`items[2].spec.podSets[0].count: expected an integer, got '3'`); what the importer makes of a
Workload is the table in importers/kueue/importer.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from horizon_opt.errors import InputError
from horizon_opt.importers.kueue.kube import Bad as _Bad
from horizon_opt.importers.kueue.kube import at as _at
from horizon_opt.importers.kueue.kube import bool_at as _bool_at
from horizon_opt.importers.kueue.kube import int_at as _int_at
from horizon_opt.importers.kueue.kube import items_of as _items_of
from horizon_opt.importers.kueue.kube import list_at as _list_at
from horizon_opt.importers.kueue.kube import object_at as _object_at
from horizon_opt.importers.kueue.kube import object_of as _object
from horizon_opt.importers.kueue.kube import str_at as _str_at
from horizon_opt.importers.kueue.kube import str_map_at as _str_map_at
from horizon_opt.importers.kueue.kube import timestamp as _timestamp
from horizon_opt.importers.kueue.kube import what as _what
from horizon_opt.importers.kueue.topology import HOSTNAME_LEVEL, topology_hosts
from horizon_opt.model.spec import show

__all__ = [
    "Workload",
    "gpu_quantity",
    "job_hosts",
    "parse_workload",
    "whole_gpus",
    "workload_items",
]

_INT32 = 2**31 - 1
_MAX_QUANTITY = Decimal(10**9)  # more GPUs than any pod could hold: refused, not computed with
_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]{1,3})?$"
)
_SUFFIX = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
    **{s: Decimal(2 ** (10 * (i + 1))) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
}


def gpu_quantity(value: Any, path: str = "") -> int:
    """A whole number of GPUs from a Kubernetes quantity: `"8"`, `8`, `"1k"`, `"2e0"`.

    Raises InputError naming `path` when it is not a quantity, not whole, negative or huge."""
    try:
        return whole_gpus(value, path)
    except _Bad as exc:
        raise InputError([str(exc)]) from None


def whole_gpus(value: Any, path: str) -> int:
    """`gpu_quantity` for readers that collect problems: Bad naming `path`."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise _Bad(path, f'expected a quantity such as "8", got {_what(value)}')
    match = _QUANTITY.match(str(value).strip())
    if match is None:
        raise _Bad(path, f"not a Kubernetes quantity: {show(value)}")
    number, suffix = match.group(1), match.group(2) or ""
    try:
        amount = Decimal(number)
        if len(suffix) > 1 and suffix[0] in "eE":  # an exponent; a lone E is exa
            amount = amount.scaleb(int(suffix[1:]))
        else:
            amount *= _SUFFIX[suffix]
    except (InvalidOperation, ValueError):  # pragma: no cover - the pattern admits only numbers
        raise _Bad(path, f"not a Kubernetes quantity: {show(value)}") from None
    if amount < 0:
        raise _Bad(path, f"must not be negative, got {show(value)}")
    if amount > _MAX_QUANTITY:
        raise _Bad(path, f"more than {_MAX_QUANTITY:,} GPUs: {show(value)}")
    if amount != amount.to_integral_value():
        raise _Bad(path, f"expected a whole number of GPUs, got {show(value)}")
    return int(amount)


@dataclass(frozen=True)
class _PodSet:
    name: str
    count: int
    gpus: int  # per pod
    deadline: int | None  # activeDeadlineSeconds
    annotations: dict[str, str]
    pinned: tuple[str, ...] = ()  # hosts its pods must run on (nodeSelector or node affinity)


@dataclass(frozen=True)
class _Assignment:
    flavors: dict[str, str]
    count: int | None
    hosts: dict[str, int] | None  # topology assignment by hostname: host -> pods
    usage: int | None = None  # GPUs of the pod set its quota was charged (resourceUsage)


@dataclass(frozen=True)
class _Condition:
    status: str
    reason: str
    message: str
    time: str | None
    path: str

    @property
    def true(self) -> bool:
        return self.status == "True"

    def why(self) -> str:
        text = self.reason or "no reason given"
        return f"{text}: {self.message}" if self.message else text


@dataclass(frozen=True)
class Workload:
    """One Workload as read; importers/kueue/importer.py's table says what becomes of each field."""

    index: int
    path: str
    id: str
    namespace: str | None
    queue: str | None
    created: datetime | None
    priority: int
    active: bool
    max_exec: int | None
    accumulated: int
    annotations: dict[str, str]  # the Workload's, then its pod sets' (the first that has a key)
    annotation_paths: dict[str, str]
    podsets: list[_PodSet]
    conditions: dict[str, _Condition]
    assignments: dict[str, _Assignment] | None  # None: Kueue has not reserved quota
    uncounted: tuple[str, ...]  # GPU-like resources it asks for that are not counted
    deleting: str | None = None  # metadata.deletionTimestamp: being deleted
    cluster_queue: str | None = None  # status.admission.clusterQueue: the one that admitted it

    def condition(self, kind: str) -> _Condition | None:
        return self.conditions.get(kind)

    def is_true(self, kind: str) -> bool:
        cond = self.conditions.get(kind)
        return cond is not None and cond.true

    def counts(self) -> dict[str, int]:
        """Pods of each pod set: as admitted, when Kueue says how many."""
        out = {}
        for ps in self.podsets:
            given = (self.assignments or {}).get(ps.name)
            out[ps.name] = (
                given.count if given is not None and given.count is not None else ps.count
            )
        return out


def _pod_gpus(
    spec: Mapping[str, Any], path: str, resources: Sequence[str], uncounted: set[str]
) -> int:
    """A pod's GPUs: its containers' sum, or an init container's when more (Kubernetes' rule)."""

    def container(c: Any, cpath: str) -> int:
        c = _object(c, cpath)
        res = _object_at(c, "resources", cpath)
        rpath = _at(cpath, "resources")
        requests = _object_at(res, "requests", rpath)
        limits = _object_at(res, "limits", rpath)
        total = 0
        for name in resources:
            if requests.get(name) is not None:
                total += whole_gpus(requests[name], _at(_at(rpath, "requests"), name))
            elif limits.get(name) is not None:
                total += whole_gpus(limits[name], _at(_at(rpath, "limits"), name))
        for name in (*requests, *limits):
            low = name.lower()
            if name not in resources and "/" in name and ("gpu" in low or "/mig-" in low):
                uncounted.add(name)
        return total

    main = sum(
        container(c, f"{_at(path, 'containers')}[{i}]")
        for i, c in enumerate(_list_at(spec, "containers", path))
    )
    init = [
        container(c, f"{_at(path, 'initContainers')}[{i}]")
        for i, c in enumerate(_list_at(spec, "initContainers", path))
    ]
    return max([main, *init])


def parse_workload(item: Any, index: int, path: str, resources: Sequence[str]) -> Workload:
    """The Workload at `path` (`index` in the payload), its GPUs counted from `resources`; a
    malformed field raises Bad naming its path."""
    item = _object(item, path or "(top level)")
    kind = item.get("kind")
    if kind is not None and kind != "Workload":
        raise _Bad(_at(path, "kind"), f"expected a Workload, got {_what(kind)}")
    meta = _object_at(item, "metadata", path, required=True)
    mpath = _at(path, "metadata")
    name = _str_at(meta, "name", mpath, required=True)
    namespace = _str_at(meta, "namespace", mpath) or None
    created_text = _str_at(meta, "creationTimestamp", mpath)
    created = (
        _timestamp(created_text, _at(mpath, "creationTimestamp"))
        if created_text is not None
        else None
    )
    annotations = _str_map_at(meta, "annotations", mpath)
    annotation_paths = {k: _at(_at(mpath, "annotations"), k) for k in annotations}
    deleting = _str_at(meta, "deletionTimestamp", mpath)

    spec = _object_at(item, "spec", path, required=True)
    spath = _at(path, "spec")
    uncounted: set[str] = set()
    podsets = _podsets(spec, spath, resources, annotations, annotation_paths, uncounted)
    priority = _int_at(spec, "priority", spath, lo=-(2**31), hi=_INT32)
    active = _bool_at(spec, "active", spath)
    max_exec = _int_at(spec, "maximumExecutionTimeSeconds", spath, lo=0, hi=_INT32)
    queue = _str_at(spec, "queueName", spath) or None

    status = _object_at(item, "status", path)
    stpath = _at(path, "status")
    accumulated = 0
    for key in ("accumulatedPastExexcutionTimeSeconds", "accumulatedPastExecutionTimeSeconds"):
        accumulated = _int_at(status, key, stpath, lo=0, hi=_INT32) or accumulated
    conditions = _conditions(status, stpath)
    assignments = _assignments(status, stpath, [p.name for p in podsets], resources)
    admission = _object_at(status, "admission", stpath)
    cluster_queue = _str_at(admission, "clusterQueue", _at(stpath, "admission")) or None
    return Workload(
        index=index,
        path=path,
        id=f"{namespace or 'default'}/{name}",
        namespace=namespace,
        queue=queue,
        created=created,
        priority=priority or 0,
        active=active is not False,
        max_exec=max_exec,
        accumulated=accumulated,
        annotations=annotations,
        annotation_paths=annotation_paths,
        podsets=podsets,
        conditions=conditions,
        assignments=assignments,
        uncounted=tuple(sorted(uncounted)),
        deleting=deleting,
        cluster_queue=cluster_queue,
    )


def _podsets(
    spec: Mapping[str, Any],
    spath: str,
    resources: Sequence[str],
    annotations: dict[str, str],
    annotation_paths: dict[str, str],
    uncounted: set[str],
) -> list[_PodSet]:
    """`spec.podSets`, at least one, names unique. A pod template's annotations join the
    Workload's where it has no such key (`annotations`, `annotation_paths` grow); GPU-like
    resources that are not counted go into `uncounted`."""
    podsets: list[_PodSet] = []
    raw_sets = _list_at(spec, "podSets", spath, required=True)
    if not raw_sets:
        raise _Bad(_at(spath, "podSets"), "expected at least one pod set")
    for k, raw in enumerate(raw_sets):
        ppath = f"{_at(spath, 'podSets')}[{k}]"
        ps = _object(raw, ppath)
        ps_name = _str_at(ps, "name", ppath) or "main"
        count = _int_at(ps, "count", ppath, lo=0, hi=_INT32, required=True)
        assert count is not None
        template = _object_at(ps, "template", ppath, required=True)
        tpath = _at(ppath, "template")
        tmeta = _object_at(template, "metadata", tpath)
        tann = _str_map_at(tmeta, "annotations", _at(tpath, "metadata"))
        for key, value in tann.items():
            if key not in annotations:
                annotations[key] = value
                annotation_paths[key] = _at(_at(_at(tpath, "metadata"), "annotations"), key)
        pod = _object_at(template, "spec", tpath, required=True)
        podpath = _at(tpath, "spec")
        podsets.append(
            _PodSet(
                ps_name,
                count,
                _pod_gpus(pod, podpath, resources, uncounted),
                _int_at(pod, "activeDeadlineSeconds", podpath, lo=1, hi=2**63 - 1),
                tann,
                _pinned_hosts(pod, podpath),
            )
        )
    names = [p.name for p in podsets]
    if len(set(names)) != len(names):
        raise _Bad(_at(spath, "podSets"), f"pod set names are not unique: {show(names)}")
    return podsets


def _conditions(status: Mapping[str, Any], stpath: str) -> dict[str, _Condition]:
    """`status.conditions` by type (a later one of a type wins)."""
    conditions: dict[str, _Condition] = {}
    for c, raw in enumerate(_list_at(status, "conditions", stpath)):
        cpath = f"{_at(stpath, 'conditions')}[{c}]"
        cond = _object(raw, cpath)
        ctype = _str_at(cond, "type", cpath, required=True)
        cstatus = _str_at(cond, "status", cpath, required=True)
        assert ctype is not None and cstatus is not None
        conditions[ctype] = _Condition(
            cstatus,
            _str_at(cond, "reason", cpath) or "",
            (_str_at(cond, "message", cpath) or "").strip(),
            _str_at(cond, "lastTransitionTime", cpath),
            cpath,
        )
    return conditions


def _assignments(
    status: Mapping[str, Any], stpath: str, names: list[str], resources: Sequence[str]
) -> dict[str, _Assignment] | None:
    """`status.admission.podSetAssignments` by pod set name (each must name one of `names`),
    or None when Kueue has not reserved quota."""
    if status.get("admission") is None:
        return None
    admission = _object_at(status, "admission", stpath)
    apath = _at(stpath, "admission")
    assignments: dict[str, _Assignment] = {}
    for a, raw in enumerate(_list_at(admission, "podSetAssignments", apath, required=True)):
        aspath = f"{_at(apath, 'podSetAssignments')}[{a}]"
        asg = _object(raw, aspath)
        a_name = _str_at(asg, "name", aspath) or "main"
        if a_name not in names:
            raise _Bad(_at(aspath, "name"), f"no pod set {a_name!r} in spec.podSets")
        upath = _at(aspath, "resourceUsage")
        usage = _object_at(asg, "resourceUsage", aspath)
        charged = [whole_gpus(usage[r], _at(upath, r)) for r in resources if r in usage]
        assignments[a_name] = _Assignment(
            _str_map_at(asg, "flavors", aspath),
            _int_at(asg, "count", aspath, lo=0, hi=_INT32),
            topology_hosts(asg.get("topologyAssignment"), _at(aspath, "topologyAssignment")),
            sum(charged) if charged else None,
        )
    return assignments


def _pinned_hosts(pod: Mapping[str, Any], path: str) -> tuple[str, ...]:
    """The hosts a pod must run on: its nodeSelector's `kubernetes.io/hostname`, or the values
    of a required node affinity `kubernetes.io/hostname In [...]` (when every term says so)."""
    selector = _str_map_at(pod, "nodeSelector", path)
    if HOSTNAME_LEVEL in selector:
        return (selector[HOSTNAME_LEVEL],)
    affinity = pod.get("affinity")
    node = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution") if node else None
    terms = required.get("nodeSelectorTerms") if isinstance(required, dict) else None
    hosts: list[str] = []
    for term in terms if isinstance(terms, list) else []:
        exprs = term.get("matchExpressions") if isinstance(term, dict) else None
        found = [
            e.get("values")
            for e in (exprs if isinstance(exprs, list) else [])
            if isinstance(e, dict) and e.get("key") == HOSTNAME_LEVEL and e.get("operator") == "In"
        ]
        if not found or not isinstance(found[0], list):
            return ()  # a term that allows other hosts: not pinned
        hosts += [h for h in found[0] if isinstance(h, str) and h not in hosts]
    return tuple(hosts)


def workload_items(workloads: Any) -> list[tuple[str, Any]]:
    """(path, item): a List's items, a JSON array's elements, or one Workload (an object with no
    `items`, of kind Workload or of no kind)."""
    return _items_of(workloads, "Workload", "kubectl get workloads -A -o json")


def job_hosts(w: Workload) -> dict[str, int] | None:
    """GPUs per host from the topology assignments of every GPU pod set (or the one host its
    pods are pinned to), or None."""
    out: dict[str, int] = {}
    counts = w.counts()
    for ps in w.podsets:
        if not ps.gpus or not counts[ps.name]:
            continue
        asg = (w.assignments or {}).get(ps.name)
        hosts = asg.hosts if asg is not None else None
        if hosts is None and len(ps.pinned) == 1:  # every pod pinned to one host
            hosts = {ps.pinned[0]: counts[ps.name]}
        if hosts is None:
            return None
        for host, pods in hosts.items():
            out[host] = out.get(host, 0) + pods * ps.gpus
    return out or None
