"""`import kueue`: Kueue's Workloads become an instance, around the cluster file.

The input is the parsed JSON or YAML (`read_workloads`) of `kubectl get workloads -A -o json`
(or `-o yaml`): a `List` of
`kueue.x-k8s.io/v1beta1` (or `v1beta2`) `Workload` objects. A single Workload object, or a JSON
array of them (the `items` of such a List), is read the same way.

| Kueue field | instance field |
| --- | --- |
| `metadata.namespace` + `/` + `metadata.name` | `id` (`team-a/job-train-5f2c1`; FORMAT.md allows any non-empty id, and Kubernetes names hold no `/`, so it is kept as is; no namespace: `default`, noted) |
| sum over `spec.podSets[]` of `count` x the pod's GPUs | `gpus` (a pod's GPUs: the sum over its containers of `resources.requests` of `nvidia.com/gpu` and `amd.com/gpu`, or `limits` when there is no request, or the largest init container's when that is more, as Kubernetes counts a pod's request; quantities `"8"`, `8`, `"1k"` are whole numbers; an admitted pod set counts the pods Kueue admitted; a `resourceUsage` of the GPU resources that differs from the requests is noted, and the requests stand, since the kubelet allocates what pods request) |
| `status.admission.podSetAssignments[].flavors` (the GPU resource's ResourceFlavor) | `pools` of an admitted workload: the pool whose `flavors` lists it in the cluster file |
| annotation `horizon-opt/pools: "h100,a100"` | `pools` of a pending workload; else the pools of the flavors that admitted workloads of the same LocalQueue (`metadata.namespace`, `spec.queueName`) hold; else every pool (both noted) |
| annotation `horizon-opt/duration: "6h"` | `duration`, the same on every pool (`90m`, `6h`, `1.5h`, `2d`) |
| `spec.maximumExecutionTimeSeconds` - `status.accumulatedPastExexcutionTimeSeconds` (v1beta2: `accumulatedPastExecutionTimeSeconds`) | `duration` without the annotation (seconds, rounded up to whole minutes): Kueue deactivates the workload after that much admitted time |
| `spec.podSets[].template.spec.activeDeadlineSeconds` (the largest) | `duration` without either: a pod's time limit |
| the `default_duration` argument (`"4h"`) | `duration` without any of these (noted) |
| `spec.priority` (int32, from the WorkloadPriorityClass or the pod PriorityClass; absent: 0) | `priority`: `p + 1` for `p >= 0` (at most 1,000,000, noted when capped), `1 / (1 - p)` to 12 significant digits for `p < 0` (-1 -> 0.5, -5 -> 0.166666666667): positive and strictly increasing up to the cap, so Kueue's order is kept, the same on every snapshot |
| `metadata.creationTimestamp` | `release` (ISO-8601) |
| annotation `horizon-opt/deadline: "2026-12-02T06:00:00Z"` | `deadline`; none without it |
| annotation `horizon-opt/kind: training` | `kind`; `other` without it |
| condition `Admitted` True (and not `Evicted` True) | `placed`: running on its flavor's pool from the condition's `lastTransitionTime`, until that plus `duration`; on the hosts of a topology assignment (`kubernetes.io/hostname`; v1beta1 `domains` or v1beta2 `slices`, importers/topology.py) named in `pools[].node_names`, one placed part per host when the placement rule cannot hold its GPUs per node (importers/parts.py), else on the lowest nodes of the pool that have room (noted: Kueue does not record nodes) |
| condition `Finished` True, `spec.active: false`, or `metadata.deletionTimestamp` set | left out (noted) |
| conditions `Evicted`, `Preempted` True, `QuotaReserved` False with reason `Inadmissible`, `QuotaReserved` True without `Admitted` (admission checks pending: then on the reserved flavor's pool) | a pending job (not placed), noted with the condition's reason and message |

The annotations are read on the Workload's `metadata.annotations`, then on its pod sets'
`template.metadata.annotations` (Kueue copies a Job's pod template there, so annotating the Job's
pod template is enough).

A running job's times are clipped to the horizon (noted): a start before it is placed from slot 0,
an end after it is placed at the horizon's end, and an expected end that has already passed (the
workload is still admitted) becomes one slot after `now`.

FORMAT.md's placement rule (a gang of at most G GPUs on one node, a larger one on whole nodes of G
GPUs) decides the pools: a pool whose nodes cannot hold one of the pods, or on which the gang
breaks the rule, is not allowed (noted); when no pool is left, the gang is rounded up to whole
nodes of the pool that wastes the fewest GPUs (noted). Pods whose GPUs do not divide G may not fill
whole nodes in Kubernetes (noted).

Malformed input raises InputError, one line per workload, naming the JSON path
(`workloads.json: items[2].spec.podSets[0].count: expected an integer, got '3'`).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from horizon_opt.errors import InputError, InstanceError
from horizon_opt.importers.cluster import (
    ClusterFile,
    ClusterPool,
    horizon_start,
    instance_document,
)
from horizon_opt.importers.kube import Bad as _Bad
from horizon_opt.importers.kube import at as _at
from horizon_opt.importers.kube import bool_at as _bool_at
from horizon_opt.importers.kube import int_at as _int_at
from horizon_opt.importers.kube import list_at as _list_at
from horizon_opt.importers.kube import object_at as _object_at
from horizon_opt.importers.kube import object_of as _object
from horizon_opt.importers.kube import read_objects
from horizon_opt.importers.kube import str_at as _str_at
from horizon_opt.importers.kube import str_map_at as _str_map_at
from horizon_opt.importers.kube import timestamp as _timestamp
from horizon_opt.importers.kube import what as _what
from horizon_opt.importers.parts import holds_as_one_gang, part_id, split_note
from horizon_opt.importers.payload import kueue_version_notes
from horizon_opt.importers.result import Imported, Note, gpu_indices
from horizon_opt.importers.topology import HOSTNAME_LEVEL, topology_hosts
from horizon_opt.instance import duration_minutes
from horizon_opt.spec import JOB_KINDS, MAX_PRIORITY, MAX_SLOTS, show
from horizon_opt.times import iso

GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")
DURATION_ANNOTATION = "horizon-opt/duration"
DEADLINE_ANNOTATION = "horizon-opt/deadline"
POOLS_ANNOTATION = "horizon-opt/pools"
KIND_ANNOTATION = "horizon-opt/kind"

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
        return _gpu_quantity(value, path)
    except _Bad as exc:
        raise InputError([str(exc)]) from None


def _gpu_quantity(value: Any, path: str) -> int:
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


# -- the Workload, parsed ----------------------------------------------------------------------


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
class _Workload:
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
                total += _gpu_quantity(requests[name], _at(_at(rpath, "requests"), name))
            elif limits.get(name) is not None:
                total += _gpu_quantity(limits[name], _at(_at(rpath, "limits"), name))
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


def _parse(item: Any, index: int, path: str, resources: Sequence[str]) -> _Workload:
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
    priority = _int_at(spec, "priority", spath, lo=-(2**31), hi=_INT32)
    active = _bool_at(spec, "active", spath)
    max_exec = _int_at(spec, "maximumExecutionTimeSeconds", spath, lo=0, hi=_INT32)
    queue = _str_at(spec, "queueName", spath) or None

    status = _object_at(item, "status", path)
    stpath = _at(path, "status")
    accumulated = 0
    for key in ("accumulatedPastExexcutionTimeSeconds", "accumulatedPastExecutionTimeSeconds"):
        accumulated = _int_at(status, key, stpath, lo=0, hi=_INT32) or accumulated
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
    assignments: dict[str, _Assignment] | None = None
    if status.get("admission") is not None:
        admission = _object_at(status, "admission", stpath)
        apath = _at(stpath, "admission")
        assignments = {}
        for a, raw in enumerate(_list_at(admission, "podSetAssignments", apath, required=True)):
            aspath = f"{_at(apath, 'podSetAssignments')}[{a}]"
            asg = _object(raw, aspath)
            a_name = _str_at(asg, "name", aspath) or "main"
            if a_name not in names:
                raise _Bad(_at(aspath, "name"), f"no pod set {a_name!r} in spec.podSets")
            upath = _at(aspath, "resourceUsage")
            usage = _object_at(asg, "resourceUsage", aspath)
            charged = [_gpu_quantity(usage[r], _at(upath, r)) for r in resources if r in usage]
            assignments[a_name] = _Assignment(
                _str_map_at(asg, "flavors", aspath),
                _int_at(asg, "count", aspath, lo=0, hi=_INT32),
                topology_hosts(asg.get("topologyAssignment"), _at(aspath, "topologyAssignment")),
                sum(charged) if charged else None,
            )
    return _Workload(
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
    )


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


def _items(workloads: Any) -> list[tuple[str, Any]]:
    """(path, item): a List's items, a JSON array's elements, or one Workload (an object with no
    `items`, of kind Workload or of no kind)."""
    if isinstance(workloads, list):
        return [(f"[{i}]", w) for i, w in enumerate(workloads)]
    if isinstance(workloads, dict) and "items" in workloads:
        items = workloads["items"]
        if items is None:
            return []
        if not isinstance(items, list):
            raise _Bad("items", f"expected a list, got {_what(items)}")
        return [(f"items[{i}]", w) for i, w in enumerate(items)]
    if isinstance(workloads, dict) and workloads.get("kind", "Workload") == "Workload":
        return [("", workloads)]
    got = (
        f"an object of kind {_what(workloads.get('kind'))}"
        if isinstance(workloads, dict)
        else _what(workloads)
    )
    raise _Bad(
        "(top level)",
        "expected a Workload, a List of Workloads (`kubectl get workloads -A -o json`) or a JSON "
        f"array of them, got {got}",
    )


# -- mapping -----------------------------------------------------------------------------------


def kueue_priority(priority: int) -> float:
    """The instance priority of a Kueue priority (int32, may be zero or negative): `p + 1` for
    `p >= 0`, capped at 1,000,000, and `1 / (1 - p)` below, to 12 significant digits: positive,
    1 at 0, and strictly increasing up to 999,999 (the whole int32 range below), so Kueue's
    order is kept."""
    if priority >= 0:
        return float(min(priority + 1, MAX_PRIORITY))
    return float(f"{1 / (1 - priority):.12g}")


def _duration_text(minutes: int) -> str:
    if minutes % 1440 == 0:
        return f"{minutes // 1440}d"
    if minutes % 60 == 0:
        return f"{minutes // 60}h"
    return f"{minutes}m"


def _rule(gpus: int, pool: ClusterPool) -> bool:
    """FORMAT.md's placement rule on `pool`."""
    g = pool.gpus_per_node
    return gpus <= g or (gpus % g == 0 and gpus // g <= pool.nodes)


@dataclass(frozen=True)
class _Gang:
    gpus: int
    pools: list[ClusterPool]
    notes: list[str]


def _gang(total: int, sizes: set[int], candidates: list[ClusterPool]) -> _Gang:
    """The gang's GPUs and the candidate pools that can place it (see the module's text)."""
    biggest = max(sizes)
    fit = [p for p in candidates if biggest <= p.gpus_per_node]
    notes: list[str] = []
    small = [p.name for p in candidates if p not in fit]
    pods = "pods of " + "/".join(str(s) for s in sorted(sizes)) + " GPUs"
    exact = [p for p in fit if _rule(total, p)]
    gpus = total
    if exact:
        broken = [p.name for p in fit if p not in exact]
        if small or broken:
            why = []
            if small:
                why.append(f"{', '.join(small)}: a pod of {biggest} GPUs fits no node")
            if broken:
                why.append(
                    f"{', '.join(broken)}: a gang of {total} GPUs is neither one node's nor whole "
                    "nodes' (placement rule)"
                )
            notes.append(f"not allowed on {'; '.join(why)}")
        pools = exact
        odd = sorted(
            {s for s in sizes for p in pools if total > p.gpus_per_node and p.gpus_per_node % s}
        )
        if odd:
            notes.append(
                f"pods of {'/'.join(map(str, odd))} GPUs may not fill whole nodes of "
                f"{'/'.join(str(p.gpus_per_node) for p in pools)} GPUs: the plan holds whole nodes"
            )
    else:
        rounded = sorted(
            (math.ceil(total / p.gpus_per_node) * p.gpus_per_node, k)
            for k, p in enumerate(fit)
            if math.ceil(total / p.gpus_per_node) <= p.nodes
        )
        if not rounded:
            where = ", ".join(
                f"{p.name} has {p.nodes} nodes of {p.gpus_per_node}" for p in candidates
            )
            return _Gang(total, [], [f"a gang of {total} GPUs ({pods}) fits no pool ({where})"])
        gpus = rounded[0][0]
        pools = [p for p in fit if _rule(gpus, p)]
        nodes = " or ".join(f"{gpus // p.gpus_per_node} whole nodes of {p.name}" for p in pools)
        notes.append(
            f"a gang of {total} GPUs ({pods}) fits no pool under the placement rule (at most one "
            f"node's GPUs, or whole nodes): planned as {gpus} GPUs, {nodes}"
        )
    return _Gang(gpus, pools, notes)


class _Clock:
    """Slots of the horizon around the snapshot."""

    def __init__(self, cluster: ClusterFile, snapshot: datetime) -> None:
        self.snapshot = snapshot
        self.start = horizon_start(cluster, snapshot)
        self.step = timedelta(minutes=cluster.horizon.slot_minutes)
        self.slots = cluster.horizon.slots
        self.now = self.up(snapshot)

    def down(self, when: datetime) -> int:
        return math.floor((when - self.start) / self.step + 1e-9)

    def up(self, when: datetime) -> int:
        return math.ceil((when - self.start) / self.step - 1e-9)

    def time(self, slot: int) -> str:
        return iso(self.start + slot * self.step)

    def of(self, value: int | str, round_up: bool) -> int | None:
        """A slot of an outage's time field (slot or timestamp), None when unreadable."""
        if isinstance(value, int):
            return value
        try:
            when = _timestamp(value, "")
        except _Bad:
            return None
        return self.up(when) if round_up else self.down(when)


class _Nodes:
    """Which nodes of each pool running jobs hold, to place the ones Kueue gives no nodes for."""

    def __init__(self, cluster: ClusterFile, clock: _Clock) -> None:
        self.cluster = cluster
        self.used: dict[str, int] = {}
        self.down: dict[str, list[tuple[int, int]]] = {}
        for o in cluster.outages:
            a, b = clock.of(o.start, False), clock.of(o.end, True)
            if a is not None and b is not None:
                self.down.setdefault(o.node, []).append((a, b))

    def free(self, node: str, pool: ClusterPool, start: int, end: int) -> int:
        if any(a < end and start < b for a, b in self.down.get(node, [])):
            return 0
        return pool.gpus_per_node - self.used.get(node, 0)

    def take(self, nodes: Mapping[str, int]) -> None:
        for node, gpus in nodes.items():
            self.used[node] = self.used.get(node, 0) + gpus

    def lowest(self, pool: ClusterPool, gpus: int, start: int, end: int) -> dict[str, int] | None:
        """The lowest node with room for `gpus`, or the lowest whole free nodes for more."""
        g = pool.gpus_per_node
        names = [f"{pool.name}-{i}" for i in range(pool.nodes)]
        if gpus <= g:
            node = next((n for n in names if self.free(n, pool, start, end) >= gpus), None)
            return None if node is None else {node: gpus}
        whole = [n for n in names if self.free(n, pool, start, end) == g][: gpus // g]
        return {n: g for n in whole} if len(whole) == gpus // g else None

    def given(
        self, hosts: Mapping[str, int], pool: ClusterPool, gpus: int, start: int, end: int
    ) -> tuple[dict[str, int] | None, str]:
        """The nodes of a topology assignment (host -> GPUs), or None and why not."""
        names = self.cluster.host_nodes()
        unknown = sorted(h for h in hosts if h not in names)
        if unknown:
            return None, f"host(s) {', '.join(unknown)} are not in the cluster file's node_names"
        nodes = {names[h]: n for h, n in hosts.items() if n}
        other = sorted(n for n in nodes if n.rsplit("-", 1)[0] != pool.name)
        if other:
            return None, f"node(s) {', '.join(other)} are not of pool {pool.name}"
        g = pool.gpus_per_node
        if sum(nodes.values()) != gpus and holds_as_one_gang(
            nodes, {n: pool.name for n in nodes}, pool.nodes, g
        ):
            spread = ", ".join(f"{n}: {k}" for n, k in sorted(nodes.items()))
            return None, f"it holds {spread} GPUs, not the {gpus} of its gang"
        full = [n for n, k in nodes.items() if self.free(n, pool, start, end) < k]
        if full:
            return None, f"node(s) {', '.join(sorted(full))} are down or have no room left for it"
        return nodes, ""


@dataclass
class _Running:
    w: _Workload
    job: dict[str, Any]
    pool: ClusterPool
    start: int
    end: int


def read_workloads(path: str | os.PathLike[str]) -> Any:
    """The parsed content of `kubectl get workloads -A -o json` or `-o yaml` (a List, a bare
    array, one Workload, or several YAML documents); InputError names the file."""
    return read_objects(path, "kubectl get workloads -A -o json or -o yaml output")


def import_kueue(
    workloads: Any,
    cluster: ClusterFile,
    *,
    name: str = "kueue",
    snapshot: datetime | None = None,
    default_duration: str = "4h",
    gpu_resources: Sequence[str] = GPU_RESOURCES,
    source: str = "workloads.json",
) -> Imported:
    """The instance of Kueue's Workloads around `cluster`, as of `snapshot` (default: now).

    `workloads`: parsed `kubectl get workloads -A -o json` (a List), its `items` array, or one
    Workload. `default_duration`: the run time of a workload that states none (`90m`, `4h`,
    `2d`). `gpu_resources`: the extended resources counted as GPUs. `source`: the file name that
    error messages start with. Malformed input raises InputError naming the JSON path; what the
    mapping could not carry over as is becomes a Note (the module's text gives the mapping).
    """
    default_minutes = duration_minutes(default_duration)
    if default_minutes is None or default_minutes <= 0:
        raise InputError([f"default_duration: not a duration: {show(default_duration)} (e.g. 4h)"])
    given_snapshot = snapshot is not None
    if snapshot is None:
        snapshot = datetime.now(UTC).replace(microsecond=0)
    elif snapshot.tzinfo is None:
        snapshot = snapshot.replace(tzinfo=UTC)
    clock = _Clock(cluster, snapshot)
    if not 0 <= clock.now < clock.slots:
        raise InputError(
            [
                f"snapshot {iso(snapshot)} is outside the cluster file's horizon "
                f"({clock.time(0)} to {clock.time(clock.slots)})"
            ]
        )
    try:
        items = _items(workloads)
    except _Bad as exc:
        raise InputError([f"{source}: {exc}"]) from None
    parsed: list[_Workload] = []
    problems: list[str] = []
    for index, (path, item) in enumerate(items):
        try:
            parsed.append(_parse(item, index, path, tuple(gpu_resources)))
        except _Bad as exc:
            problems.append(f"{source}: {exc}")
    if problems:
        raise InputError(problems)
    importer = _Importer(cluster, clock, math.ceil(default_minutes - 1e-9), tuple(gpu_resources))
    if not given_snapshot:
        importer.note(None, "snapshot", f"not given: the time of the import, {iso(snapshot)}")
    for note in kueue_version_notes(item for _, item in items):
        importer.note(None, "apiVersion", note)
    return importer.run(parsed, name, source)


class _Importer:
    def __init__(
        self,
        cluster: ClusterFile,
        clock: _Clock,
        default_minutes: int,
        gpu_resources: tuple[str, ...],
    ) -> None:
        self.cluster = cluster
        self.clock = clock
        self.default_minutes = default_minutes
        self.gpu_resources = gpu_resources
        self.by_name = {p.name: p for p in cluster.pools}
        self.flavor_pool: dict[str, ClusterPool] = {}
        for pool in cluster.pools:
            for flavor in pool.flavors:
                self.flavor_pool.setdefault(flavor, pool)
        self.queue_pools: dict[tuple[str, str], list[str]] = {}
        self.split: dict[str, dict[str, str]] = {}  # held per node: id -> node -> host
        self.notes: list[tuple[int, Note]] = []

    def note(self, w: _Workload | None, where: str, problem: str) -> None:
        self.notes.append((w.index if w else -1, Note(w.id if w else "", where, problem)))

    # -- the whole payload ---------------------------------------------------------------------

    def run(self, parsed: list[_Workload], name: str, source: str) -> Imported:
        for w in parsed:
            if w.assignments is not None and w.queue is not None:
                for pool in self.assigned(w)[0]:
                    seen = self.queue_pools.setdefault((w.namespace or "default", w.queue), [])
                    if pool.name not in seen:
                        seen.append(pool.name)
        ids: set[str] = set()
        jobs: list[tuple[_Workload, dict[str, Any]]] = []
        running: list[_Running] = []
        problems = []
        for w in parsed:
            if w.id in ids:
                self.note(w, "metadata.name", "appears twice in the input: the first is kept")
                continue
            ids.add(w.id)
            try:
                mapped = self.job(w)
            except _Bad as exc:
                problems.append(f"{source}: {exc}")
                continue
            if mapped is None:
                continue
            job, placed = mapped
            jobs.append((w, job))
            if placed is not None:
                running.append(placed)
        if problems:
            raise InputError(problems)
        counts = self.place(running)
        per_node = {
            f"{p.name}-{i}": p.gpus_per_node for p in self.cluster.pools for i in range(p.nodes)
        }
        order = [(r.w.id, counts[r.w.id]) for r in running if r.w.id in counts]
        indices, index_notes = gpu_indices(order, {}, per_node)
        self.notes.extend((-1, n) for n in index_notes)
        kept = []
        for w, job in jobs:
            if "placed" in job:
                if w.id not in counts:
                    continue
                job["placed"]["gpus"] = indices[w.id]
            kept += [(w, j) for j in self.parts(w.id, job)]
        document = instance_document(self.cluster, name, self.clock.snapshot, [j for _, j in kept])
        notes = tuple(n for _, n in sorted(self.notes, key=lambda x: x[0]))
        result = Imported(document, notes)
        try:
            result.compile()
        except InstanceError as exc:
            raise InputError([_workload_problem(source, p, kept) for p in exc.problems]) from None
        return result

    def parts(self, job_id: str, job: dict[str, Any]) -> list[dict[str, Any]]:
        """The job, or its parts when its topology assignment holds GPUs per node that the
        placement rule cannot hold as one gang (importers/parts.py)."""
        hosts = self.split.get(job_id)
        if hosts is None:
            return [job]
        out = []
        for node, idx in job["placed"]["gpus"].items():
            pool = node.rsplit("-", 1)[0]
            placed = {**job["placed"], "pool": pool, "gpus": {node: idx}}
            out.append(
                {**job, "id": part_id(job_id, hosts[node]), "gpus": len(idx), "pools": [pool]}
                | {"placed": placed}
            )
        return out

    def place(self, running: list[_Running]) -> dict[str, dict[str, int]]:
        """Nodes of running jobs (id -> node -> GPUs): a topology assignment's hosts first, then
        the others, earliest start first, on the lowest nodes of their pool with room."""
        nodes = _Nodes(self.cluster, self.clock)
        counts: dict[str, dict[str, int]] = {}
        later: list[tuple[_Running, str]] = []
        for r in running:
            hosts = _job_hosts(r.w)
            if hosts is None:
                later.append((r, ""))
                continue
            given, why = nodes.given(hosts, r.pool, r.job["gpus"], r.start, r.end)
            if given is None:
                later.append((r, f"its topology assignment is not used: {why}; "))
                continue
            nodes.take(given)
            counts[r.w.id] = given
            if not holds_as_one_gang(
                given, {n: r.pool.name for n in given}, r.pool.nodes, r.pool.gpus_per_node
            ):
                names = {v: k for k, v in self.cluster.host_nodes().items()}
                held = {names[n]: k for n, k in given.items()}
                per_node = {names[n]: r.pool.gpus_per_node for n in given}
                self.note(r.w, "status.admission", split_note(held, per_node))
                self.split[r.w.id] = {n: names[n] for n in given}
        for r, why in sorted(later, key=lambda x: (x[0].start, x[0].w.index)):
            lowest = nodes.lowest(r.pool, r.job["gpus"], r.start, r.end)
            if lowest is None:
                self.note(
                    r.w,
                    "status.admission",
                    f"{why}admitted on pool {r.pool.name}, where the running jobs leave no room "
                    f"for a gang of {r.job['gpus']} GPUs: left out (its GPUs look free to the "
                    "planner)",
                )
                continue
            nodes.take(lowest)
            counts[r.w.id] = lowest
            self.note(
                r.w,
                "status.admission",
                f"{why}node placement assumed (Kueue does not record nodes): on "
                f"{', '.join(lowest)}, the lowest nodes of {r.pool.name} with room",
            )
        return counts

    # -- one workload --------------------------------------------------------------------------

    def assigned(self, w: _Workload) -> tuple[list[ClusterPool], list[str]]:
        """The pools of the flavors Kueue assigned to the pod sets that hold GPUs (most GPUs
        first), and the flavors no pool lists."""
        share: dict[str, int] = {}
        unknown: set[str] = set()
        counts = w.counts()
        for ps in w.podsets:
            asg = (w.assignments or {}).get(ps.name)
            if asg is None or not ps.gpus or not counts[ps.name]:
                continue
            flavor = next((asg.flavors[r] for r in self.gpu_resources if r in asg.flavors), None)
            if flavor is None:  # no flavor for the GPU resource itself: any that names a pool
                flavor = next((f for f in asg.flavors.values() if f in self.flavor_pool), None)
            if flavor is None or flavor not in self.flavor_pool:
                unknown.update(asg.flavors.values() if flavor is None else [flavor])
                continue
            pool = self.flavor_pool[flavor]
            share[pool.name] = share.get(pool.name, 0) + counts[ps.name] * ps.gpus
        order = sorted(share, key=lambda p: -share[p])
        return [self.by_name[p] for p in order], sorted(unknown)

    def job(self, w: _Workload) -> tuple[dict[str, Any], _Running | None] | None:
        """The workload's job (a running one without its GPUs yet), or None with a note."""
        if w.namespace is None:
            self.note(w, "metadata.namespace", "not given: namespace default assumed")
        finished = w.condition("Finished")
        if finished is not None and finished.true:
            self.note(w, "status.conditions.Finished", f"finished ({finished.why()}): left out")
            return None
        if w.deleting is not None:
            self.note(
                w,
                "metadata.deletionTimestamp",
                f"being deleted since {w.deleting}: its pods are stopping: left out",
            )
            return None
        if not w.active:
            self.note(
                w,
                "spec.active",
                "false (deactivated): Kueue admits it only once reactivated: left out",
            )
            return None
        if w.uncounted:
            self.note(
                w,
                "spec.podSets",
                f"asks for {', '.join(w.uncounted)}, not counted as GPUs (counted: "
                f"{', '.join(self.gpu_resources)})",
            )
        counts = w.counts()
        total = sum(counts[ps.name] * ps.gpus for ps in w.podsets)
        if total == 0:
            self.note(
                w, "spec.podSets", f"requests no GPUs ({', '.join(self.gpu_resources)}): left out"
            )
            return None
        for ps in w.podsets:
            given = (w.assignments or {}).get(ps.name)
            if given is not None and given.count is not None and given.count != ps.count:
                self.note(
                    w,
                    f"status.admission.podSetAssignments[{ps.name}].count",
                    f"partially admitted: {given.count} of {ps.count} pods of pod set {ps.name}",
                )
            asked = counts[ps.name] * ps.gpus
            if given is not None and given.usage is not None and given.usage != asked:
                self.note(
                    w,
                    f"status.admission.podSetAssignments[{ps.name}].resourceUsage",
                    f"Kueue charged {given.usage} GPUs to pod set {ps.name}, its pods request "
                    f"{asked}: took the requests (the kubelet allocates what pods request; "
                    "quota accounting can differ)",
                )
        running = w.is_true("Admitted") and not w.is_true("Evicted")
        candidates = self.running_pool(w) if running else self.pending_pools(w)
        if not candidates:
            return None
        sizes = {ps.gpus for ps in w.podsets if ps.gpus and counts[ps.name]}
        gang = _gang(total, sizes, candidates)
        for text in gang.notes:
            self.note(w, "spec.podSets", text if gang.pools else f"{text}: left out")
        if not gang.pools:
            return None
        minutes = self.duration(w)
        job: dict[str, Any] = {
            "id": w.id,
            "kind": self.kind(w),
            "priority": self.priority(w),
            "gpus": gang.gpus,
            "duration": _duration_text(minutes),
            "pools": [p.name for p in gang.pools],
        }
        left = (self.clock.slots - self.clock.now) * self.cluster.horizon.slot_minutes
        if not running and minutes > left:
            self.note(
                w,
                "duration",
                f"{_duration_text(minutes)} is longer than what is left of the horizon after "
                f"now ({_duration_text(left)}): it cannot end within it, so no plan starts it "
                "(lengthen horizon.slots)",
            )
        pinned = sorted({h for ps in w.podsets for h in ps.pinned})
        if pinned and not running:
            self.note(
                w,
                "spec.podSets",
                f"pinned to {', '.join(pinned)} by node affinity: planned on its pool, where the "
                "plan may choose other nodes (an instance does not pin a job to a node)",
            )
        return self.times(w, job, running, gang.pools[0])

    def kind(self, w: _Workload) -> str:
        kind = w.annotations.get(KIND_ANNOTATION)
        if kind is None:
            return "other"
        if kind.strip() not in JOB_KINDS:
            raise _Bad(
                w.annotation_paths[KIND_ANNOTATION],
                f"expected one of {', '.join(JOB_KINDS)}, got {show(kind)}",
            )
        return kind.strip()

    def priority(self, w: _Workload) -> float:
        weight = kueue_priority(w.priority)
        if w.priority + 1 > MAX_PRIORITY:
            self.note(
                w,
                "spec.priority",
                f"{w.priority:,} is above {MAX_PRIORITY - 1:,.0f}: priority capped at "
                f"{MAX_PRIORITY:,.0f} (higher Kueue priorities tie)",
            )
        return int(weight) if weight.is_integer() else weight

    def duration(self, w: _Workload) -> int:
        """Minutes: the annotation, the time Kueue still allows, a pod's deadline, the default."""
        text = w.annotations.get(DURATION_ANNOTATION)
        deadlines = [ps.deadline for ps in w.podsets if ps.deadline is not None]
        seconds: float
        if text is not None:
            minutes = duration_minutes(text)
            if minutes is None or minutes <= 0:
                raise _Bad(
                    w.annotation_paths[DURATION_ANNOTATION],
                    f"not a duration: {show(text)} (use e.g. 90m, 6h, 1.5h, 2d)",
                )
            seconds = minutes * 60
        elif w.max_exec is not None:
            seconds = w.max_exec - w.accumulated
            if seconds <= 0:
                self.note(
                    w,
                    "spec.maximumExecutionTimeSeconds",
                    f"{w.max_exec} s, all used in earlier admissions ({w.accumulated} s): Kueue "
                    "deactivates it once admitted; 1 minute assumed",
                )
                seconds = 60
        elif deadlines:
            seconds = max(deadlines)
        else:
            self.note(
                w,
                _at("metadata.annotations", DURATION_ANNOTATION),
                "no run time (no such annotation, maximumExecutionTimeSeconds or "
                f"activeDeadlineSeconds): {_duration_text(self.default_minutes)} assumed",
            )
            return self.default_minutes
        whole = math.ceil(seconds / 60 - 1e-9)
        longest = MAX_SLOTS * self.cluster.horizon.slot_minutes
        if whole > longest:
            self.note(
                w,
                "duration",
                f"{_duration_text(whole)} is more than {MAX_SLOTS:,} slots: capped there",
            )
            return longest
        return whole

    def running_pool(self, w: _Workload) -> list[ClusterPool]:
        pools, unknown = self.assigned(w)
        if not pools:
            self.note(
                w,
                "status.admission.podSetAssignments",
                f"admitted on flavor(s) {', '.join(unknown) or '(none)'}, which no pool of the "
                "cluster file lists (pools[].flavors): left out (its GPUs look free to the "
                "planner)",
            )
        elif len(pools) > 1:
            self.note(
                w,
                "status.admission.podSetAssignments",
                f"its pod sets run on pools {', '.join(p.name for p in pools)}, an instance job "
                f"on one: placed on {pools[0].name}, which holds most of its GPUs",
            )
        return pools[:1]

    def pending_pools(self, w: _Workload) -> list[ClusterPool]:
        evicted, preempted = w.condition("Evicted"), w.condition("Preempted")
        reserved = w.condition("QuotaReserved")
        if evicted is not None and evicted.true:
            extra = f"; preempted: {preempted.reason}" if preempted and preempted.true else ""
            self.note(w, "status.conditions.Evicted", f"evicted ({evicted.why()}{extra}): pending")
        elif preempted is not None and preempted.true:
            self.note(w, "status.conditions.Preempted", f"preempted ({preempted.why()}): pending")
        if reserved is not None and not reserved.true and reserved.reason == "Inadmissible":
            self.note(
                w,
                "status.conditions.QuotaReserved",
                f"inadmissible ({reserved.message or 'no message'}): pending, though Kueue will "
                "not admit it until that is fixed",
            )
        chosen = w.annotations.get(POOLS_ANNOTATION)
        if chosen is not None:
            names = [n for n in re.split(r"[\s,;]+", chosen) if n]
            bad = [n for n in names if n not in self.by_name]
            if bad or not names:
                raise _Bad(
                    w.annotation_paths[POOLS_ANNOTATION],
                    f"unknown pool(s) {', '.join(map(repr, bad))} (pools: "
                    f"{', '.join(self.by_name)})"
                    if bad
                    else "names no pool",
                )
            return [self.by_name[n] for n in dict.fromkeys(names)]
        pools, unknown = self.assigned(w)
        if unknown:
            self.note(
                w,
                "status.admission.podSetAssignments",
                f"quota reserved on flavor(s) {', '.join(unknown)}, which no pool of the cluster "
                "file lists (pools[].flavors): not used",
            )
        if pools:
            self.note(
                w,
                "status.conditions.QuotaReserved",
                f"quota reserved on {', '.join(p.name for p in pools)}, not admitted yet "
                "(admission checks pending): pending there",
            )
            return pools
        queue = (w.namespace or "default", w.queue or "")
        if queue in self.queue_pools:
            seen = self.queue_pools[queue]
            self.note(
                w,
                "spec.queueName",
                f"pending: on {', '.join(seen)}, the pools that admitted workloads of queue "
                f"{'/'.join(queue)} hold",
            )
            return [self.by_name[n] for n in seen]
        self.note(
            w,
            "spec.queueName",
            "pending, no flavor known for its queue: allowed on every pool (set the "
            f"{POOLS_ANNOTATION} annotation to choose)",
        )
        return list(self.cluster.pools)

    def times(
        self, w: _Workload, job: dict[str, Any], running: bool, pool: ClusterPool
    ) -> tuple[dict[str, Any], _Running | None] | None:
        """Release, deadline and, when running, `placed` (without GPUs)."""
        clock = self.clock
        release = w.created
        if release is None:
            self.note(w, "metadata.creationTimestamp", "not given: released now")
        placed = None
        where: dict[str, Any] | None = None
        if running:
            admitted = w.condition("Admitted")
            assert admitted is not None
            if admitted.time is None:
                raise _Bad(f"{admitted.path}.lastTransitionTime", "required field is missing")
            start = _timestamp(admitted.time, f"{admitted.path}.lastTransitionTime")
            if start > clock.snapshot:
                self.note(
                    w,
                    "status.conditions.Admitted",
                    f"admitted at {iso(start)}, after the snapshot: started at the snapshot",
                )
                start = clock.snapshot
            if release is not None and release > start:
                self.note(
                    w,
                    "metadata.creationTimestamp",
                    f"{iso(release)} is after its admission: released at its admission",
                )
                release = start
            first, start_text = clock.down(start), iso(start)
            if first < 0:
                self.note(
                    w,
                    "status.conditions.Admitted",
                    f"start: {iso(start)} is before the horizon: placed from {clock.time(0)}",
                )
                first, start_text = 0, clock.time(0)
            expected = start + timedelta(minutes=duration_minutes(job["duration"]) or 0)
            last = clock.up(expected)
            if expected <= clock.snapshot:
                last = clock.now + 1
                self.note(
                    w,
                    "duration",
                    f"expected to end at {iso(expected)} ({job['duration']} after its "
                    f"admission), before the snapshot, yet still admitted: assumed to end at "
                    f"{clock.time(last)}",
                )
            elif last <= clock.now:
                self.note(
                    w,
                    "duration",
                    f"expected to end at {iso(expected)} ({job['duration']} after its "
                    f"admission), after the snapshot but by now ({clock.time(clock.now)}), where "
                    "the plan starts: its GPUs are free then; left out",
                )
                return None
            elif last > clock.slots:
                self.note(
                    w,
                    "duration",
                    f"end: {iso(expected)} is after the horizon: placed until "
                    f"{clock.time(clock.slots)}",
                )
                last = clock.slots
            where = {"pool": pool.name, "start": start_text, "end": clock.time(last)}
            placed = _Running(w, job, pool, first, last)
        elif release is not None and clock.up(release) >= clock.slots:
            self.note(
                w, "metadata.creationTimestamp", f"{iso(release)} is after the horizon: left out"
            )
            return None
        if release is not None:
            job["release"] = iso(release)
        text = w.annotations.get(DEADLINE_ANNOTATION)
        if text is not None:
            deadline = _timestamp(text, w.annotation_paths[DEADLINE_ANNOTATION])
            low = max(clock.up(release), 0) if release is not None else clock.now
            if clock.down(deadline) < low:
                self.note(
                    w,
                    _at("metadata.annotations", DEADLINE_ANNOTATION),
                    f"{iso(deadline)} is before its release: set to "
                    f"{clock.time(low)} (it cannot be on time)",
                )
                job["deadline"] = clock.time(low)
            else:
                job["deadline"] = iso(deadline)
        if where is not None:
            job["placed"] = where
        return job, placed


def _job_hosts(w: _Workload) -> dict[str, int] | None:
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


_JOB_PATH = re.compile(r"^jobs\[(\d+)\](.*)$", re.DOTALL)


def _workload_problem(
    source: str, problem: str, kept: Sequence[tuple[_Workload, dict[str, Any]]]
) -> str:
    """A compile problem said against the workload it comes from."""
    where, _, message = problem.partition(": ")
    m = _JOB_PATH.match(where)
    if m is None or int(m.group(1)) >= len(kept):
        return f"{source}: {problem}"
    w = kept[int(m.group(1))][0]
    field = m.group(2).lstrip(".") or "job"
    return f"{source}: {w.path or '(top level)'} ({w.id}): instance field {field}: {message}"
